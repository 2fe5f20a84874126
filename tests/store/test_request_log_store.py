"""The request log's rows on both databases: a batch written (COPY on PostgreSQL), each row with
the transactions its request touched, found by either of them."""
from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from app.api.request_log import RequestLogWriter
from app.payments.model import Caller, Mode
from app.store import request_log as log_rows
from app.store.db import make_engine
from app.store.unit_of_work import UnitOfWork
from app.store.tables import request_log
from app.util import utcnow


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request, tmp_path, revision_templates):
    """A database of this test's own, migrated to the head."""
    for url in revision_templates.database_at("head", request.param, tmp_path):
        engine = make_engine(url)
        yield engine
        engine.dispose()


def _row(merchant_id: int, at, tx_no=None, other_tx_no=None, body: str | None = '{"amount": 1}') -> dict:
    return {"merchant_id": merchant_id, "mode": "sandbox", "token_id": None, "token_label": "Sandbox token",
            "method": "POST", "path": "/api/v1/transactions/refund", "status": 200, "duration_ms": 3,
            "request_id": uuid.uuid4().hex, "idempotency_key": None, "request_body": body,
            "response_body": '{"status": "Captured"}', "at": at, "tx_no": tx_no, "other_tx_no": other_tx_no}


def test_a_batch_is_written_whole_and_found_by_each_transaction_it_touched(engine):
    merchant_id = 900_000 + uuid.uuid4().int % 100_000  # the log keeps no key on merchants
    caller = Caller(merchant_id, Mode.SANDBOX, "test")
    now = utcnow()
    rows = [_row(merchant_id, now, "PAY-A", "RFD-A"), _row(merchant_id, now, body=None),
            _row(merchant_id, now, "PAY-B", body='{"note": "tab\\there, quote \\" and back\\\\slash"}')]
    with engine.begin() as conn:
        log_rows.write_batch(conn, rows)
    with engine.connect() as conn:
        stored = conn.execute(select(request_log).where(request_log.c.merchant_id == merchant_id)
                              .order_by(request_log.c.id)).all()
        assert [row.request_id for row in stored] == [row["request_id"] for row in rows]
        assert [row.request_body for row in stored] == [row["request_body"] for row in rows]
        assert {row.at for row in stored} == {now}
        assert [log_rows.transactions_of(row) for row in stored] == [["PAY-A", "RFD-A"], [], ["PAY-B"]]
        for tx_no, expected in (("PAY-A", [0]), ("RFD-A", [0]), ("PAY-B", [2]), ("PAY-C", [])):
            found = log_rows.search(conn, caller, log_rows.LogFilter(tx_no=tx_no))
            assert [row.request_id for row in found] == [rows[n]["request_id"] for n in expected]
            assert log_rows.count_for_transaction(conn, caller, tx_no) == len(expected)
        other_mode = Caller(merchant_id, Mode.LIVE, "test")
        assert log_rows.count_for_transaction(conn, other_mode, "PAY-A") == 0


def test_the_writer_commits_a_batch_without_waiting_for_the_disk(engine):
    """The log's commit does not wait for the WAL's flush, which the creates and refunds beside it
    wait on (a database crash may lose the last batch, as a process's crash loses its queue)."""
    committed_with = []

    class NotingUnit(UnitOfWork):
        def commit(self):
            if self.is_postgres:  # asked of the driver: a statement through SQLAlchemy would relax it
                committed_with.append(self.conn.connection.driver_connection.execute(
                    "SHOW synchronous_commit").fetchone()[0])
            super().commit()

    merchant_id = 900_000 + uuid.uuid4().int % 100_000
    noted = {"merchant_id": merchant_id, "mode": "sandbox", "token_id": None, "token_label": "Sandbox token",
             "method": "GET", "path": "/api/v1/transactions/PAY-A", "query": None, "status": 200, "duration_ms": 2,
             "request_id": "req-relaxed", "idempotency_key": None, "at": utcnow(), "path_tx_no": "PAY-A",
             "request_raw": None, "response_raw": b'{"Status": "Captured"}'}
    RequestLogWriter(lambda: NotingUnit(engine), flush_seconds=0, batch=10).put(noted)
    assert committed_with == (["off"] if engine.dialect.name == "postgresql" else [])
    with engine.connect() as conn:
        assert conn.execute(select(request_log.c.request_id).where(
            request_log.c.merchant_id == merchant_id)).scalars().all() == ["req-relaxed"]
