"""The two databases every storage test runs on: a SQLite file and a fresh PostgreSQL database."""
from __future__ import annotations

import os
import uuid

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


def create_postgres_database() -> tuple[str, callable]:
    """A new, empty database on the PostgreSQL server; returns its URL and a dropper."""
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
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url, drop


def database_at(revision: str, backend: str, tmp_path):
    """A new database of `backend` ("sqlite" or "postgres") migrated up to `revision` and no
    further, for a test of the next migration; yields its URL and drops it afterwards.

    Use as a parametrized fixture's body: `yield from database_at("0011", request.param, tmp_path)`.
    """
    if backend == "sqlite":
        url, drop = f"sqlite:///{tmp_path / f'at-{revision}.db'}", lambda: None
    else:
        url, drop = create_postgres_database()
    command.upgrade(alembic_config(url), revision)
    yield url
    drop()
