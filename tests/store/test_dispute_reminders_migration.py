"""Migration 0037: disputes.reminded_at, added and dropped cleanly on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0036(request, tmp_path, revision_templates):
    """A new database migrated up to 0036, before dispute reminders were kept."""
    yield from revision_templates.database_at("0036", request.param, tmp_path)


def _columns(url: str) -> dict:
    """The disputes table's columns (name: nullable)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {c["name"]: c["nullable"] for c in inspect(conn).get_columns("disputes")}
    finally:
        engine.dispose()


def test_the_migration_adds_a_nullable_column_and_its_downgrade_drops_it(database_at_0036):
    before = _columns(database_at_0036)
    assert "reminded_at" not in before

    command.upgrade(alembic_config(database_at_0036), "0037")
    assert _columns(database_at_0036) == {**before, "reminded_at": True}

    command.downgrade(alembic_config(database_at_0036), "0036")
    assert _columns(database_at_0036) == before
