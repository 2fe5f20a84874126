"""Migration 0019 adds bank_lists, and its downgrade removes it again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0018(request, tmp_path, revision_templates):
    """A new database migrated up to 0018, before bank lists were stored."""
    yield from revision_templates.database_at("0018", request.param, tmp_path)


def test_the_migration_adds_bank_lists_and_its_downgrade_removes_them(database_at_0018):
    engine = create_engine(database_at_0018)
    try:
        upgrade_database(database_at_0018)
        found = inspect(engine)
        assert {c["name"] for c in found.get_columns("bank_lists")} == {
            "id", "provider_account_id", "currency", "country", "banks", "fetched_at", "refresh_due_at",
            "failed_fetches", "last_error"}
        assert [u["column_names"] for u in found.get_unique_constraints("bank_lists")] == [
            ["provider_account_id", "currency", "country"]]
        command.downgrade(alembic_config(database_at_0018), "0018")
        assert "bank_lists" not in inspect(engine).get_table_names()
        upgrade_database(database_at_0018)  # and up again, cleanly
        assert "bank_lists" in inspect(engine).get_table_names()
    finally:
        engine.dispose()
