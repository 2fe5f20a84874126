"""The two databases every storage test runs on: a SQLite file and a fresh PostgreSQL database."""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.cli import alembic_config

DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def postgres_admin_url() -> str:
    """TEST_POSTGRES_URL, or the local server."""
    return os.environ.get("TEST_POSTGRES_URL") or DEFAULT_POSTGRES


def postgres_required() -> bool:
    """REQUIRE_POSTGRES=1 (CI) turns an unreachable PostgreSQL into a failure, never a skip."""
    return os.environ.get("REQUIRE_POSTGRES") == "1"


def create_postgres_database(template: str | None = None) -> tuple[str, callable]:
    """A new database on the PostgreSQL server, empty or a copy of the database `template`
    (which nobody may be connected to); returns its URL and a dropper."""
    admin_url = postgres_admin_url()
    try:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as error:  # noqa: BLE001 - any failure to reach the server
        message = f"PostgreSQL not reachable at {admin_url}: {error}"
        if postgres_required():
            pytest.fail(message)
        pytest.skip(message)
    name = f"paydesk_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        copy = f' TEMPLATE "{template}"' if template else ""
        conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url, drop


class RevisionTemplates:
    """Databases migrated up to a revision, built once per test process and copied for each test
    (PostgreSQL: CREATE DATABASE ... TEMPLATE; SQLite: a copy of the file): migrating from
    scratch for every test of a migration took most of their time."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.built: dict[tuple[str, str], str] = {}  # (revision, backend) -> SQLite path or database name
        self.drops: list[callable] = []

    def _template(self, revision: str, backend: str) -> str:
        key = (revision, backend)
        if key not in self.built:
            if backend == "sqlite":
                path = self.folder / f"at-{revision}.db"
                url, template = f"sqlite:///{path}", str(path)
            else:
                url, drop = create_postgres_database()
                self.drops.append(drop)
                template = make_url(url).database
            command.upgrade(alembic_config(url), revision)  # alembic's env.py disposes its engine
            self.built[key] = template
        return self.built[key]

    def database_at(self, revision: str, backend: str, tmp_path):
        """A new database of `backend` ("sqlite" or "postgres") migrated up to `revision` and no
        further, for a test of the next migration; yields its URL and drops it afterwards.

        Use as a parametrized fixture's body:
        `yield from revision_templates.database_at("0011", request.param, tmp_path)`.
        """
        template = self._template(revision, backend)
        if backend == "sqlite":
            path = tmp_path / f"at-{revision}.db"
            shutil.copyfile(template, path)
            url, drop = f"sqlite:///{path}", lambda: None
        else:
            url, drop = create_postgres_database(template=template)
        yield url
        drop()

    def drop_all(self) -> None:
        """Drop the PostgreSQL templates (SQLite's go with the temporary folder)."""
        for drop in self.drops:
            drop()
