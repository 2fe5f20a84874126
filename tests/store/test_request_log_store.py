"""The request log's rows on both databases: a batch written (COPY on PostgreSQL) with the
transactions each request touched."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.store import request_log as log_rows
from app.store.db import make_engine
from app.store.tables import request_log, request_log_tx
from app.util import utcnow


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request, tmp_path, revision_templates):
    """A database of this test's own, migrated to the head."""
    for url in revision_templates.database_at("head", request.param, tmp_path):
        engine = make_engine(url)
        yield engine
        engine.dispose()


def _row(merchant_id: int, at, tx_nos=(), body: str | None = '{"amount": 1}') -> dict:
    return {"merchant_id": merchant_id, "mode": "sandbox", "token_id": None, "token_label": "Sandbox token",
            "method": "POST", "path": "/api/v1/transactions/refund", "status": 200, "duration_ms": 3,
            "request_id": uuid.uuid4().hex, "idempotency_key": None, "request_body": body,
            "response_body": '{"status": "Captured"}', "at": at, "tx_nos": list(tx_nos)}


def _merchant_rows(conn, merchant_id: int) -> list:
    return conn.execute(select(request_log.c.request_id, request_log.c.at, request_log.c.request_body)
                        .where(request_log.c.merchant_id == merchant_id).order_by(request_log.c.id)).all()


def _touched(conn, merchant_id: int) -> set[str]:
    return set(conn.execute(select(request_log_tx.c.tx_no).where(request_log_tx.c.merchant_id == merchant_id))
               .scalars())


def test_a_batch_is_written_whole_with_the_transactions_each_request_touched(engine):
    merchant_id = 900_000 + uuid.uuid4().int % 100_000  # the log keeps no key on merchants
    now = utcnow()
    rows = [_row(merchant_id, now, ["PAY-A", "RFD-A"]), _row(merchant_id, now, [], body=None),
            _row(merchant_id, now, ["PAY-B"], body='{"note": "tab\\there, quote \\" and back\\\\slash"}')]
    with engine.begin() as conn:
        log_rows.write_batch(conn, rows)
    with engine.connect() as conn:
        stored = _merchant_rows(conn, merchant_id)
        assert [row.request_id for row in stored] == [row["request_id"] for row in rows]
        assert [row.request_body for row in stored] == [row["request_body"] for row in rows]
        assert {row.at for row in stored} == {now}
        assert _touched(conn, merchant_id) == {"PAY-A", "RFD-A", "PAY-B"}
        first_id = conn.execute(select(func.min(request_log.c.id)).where(
            request_log.c.merchant_id == merchant_id)).scalar_one()
        assert log_rows.transactions_of(conn, first_id) == ["PAY-A", "RFD-A"]
