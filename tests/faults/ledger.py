"""What must hold in the database and at the receiver after any fault, once the worker caught up."""
from __future__ import annotations

import time
from collections import Counter, defaultdict

from sqlalchemy import func, select

from app.store.tables import status_history, transactions, webhook_events


def wait_until_settled(engine, merchant_id: int, receiver, timeout: float) -> None:
    """Until no refund is Pending, every outbox event is delivered and has reached the receiver."""
    deadline = time.monotonic() + timeout
    while True:
        with engine.connect() as conn:
            pending = conn.execute(select(func.count()).where(
                transactions.c.merchant_id == merchant_id, transactions.c.kind == "refund",
                transactions.c.status == "Pending")).scalar_one()
            events = set(conn.execute(select(webhook_events.c.webhook_id).where(
                webhook_events.c.merchant_id == merchant_id,
                webhook_events.c.state == "delivered")).scalars())
            undelivered = conn.execute(select(func.count()).where(
                webhook_events.c.merchant_id == merchant_id,
                webhook_events.c.state != "delivered")).scalar_one()
        missing = events - {received.headers.get("webhook-id") for received in receiver.received}
        if not pending and not undelivered and not missing:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout} s: {pending} refunds Pending, {undelivered} "
                                 f"webhooks undelivered, {len(missing)} delivered but not received")
        time.sleep(0.5)


def assert_consistent(engine, merchant_id: int) -> None:
    """No over-refund; the refund totals on each payment's row equal its refunds; Refunded exactly
    when the Captured refunds make the amount; every status change with its outbox event (the
    move to Refunded has none of its own: the refund's reports it)."""
    with engine.connect() as conn:
        rows = conn.execute(select(transactions).where(
            transactions.c.merchant_id == merchant_id)).all()
        moves = conn.execute(
            select(status_history.c.transaction_id, status_history.c.to_status)
            .join(transactions, transactions.c.id == status_history.c.transaction_id)
            .where(transactions.c.merchant_id == merchant_id,
                   status_history.c.from_status.is_not(None))).all()
        events = conn.execute(select(webhook_events.c.transaction_id, webhook_events.c.event_type)
                              .where(webhook_events.c.merchant_id == merchant_id)).all()
    by_id = {row.id: row for row in rows}
    held = defaultdict(int)  # minor units refunded or being refunded, per original
    captured = defaultdict(int)
    for row in rows:
        if row.kind == "refund" and row.status in ("Pending", "Captured"):
            held[row.original_id] += row.amount_minor
        if row.kind == "refund" and row.status == "Captured":
            captured[row.original_id] += row.amount_minor
    for row in rows:
        if row.kind != "payment":
            continue
        assert held[row.id] <= row.amount_minor, f"{row.tx_no} refunded beyond its amount"
        assert (row.refund_reserved_minor, row.refund_captured_minor) == (held[row.id], captured[row.id]), \
            f"{row.tx_no}'s refund totals differ from its refunds"
        if row.status in ("Captured", "Refunded"):
            assert (row.status == "Refunded") == (captured[row.id] == row.amount_minor), \
                f"{row.tx_no} is {row.status} with {captured[row.id]} of {row.amount_minor} refunded"
    expected = Counter((tx_id, f"{by_id[tx_id].kind}.{status.lower()}") for tx_id, status in moves
                       if status != "Refunded" and by_id[tx_id].callback_url)
    assert Counter(map(tuple, events)) == expected, "status changes and outbox events differ"


def assert_every_webhook_arrived(engine, merchant_id: int, receiver) -> None:
    """Each outbox event reached the receiver; repeats only under its own webhook-id, same body."""
    with engine.connect() as conn:
        events = dict(conn.execute(select(webhook_events.c.webhook_id, webhook_events.c.payload)
                                   .where(webhook_events.c.merchant_id == merchant_id)).all())
    bodies = defaultdict(set)
    for received in receiver.received:
        bodies[received.headers.get("webhook-id")].add(received.body)
    assert set(bodies) == set(events), ("webhooks sent that are not events, or events never sent",
                                        sorted(set(bodies) - set(events))[:5], sorted(set(events) - set(bodies))[:5])
    differing = {webhook_id: sent for webhook_id, sent in bodies.items()
                 if sent != {events[webhook_id]}}
    assert not differing, differing
