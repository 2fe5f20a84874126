"""Two web nodes and two workers on one PostgreSQL, driven together, as separate machines would run them.

Concurrent refunds of shared payments (some settled by the workers) and creates go
to both gunicorn nodes at once. Afterwards: no 5xx, no payment refunded beyond its
amount, the refunds the clients were told about are exactly the ones stored, and
every webhook event reached the receiver exactly once.
"""
from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal

import pytest
import requests
from sqlalchemy import func, select

from app.cli import upgrade_database
from app.config import Config
from app.payments.money import from_minor
from app.store.db import make_engine
from app.store.encryption import SecretBox
from app.store.merchants import create_merchant
from app.store.unit_of_work import UnitOfWork
from app.store.tables import transactions, webhook_events
from tests.conftest import payment_body
from tests.support.databases import create_postgres_database
from tests.support.servers import free_port, start_gunicorn, start_worker, stop_process_group
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.postgres

PAYMENTS = 6
PAYMENT_AMOUNT = Decimal("100.00")
ASYNC_ORIGINAL = "SBX-REFUND-ASYNC"  # its refunds stay Pending until a worker settles them
REFUND_AMOUNTS = (Decimal("5.00"), Decimal("10.00"), Decimal("15.00"), Decimal("25.00"))
REFUNDS = 120
CREATES = 40
CLIENT_THREADS = 24
SETTLE_WITHIN = 30.0


@dataclass
class Cluster:
    """The database, the two nodes' URLs, the receiver every webhook goes to, the merchant's token."""

    database_url: str
    nodes: list[str]
    receiver: Receiver
    merchant_id: int
    token: str


@pytest.fixture(scope="module")
def cluster():
    """Fresh database; two gunicorn nodes (2 workers each) and two workers; a merchant whose
    webhooks all go to one loopback receiver (its sandbox fixtures' callback too)."""
    database_url, drop = create_postgres_database()
    upgrade_database(database_url)
    receiver = Receiver().start()
    engine = make_engine(database_url)
    with UnitOfWork(engine, box=SecretBox(Config().PAYDESK_ENCRYPTION_KEY)) as uow:
        merchant = create_merchant(uow, f"Scale-out {uuid.uuid4().hex[:8]}", receiver.url)
        uow.commit()
    engine.dispose()
    processes = []
    try:
        nodes = []
        for _ in range(2):
            port = free_port()
            processes.append(start_gunicorn(database_url, port, workers=2))
            nodes.append(f"http://127.0.0.1:{port}")
        processes += [start_worker(database_url) for _ in range(2)]
        yield Cluster(database_url, nodes, receiver, merchant.merchant_id, merchant.sandbox_token)
    finally:
        for process in processes:
            stop_process_group(process)
        receiver.stop()
        drop()


def post(cluster: Cluster, node: int, path: str, body: dict) -> requests.Response:
    return requests.post(f"{cluster.nodes[node % 2]}/api/v1{path}", json=body, timeout=60,
                         headers={"Authorization": f"Bearer {cluster.token}"})


def captured_payments(cluster: Cluster) -> list[str]:
    """Payments created on alternating nodes and moved to Captured through the sandbox helper."""
    numbers = []
    for node in range(PAYMENTS):
        created = post(cluster, node, "/transactions",
                       payment_body(amount=PAYMENT_AMOUNT, callbackUrl=cluster.receiver.url))
        assert created.status_code == 200, created.text
        tx_no = created.json()["transactionId"]
        moved = post(cluster, node + 1, f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
        assert moved.status_code == 200, moved.text
        numbers.append(tx_no)
    return numbers


def wait_until_settled(cluster: Cluster, engine) -> None:
    """No refund Pending and no webhook event undelivered any more (the workers' part)."""
    deadline = time.monotonic() + SETTLE_WITHIN
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            pending = conn.execute(select(func.count()).where(
                transactions.c.merchant_id == cluster.merchant_id, transactions.c.status == "Pending",
                transactions.c.kind == "refund")).scalar_one()
            undelivered = conn.execute(select(func.count()).where(
                webhook_events.c.merchant_id == cluster.merchant_id,
                webhook_events.c.state != "delivered")).scalar_one()
        if pending == 0 and undelivered == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"{pending} refunds Pending, {undelivered} webhooks undelivered "
                         f"after {SETTLE_WITHIN} s")


