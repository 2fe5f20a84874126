"""Migration 0032 adds the notification tables, and its downgrade removes them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database
from app.store.tables import notification_choices, notification_events, notifications

TABLES = {table.name: table for table in (notification_choices, notification_events, notifications)}


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0031(request, tmp_path, revision_templates):
    """A new database migrated up to 0031, before notifications."""
    yield from revision_templates.database_at("0031", request.param, tmp_path)


def test_the_migration_adds_the_notification_tables_and_its_downgrade_removes_them(database_at_0031):
    engine = create_engine(database_at_0031)
    try:
        upgrade_database(database_at_0031)
        found = inspect(engine)
        for name, table in TABLES.items():
            assert {c["name"] for c in found.get_columns(name)} == {c.name for c in table.columns}
        command.downgrade(alembic_config(database_at_0031), "0031")
        assert not set(TABLES) & set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
