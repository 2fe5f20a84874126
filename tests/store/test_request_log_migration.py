"""Migration 0034 drops the request log's foreign keys, keeping the rows;
its downgrade puts them back, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from app.cli import alembic_config, upgrade_database
from app.util import utcnow


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0033(request, tmp_path, revision_templates):
    """A new database migrated up to 0033."""
    yield from revision_templates.database_at("0033", request.param, tmp_path)


def _keys_and_indexes(engine) -> tuple[set, set]:
    engine.dispose()  # a pooled SQLite connection may answer PRAGMAs from the schema before the migration
    found = inspect(engine)
    keys = {key["name"] for table in ("request_log", "request_log_tx") for key in found.get_foreign_keys(table)}
    return keys, {index["name"] for index in found.get_indexes("request_log")}


def test_the_keys_go_and_come_back_with_the_rows_kept(database_at_0033):
    engine = create_engine(database_at_0033)
    try:
        with engine.begin() as conn:
            merchant_id = conn.execute(text(
                "INSERT INTO merchants (name, inbox_key, created_at) VALUES ('Log', 'k-log', :now) RETURNING id"),
                {"now": utcnow().replace(tzinfo=None)}).scalar_one()
            log_id = conn.execute(text(
                "INSERT INTO request_log (merchant_id, mode, token_label, method, path, status, duration_ms, "
                "request_id, at) VALUES (:merchant_id, 'live', 'Live token', 'GET', '/api/v1/transactions', "
                "200, 2, 'r-1', :now) RETURNING id"),
                {"merchant_id": merchant_id, "now": utcnow().replace(tzinfo=None)}).scalar_one()
            conn.execute(text("INSERT INTO request_log_tx (request_log_id, merchant_id, mode, tx_no) "
                              "VALUES (:id, :merchant_id, 'live', 'PAY-1')"), {"id": log_id, "merchant_id": merchant_id})
        keys = {"fk_request_log_merchant_id_merchants", "fk_request_log_tx_request_log_id_request_log"}
        assert _keys_and_indexes(engine)[0] == keys

        upgrade_database(database_at_0033)
        found_keys, indexes = _keys_and_indexes(engine)
        assert found_keys == set()
        assert {"ix_request_log_listing", "ix_request_log_token", "ix_request_log_at"} <= indexes
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM request_log_tx WHERE tx_no = 'PAY-1'")).scalar() == 1

        command.downgrade(alembic_config(database_at_0033), "0033")
        found_keys, indexes = _keys_and_indexes(engine)
        assert found_keys == keys
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM request_log WHERE id = :id"), {"id": log_id}).scalar() == 1
    finally:
        engine.dispose()
