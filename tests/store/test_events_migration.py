"""Migration 0029 adds events, webhook endpoints (with their secrets and receiver checks) and the
deliveries' event_id and endpoint_id, keeping the deliveries already there; its downgrade removes
them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, select, text

from app.cli import alembic_config, upgrade_database
from app.store.tables import (
    events,
    webhook_endpoint_secrets,
    webhook_endpoints,
    webhook_events,
    webhook_receiver_checks,
)

NEW_TABLES = {"events", "webhook_endpoints", "webhook_endpoint_secrets", "webhook_receiver_checks"}


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0028(request, tmp_path, revision_templates):
    """A new database migrated up to 0028, before events."""
    yield from revision_templates.database_at("0028", request.param, tmp_path)


def test_the_migration_adds_events_and_endpoints_and_its_downgrade_removes_them(database_at_0028):
    engine = create_engine(database_at_0028)
    try:
        with engine.begin() as conn:  # a delivery made before events existed
            conn.execute(text("INSERT INTO merchants (id, name, inbox_key, created_at) "
                              "VALUES (1, 'M', 'k', CURRENT_TIMESTAMP)"))
        upgrade_database(database_at_0028)
        found = inspect(engine)
        for table in (events, webhook_endpoints, webhook_endpoint_secrets, webhook_receiver_checks):
            assert {c["name"] for c in found.get_columns(table.name)} == {c.name for c in table.columns}
        assert {c["name"] for c in found.get_columns("webhook_events")} == {c.name for c in webhook_events.columns}
        with engine.begin() as conn:
            assert conn.execute(select(events.c.id)).all() == []
        command.downgrade(alembic_config(database_at_0028), "0028")
        after = inspect(engine)
        assert NEW_TABLES.isdisjoint(after.get_table_names())
        assert {"event_id", "endpoint_id"}.isdisjoint(c["name"] for c in after.get_columns("webhook_events"))
        upgrade_database(database_at_0028)  # and up again
        assert NEW_TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
