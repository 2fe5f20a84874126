"""The worker SIGKILLed in the middle of a 300-row payout batch loses no row and doubles none.

The moment is chosen rather than hoped for: the test holds row 150's batch_rows row locked
(FOR UPDATE), so the worker creates rows 1 to 149, then waits inside row 150's unit of work with
its payout inserted and not committed (the row's move to created is the unit's last write). The
worker is killed right there; its database session then ends without a commit. A new worker
takes the batch over once the dead one's lease lapses and creates rows 150 to 300, each once.
"""
from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
import requests
from sqlalchemy import func, select, text

from app.config import Config
from app.store.encryption import SecretBox
from app.store.merchants import create_merchant
from app.store.tables import batch_rows, batches, transactions
from app.store.unit_of_work import UnitOfWork
from tests.api.test_create_and_status import nuban
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.postgres

ROWS = 300
HELD_ROW = 150  # the row whose unit of work the worker is killed in
ACCOUNT = nuban("058", "012345678")


def wait_until(condition, timeout: float, step: float = 0.02):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)
    return found


def payout_row(reference: str, amount: int) -> dict:
    return {"paymentMethod": "ng-bank-payout", "amount": amount, "currency": "NGN", "bank": "058",
            "holder": "Ada Obi", "accountNumber": ACCOUNT, "reference": reference,
            "email": "ada@example.com"}


def live_workers(deployment) -> list:
    return [p for p in [deployment.worker, *deployment.extra_workers] if p.poll() is None]


def created_rows(conn, batch_id: int) -> int:
    return conn.execute(select(func.count()).select_from(batch_rows).where(
        batch_rows.c.batch_id == batch_id, batch_rows.c.state == "created")).scalar_one()


def blocked_by(conn, holder_pid: int) -> bool:
    """Some session waits on a lock the holder's session holds (the held row's move to created).

    Each look is a transaction of its own: pg_stat_activity is read once per transaction.
    """
    try:
        return conn.execute(text("SELECT count(*) FROM pg_stat_activity "
                                 "WHERE :holder = ANY(pg_blocking_pids(pid))"),
                            {"holder": holder_pid}).scalar_one() > 0
    finally:
        conn.rollback()


@pytest.fixture
def own_receiver():
    """This test's merchant's webhooks, apart: the deployment's receiver is the ledger the other
    fault tests check against their own merchant's outbox, event for event."""
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


def test_a_worker_killed_mid_batch_loses_and_doubles_no_payout(deployment, own_receiver):
    engine = deployment.engine()
    with UnitOfWork(engine, box=SecretBox(Config().PAYDESK_ENCRYPTION_KEY)) as uow:
        merchant = create_merchant(uow, f"Batch faults {uuid.uuid4().hex[:8]}", own_receiver.url)
        uow.commit()
    headers = {"Authorization": f"Bearer {merchant.sandbox_token}"}
    prefix = uuid.uuid4().hex[:8]
    # The merchant's sandbox has fixture transactions of its own: the batch's are by their references.
    of_the_batch = (transactions.c.merchant_id == merchant.merchant_id,
                    transactions.c.reference.like(f"{prefix}-%"))
    # Each row's own amount, so that a row's payout is told from another's by more than its reference.
    sent = [payout_row(f"{prefix}-{n:03}", 100 + n) for n in range(1, ROWS + 1)]

    holder = engine.connect()
    try:
        held = holder.begin()
        holder_pid = holder.execute(text("SELECT pg_backend_pid()")).scalar_one()
        # The batch is stored (201) before a worker may take it; the lock is taken on its row as
        # soon as the batch exists, well before the worker's pass reaches row 150.
        created = requests.post(f"{deployment.url}/api/v1/payouts/batches", json={"rows": sent},
                                headers=headers, timeout=60)
        assert created.status_code == 201, created.text
        public_id = created.json()["id"]
        assert (created.json()["state"], created.json()["validRows"]) == ("running", ROWS)
        batch_id = holder.execute(select(batches.c.id).where(batches.c.public_id == public_id)).scalar_one()
        holder.execute(select(batch_rows.c.id).where(
            batch_rows.c.batch_id == batch_id, batch_rows.c.row_number == HELD_ROW).with_for_update())

        with engine.connect() as watcher:
            wait_until(lambda: blocked_by(watcher, holder_pid), timeout=60)
            assert created_rows(watcher, batch_id) == HELD_ROW - 1  # some rows, not all
            payouts = watcher.execute(select(func.count()).select_from(transactions).where(
                *of_the_batch)).scalar_one()
            assert payouts == HELD_ROW - 1  # row 150's payout is not committed
        victims = live_workers(deployment)
        for victim in victims:
            os.kill(victim.pid, signal.SIGKILL)
        for victim in victims:
            assert victim.wait(10) == -signal.SIGKILL
        held.rollback()  # the dead worker's session goes on, finds its client gone, rolls back
    finally:
        holder.close()

    deployment.replace_worker("worker-after-batch-kill")

    def finished():
        with engine.connect() as conn:
            return conn.execute(select(batches.c.state).where(batches.c.id == batch_id)).scalar_one() == "done"

    wait_until(finished, timeout=90, step=0.5)  # the dead worker's lease (30 s) lapses first
    body = requests.get(f"{deployment.url}/api/v1/payouts/batches/{public_id}", headers=headers,
                        timeout=30).json()
    assert {k: body[k] for k in ("state", "rowCount", "validRows", "invalidRows", "waitingRows",
                                 "createdRows", "failedRows")} == {
        "state": "done", "rowCount": ROWS, "validRows": ROWS, "invalidRows": 0, "waitingRows": 0,
        "createdRows": ROWS, "failedRows": 0}
    assert body["finishedAt"] is not None
    try:
        with engine.connect() as conn:
            made = conn.execute(select(
                transactions.c.reference, transactions.c.tx_no, transactions.c.amount_minor,
                transactions.c.kind, transactions.c.status,
            ).where(*of_the_batch)).all()
    finally:
        engine.dispose()
    references = [payout.reference for payout in made]
    # Exactly one payout per row: none lost (row 150's included), none made twice.
    assert sorted(references) == sorted(row["reference"] for row in sent)
    by_reference = {payout.reference: payout for payout in made}
    assert {payout.kind for payout in made} == {"payout"}
    for row in body["rows"]:
        payout = by_reference[sent[row["row"] - 1]["reference"]]
        assert (row["state"], row["txNo"]) == ("created", payout.tx_no), row
        assert payout.amount_minor == sent[row["row"] - 1]["amount"] * 100  # NGN: kobo
        assert row["status"] == payout.status
    # The simulator answers a sandbox payout in process: each is final or due at its provider.
    assert {payout.status for payout in made} <= {"Captured", "Pending", "Declined"}
