"""Migration 0021 adds the settlement tables, and its downgrade removes them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database

PARENT = "0020"  # the migration's down_revision
TABLES = {"settlements", "settlement_lines", "settlement_fetches"}


@pytest.fixture(params=["sqlite", "postgres"])
def database_before(request, tmp_path, revision_templates):
    """A new database migrated up to the settlement migration's parent."""
    yield from revision_templates.database_at(PARENT, request.param, tmp_path)


def test_the_migration_adds_the_settlement_tables_and_its_downgrade_removes_them(database_before):
    engine = create_engine(database_before)
    try:
        upgrade_database(database_before)
        found = inspect(engine)
        assert TABLES <= set(found.get_table_names())
        assert [u["column_names"] for u in found.get_unique_constraints("settlements")] == [
            ["merchant_id", "mode", "provider", "provider_settlement_id"]]
        command.downgrade(alembic_config(database_before), PARENT)
        assert TABLES & set(inspect(engine).get_table_names()) == set()
        upgrade_database(database_before)
        assert TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
