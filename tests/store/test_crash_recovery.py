"""A web process killed once the refund is committed, before any provider answered, loses nothing."""
from __future__ import annotations

import signal
import threading
import time
from datetime import timedelta

import pytest
import requests
from sqlalchemy import select

from app.payments import settlement
from app.store.tables import transactions
from tests.store.test_worker import deps_at
from tests.support.servers import free_port, start_gunicorn, stop_process_group


def refunds_of(app, merchant, tx_no: str):
    originals = transactions.alias()
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(
            select(transactions.c.tx_no, transactions.c.status, transactions.c.provider_transaction_id)
            .join(originals, originals.c.id == transactions.c.original_id)
            .where(originals.c.tx_no == tx_no, originals.c.merchant_id == merchant.merchant_id)
        ).all()


@pytest.fixture
def slow_provider_server(database_url):
    """Paydesk under gunicorn whose provider takes a minute to answer a refund (a provider behind
    a network: its requests hand the refund to a worker, and this one has none)."""
    port = free_port()
    process = start_gunicorn(database_url, port, workers=1, SIMULATOR_LATENCY="60")
    yield f"http://127.0.0.1:{port}", process
    stop_process_group(process, signal.SIGKILL)


def test_killed_after_the_refunds_commit_leaves_a_pending_refund_the_worker_completes(
        slow_provider_server, sandbox, captured_payment, app, merchant, monkeypatch):
    url, process = slow_provider_server
    tx_no = captured_payment(100)
    body = {"txNo": tx_no, "amount": 100}
    headers = {"Authorization": f"Bearer {merchant.sandbox_token}", "Idempotency-Key": "crash-1"}

    def send():
        try:
            requests.post(f"{url}/api/v1/transactions/refund", json=body, headers=headers, timeout=90)
        except requests.ConnectionError:
            pass  # the server dies under it

    client = threading.Thread(target=send, daemon=True)
    client.start()
    deadline = time.monotonic() + 20
    while not refunds_of(app, merchant, tx_no):
        assert time.monotonic() < deadline, "refund was never committed"
        time.sleep(0.05)
    stop_process_group(process, signal.SIGKILL)  # committed, provider not yet answered
    client.join(10)

    [(refund_no, status, provider_id)] = refunds_of(app, merchant, tx_no)
    assert (status, provider_id) == ("Pending", None)
    assert sandbox.status(tx_no)["Status"] == "Captured"

    # The client retries with its key: answered from the refund the dead request made.
    monkeypatch.setitem(app.config, "IDEMPOTENCY_ABANDONED_AFTER", 0)
    retry = sandbox.post("/transactions/refund", body, headers={"Idempotency-Key": "crash-1"})
    assert retry.status_code == 200
    assert (retry.json()["refundTxNo"], retry.json()["status"]) == (refund_no, "Pending")

    # Its provider call was due at once: the next worker makes it.
    while settlement.run_due_provider_checks(deps_at(app, timedelta(0))):
        pass
    assert sandbox.status(refund_no)["Status"] == "Captured"
    assert sandbox.status(tx_no)["Status"] == "Refunded"
    assert len(refunds_of(app, merchant, tx_no)) == 1
    again = sandbox.post("/transactions/refund", body, headers={"Idempotency-Key": "crash-1"})
    assert again.json()["refundTxNo"] == refund_no
