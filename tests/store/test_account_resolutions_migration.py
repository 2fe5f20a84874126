"""Migration 0026 adds account_resolutions, and its downgrade removes it again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0025(request, tmp_path, revision_templates):
    """A new database migrated up to 0025, before account names were stored."""
    yield from revision_templates.database_at("0025", request.param, tmp_path)


def test_the_migration_adds_account_resolutions_and_its_downgrade_removes_them(database_at_0025):
    engine = create_engine(database_at_0025)
    try:
        upgrade_database(database_at_0025)
        found = inspect(engine)
        assert {c["name"] for c in found.get_columns("account_resolutions")} == {
            "id", "provider_account_id", "bank_code", "account_number", "holder_name", "refusal",
            "last_error", "requested_at", "due_at", "failed_tries", "answered_at"}
        assert [i["column_names"] for i in found.get_indexes("account_resolutions")
                if i["name"].startswith("ix_")] == [["due_at"]]
        assert [u["column_names"] for u in found.get_unique_constraints("account_resolutions")] == [
            ["provider_account_id", "bank_code", "account_number"]]
        command.downgrade(alembic_config(database_at_0025), "0025")
        assert "account_resolutions" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()
