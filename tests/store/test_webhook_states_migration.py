"""Migration 0036: the partial index of webhook events not delivered, which serves the Webhooks
page's pending and failed filters newest first; and its downgrade, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, select, text

from app.cli import alembic_config, upgrade_database
from app.store.tables import webhook_events

INDEX = "ix_webhook_events_not_delivered"


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0035(request, tmp_path, revision_templates):
    """A new database migrated up to 0035."""
    yield from revision_templates.database_at("0035", request.param, tmp_path)


def _index_names(engine) -> set[str]:
    sql = ("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_events'"
           if engine.dialect.name == "sqlite" else "SELECT indexname FROM pg_indexes WHERE tablename = 'webhook_events'")
    with engine.connect() as conn:
        return set(conn.execute(text(sql)).scalars())


def _plan(conn, query) -> str:
    sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    if conn.dialect.name == "sqlite":
        return " ".join(str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
    conn.exec_driver_sql("ANALYZE webhook_events")
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # an empty table: ask which index serves it
    return "\n".join(conn.exec_driver_sql("EXPLAIN " + sql).scalars())


def test_the_not_delivered_index_serves_the_state_filter_and_goes_on_downgrade(database_at_0035):
    engine = create_engine(database_at_0035)
    try:
        assert INDEX not in _index_names(engine)
        upgrade_database(database_at_0035)
        assert INDEX in _index_names(engine)
        with engine.begin() as conn:
            # The page's query for failed deliveries, as app.webhooks.log.list_deliveries builds it.
            query = (select(webhook_events.c.id)
                     .where(webhook_events.c.merchant_id == 1, webhook_events.c.mode == "sandbox",
                            webhook_events.c.state == "failed", webhook_events.c.state != "delivered")
                     .order_by(webhook_events.c.created_at.desc(), webhook_events.c.id.desc()).limit(51))
            plan = _plan(conn, query)
            assert INDEX in plan, plan

        command.downgrade(alembic_config(database_at_0035), "0035")
        assert INDEX not in _index_names(engine)
    finally:
        engine.dispose()
