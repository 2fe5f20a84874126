"""Migration 0036: the partial index of webhook events not delivered, which serves the Webhooks
page's pending and failed filters newest first; and its downgrade, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, select

from app.cli import alembic_config, upgrade_database
from app.store.tables import webhook_events
from tests.support.query_plans import index_names, plan

INDEX = "ix_webhook_events_not_delivered"


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0035(request, tmp_path, revision_templates):
    """A new database migrated up to 0035."""
    yield from revision_templates.database_at("0035", request.param, tmp_path)


def test_the_not_delivered_index_serves_the_state_filter_and_goes_on_downgrade(database_at_0035):
    engine = create_engine(database_at_0035)
    try:
        assert INDEX not in index_names(engine, "webhook_events")
        upgrade_database(database_at_0035)
        assert INDEX in index_names(engine, "webhook_events")
        with engine.begin() as conn:
            # The page's query for failed deliveries, as app.webhooks.log.list_deliveries builds it.
            query = (select(webhook_events.c.id)
                     .where(webhook_events.c.merchant_id == 1, webhook_events.c.mode == "sandbox",
                            webhook_events.c.state == "failed", webhook_events.c.state != "delivered")
                     .order_by(webhook_events.c.created_at.desc(), webhook_events.c.id.desc()).limit(51))
            found = plan(conn, query, "webhook_events")
            assert INDEX in found, found

        command.downgrade(alembic_config(database_at_0035), "0035")
        assert INDEX not in index_names(engine, "webhook_events")
    finally:
        engine.dispose()
