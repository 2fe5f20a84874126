"""Migration 0020 adds disputes, their history and transactions.dispute_lost_minor (0 for the
payments already stored), and its downgrade removes them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0019(request, tmp_path, revision_templates):
    """A new database migrated up to 0019, before disputes were stored."""
    yield from revision_templates.database_at("0019", request.param, tmp_path)


def test_the_migration_adds_disputes_and_its_downgrade_removes_them(database_at_0019):
    engine = create_engine(database_at_0019)
    try:
        upgrade_database(database_at_0019)
        found = inspect(engine)
        assert {"disputes", "dispute_history"} <= set(found.get_table_names())
        assert sorted(u["column_names"] for u in found.get_unique_constraints("disputes")) == [
            ["dispute_no"], ["merchant_id", "mode", "provider", "provider_dispute_id"]]
        lost = next(c for c in found.get_columns("transactions") if c["name"] == "dispute_lost_minor")
        assert lost["nullable"] is False
        command.downgrade(alembic_config(database_at_0019), "0019")
        found = inspect(engine)
        assert not {"disputes", "dispute_history"} & set(found.get_table_names())
        assert "dispute_lost_minor" not in {c["name"] for c in found.get_columns("transactions")}
        upgrade_database(database_at_0019)  # and up again, cleanly
        assert "disputes" in inspect(engine).get_table_names()
    finally:
        engine.dispose()
