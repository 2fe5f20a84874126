"""Migration 0020 adds disputes, their history and transactions.dispute_lost_minor (0 for the
payments already stored), and its downgrade removes them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from app.cli import alembic_config
from tests.store.test_cancel_requested_migration import TRIGGERS


def _triggers(engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text(TRIGGERS[engine.dialect.name])).scalars())


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0019(request, tmp_path, revision_templates):
    """A new database migrated up to 0019, before disputes were stored."""
    yield from revision_templates.database_at("0019", request.param, tmp_path)


def test_the_migration_adds_disputes_and_its_downgrade_removes_them(database_at_0019):
    engine = create_engine(database_at_0019)
    try:
        triggers_before = _triggers(engine)
        assert triggers_before  # the daily totals' at least: they must survive both ways
        command.upgrade(alembic_config(database_at_0019), "0020")  # (later ones add triggers of their own)
        found = inspect(engine)
        assert {"disputes", "dispute_history"} <= set(found.get_table_names())
        assert sorted(u["column_names"] for u in found.get_unique_constraints("disputes")) == [
            ["dispute_no"], ["merchant_id", "mode", "provider", "provider_dispute_id"]]
        lost = next(c for c in found.get_columns("transactions") if c["name"] == "dispute_lost_minor")
        assert lost["nullable"] is False
        assert _triggers(engine) == triggers_before  # a plain ALTER TABLE, no batch copy
        command.downgrade(alembic_config(database_at_0019), "0019")
        found = inspect(engine)
        assert not {"disputes", "dispute_history"} & set(found.get_table_names())
        assert "dispute_lost_minor" not in {c["name"] for c in found.get_columns("transactions")}
        assert _triggers(engine) == triggers_before
        command.upgrade(alembic_config(database_at_0019), "0020")  # and up again, cleanly
        assert "disputes" in inspect(engine).get_table_names()
    finally:
        engine.dispose()