def test_two_nodes_and_two_workers_never_over_refund_and_deliver_every_webhook_once(cluster):
    originals = captured_payments(cluster) + [ASYNC_ORIGINAL]
    chooser = random.Random(5)
    jobs = [("refund", chooser.choice(originals), chooser.choice(REFUND_AMOUNTS)) for _ in range(REFUNDS)]
    jobs += [("create", None, None)] * CREATES
    chooser.shuffle(jobs)

    def send(numbered_job):
        node, (kind, tx_no, amount) = numbered_job
        if kind == "create":
            return kind, None, None, post(cluster, node, "/transactions",
                                          payment_body(callbackUrl=cluster.receiver.url))
        return kind, tx_no, amount, post(cluster, node, "/transactions/refund",
                                         {"txNo": tx_no, "amount": amount})

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        answers = list(pool.map(send, enumerate(jobs)))  # alternate nodes, all at once
    refunded = [(tx_no, amount, answer) for kind, tx_no, amount, answer in answers if kind == "refund"]
    created = [answer for kind, *_, answer in answers if kind == "create"]

    statuses = Counter(answer.status_code for *_, answer in refunded)
    assert set(statuses) <= {200, 400}, statuses
    assert statuses[200] and statuses[400]  # there was contention for the same money
    for _, _, answer in refunded:
        if answer.status_code == 400:
            assert answer.json()["error"].startswith((
                "Refund amount", "Transaction must be in Captured status")), answer.text
    assert Counter(a.status_code for a in created) == {200: CREATES}

    engine = make_engine(cluster.database_url)
    try:
        wait_until_settled(cluster, engine)
        with engine.connect() as conn:
            stored = conn.execute(
                select(transactions.c.id, transactions.c.tx_no, transactions.c.status,
                       transactions.c.amount_minor, transactions.c.currency, transactions.c.original_id)
                .where(transactions.c.merchant_id == cluster.merchant_id, transactions.c.mode == "sandbox")
            ).all()
            events = conn.execute(select(webhook_events.c.webhook_id).where(
                webhook_events.c.merchant_id == cluster.merchant_id)).scalars().all()
    finally:
        engine.dispose()

    by_no = {row.tx_no: row for row in stored}
    answered = Counter()
    told = []
    for tx_no, amount, answer in refunded:
        if answer.status_code == 200:
            answered[tx_no] += amount
            told.append(answer.json()["refundTxNo"])
    refund_rows = [row for row in stored if row.original_id is not None]
    # Every refund a client was told about is stored exactly once, and nothing else was stored.
    assert Counter(told) == Counter(row.tx_no for row in refund_rows)
    assert all(row.status == "Captured" for row in refund_rows)
    for tx_no in originals:
        held = sum((from_minor(row.amount_minor, row.currency) for row in refund_rows
                    if row.original_id == by_no[tx_no].id), Decimal(0))
        assert held == answered[tx_no], tx_no  # the totals add up
        original_amount = from_minor(by_no[tx_no].amount_minor, by_no[tx_no].currency)
        assert held <= original_amount, tx_no  # never refunded beyond the amount
        assert by_no[tx_no].status == ("Refunded" if held == original_amount else "Captured"), tx_no
    for answer in created:
        assert by_no[answer.json()["transactionId"]].status == "Pending"

    # Webhooks: one event per capture and per refund, each delivered exactly once.
    assert len(events) == PAYMENTS + len(refund_rows)
    delivered = Counter(_header(r.headers, "webhook-id") for r in cluster.receiver.received)
    assert set(delivered) == set(events)
    assert set(delivered.values()) == {1}, [i for i, n in delivered.items() if n > 1]


def _header(headers: dict, name: str) -> str:
    return next(value for key, value in headers.items() if key.lower() == name)
