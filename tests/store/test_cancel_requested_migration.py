"""Migration 0018: transactions.cancel_requested_at, added and dropped cleanly on both databases,
the table's triggers kept (SQLite's batch mode would have copied the table without them)."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from app.cli import alembic_config

TRIGGERS = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
    "postgresql": "SELECT DISTINCT trigger_name FROM information_schema.triggers ORDER BY trigger_name",
}


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0017(request, tmp_path, revision_templates):
    """A new database migrated up to 0017, before cancel requests were kept."""
    yield from revision_templates.database_at("0017", request.param, tmp_path)


def _schema(url: str) -> tuple[dict, list[str]]:
    """The transactions table's columns (name: nullable) and the database's triggers."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            columns = {c["name"]: c["nullable"] for c in inspect(conn).get_columns("transactions")}
            triggers = list(conn.execute(text(TRIGGERS[engine.dialect.name])).scalars())
    finally:
        engine.dispose()
    return columns, triggers


def test_the_migration_adds_a_nullable_column_and_its_downgrade_drops_it(database_at_0017):
    columns_before, triggers_before = _schema(database_at_0017)
    assert "cancel_requested_at" not in columns_before
    assert triggers_before  # the daily totals' at least: they must survive both ways

    command.upgrade(alembic_config(database_at_0017), "0018")  # this migration alone, not the head
    columns, triggers = _schema(database_at_0017)
    assert columns == {**columns_before, "cancel_requested_at": True}
    assert triggers == triggers_before

    command.downgrade(alembic_config(database_at_0017), "0017")
    assert _schema(database_at_0017) == (columns_before, triggers_before)
