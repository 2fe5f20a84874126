"""Migration 0034: the transactions each logged request touched move from request_log_tx onto its
row (tx_no, other_tx_no), the foreign keys go, `at` gets a BRIN index on PostgreSQL; and its
downgrade puts request_log_tx back with the same rows, on both databases."""
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


def _inspected(engine):
    engine.dispose()  # a pooled SQLite connection may answer PRAGMAs from the schema before the migration
    return inspect(engine)


def _logged(conn, merchant_id: int, request_id: str, tx_nos: list[str]) -> int:
    log_id = conn.execute(text(
        "INSERT INTO request_log (merchant_id, mode, token_label, method, path, status, duration_ms, "
        "request_id, at) VALUES (:merchant_id, 'live', 'Live token', 'POST', '/api/v1/transactions/refund', "
        "200, 2, :request_id, :now) RETURNING id"),
        {"merchant_id": merchant_id, "request_id": request_id, "now": utcnow().replace(tzinfo=None)}).scalar_one()
    for tx_no in tx_nos:
        conn.execute(text("INSERT INTO request_log_tx (request_log_id, merchant_id, mode, tx_no) "
                          "VALUES (:id, :merchant_id, 'live', :tx_no)"),
                     {"id": log_id, "merchant_id": merchant_id, "tx_no": tx_no})
    return log_id


def _touched(conn, table_has_columns: bool) -> dict:
    if table_has_columns:
        rows = conn.execute(text("SELECT request_id, tx_no, other_tx_no FROM request_log"))
        return {request_id: [t for t in (first, second) if t] for request_id, first, second in rows}
    rows = conn.execute(text("SELECT r.request_id, t.tx_no FROM request_log r JOIN request_log_tx t "
                             "ON t.request_log_id = r.id ORDER BY t.tx_no"))
    found: dict = {}
    for request_id, tx_no in rows:
        found.setdefault(request_id, []).append(tx_no)
    return found


def test_the_touched_transactions_move_onto_the_rows_and_back(database_at_0033):
    engine = create_engine(database_at_0033)
    try:
        with engine.begin() as conn:
            merchant_id = conn.execute(text(
                "INSERT INTO merchants (name, inbox_key, created_at) VALUES ('Log', 'k-log', :now) RETURNING id"),
                {"now": utcnow().replace(tzinfo=None)}).scalar_one()
            _logged(conn, merchant_id, "refund", ["RFD-2", "PAY-1"])
            _logged(conn, merchant_id, "create", ["PAY-3"])
            _logged(conn, merchant_id, "list", [])
        expected = {"refund": ["PAY-1", "RFD-2"], "create": ["PAY-3"]}

        upgrade_database(database_at_0033)
        found = _inspected(engine)
        assert "request_log_tx" not in found.get_table_names()
        assert found.get_foreign_keys("request_log") == []
        with engine.connect() as conn:
            assert _touched(conn, True) == {**expected, "list": []}
            if engine.dialect.name == "postgresql":
                index = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_request_log_at'"))
                assert "USING brin (at)" in index.scalar_one()

        command.downgrade(alembic_config(database_at_0033), "0033")
        found = _inspected(engine)
        assert {key["name"] for key in found.get_foreign_keys("request_log")} == {
            "fk_request_log_merchant_id_merchants"}
        assert "tx_no" not in {column["name"] for column in found.get_columns("request_log")}
        with engine.connect() as conn:
            assert _touched(conn, False) == expected
    finally:
        engine.dispose()
