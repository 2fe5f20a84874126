"""A provider's answer recorded on the rows as they were read, unlocked (apply_outcome's as_read).

The answer is written by one statement that first checks the refund and its payment are still
as read. When another process changed either in between, the rows are locked and the answer
decided on again: the result is what the locked path alone gives. Both databases.
"""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from sqlalchemy import select

from app.payments import create, refunds, settlement
from app.payments.model import Caller, Mode, Status
from app.payments.provider import Outcome, ProvidersByName
from app.payments.schemas import RefundRequest, parse_create
from app.store.tables import status_history, transactions, webhook_events
from tests.conftest import payment_body
from tests.store.test_refund_ledger_property import ScriptedProvider


@pytest.fixture
def scripted(app, merchant):
    """The app's services with a provider whose answers the test sets, and a live caller."""
    provider = ScriptedProvider()
    deps = replace(app.extensions["paydesk"], providers=ProvidersByName({"simulator": provider}))
    return deps, provider, Caller(merchant.merchant_id, Mode.LIVE, "api:test")


def captured(deps, caller, amount: int):
    created = create.create_transaction(deps, caller, parse_create(payment_body(amount=amount)))
    return settlement.move_by_provider(deps, caller, created.tx_no, Status.CAPTURED, None, "sandbox")


def pending_refund(deps, provider, caller, payment, amount: int):
    provider.answer = "Pending"
    refund = refunds.refund(deps, caller, RefundRequest(payment.tx_no, Decimal(amount)))
    assert refund.status is Status.PENDING
    return refund


def read(deps, tx_id: int):
    with deps.uow(write=False) as uow:
        return uow.transactions.get_for_worker(tx_id)


def answer(status: Status, tx) -> Outcome:
    reason = "Provider Error" if status is Status.FAILED else None
    return Outcome(status, f"re_{tx.tx_no}", status.value.upper(), f"{status.value} by the test",
                   decline_reason=reason)


def row_and_history(deps, tx_id: int):
    with deps.uow(write=False) as uow:
        row = uow.conn.execute(select(transactions).where(transactions.c.id == tx_id)).one()
        history = uow.conn.execute(select(status_history.c.from_status, status_history.c.to_status)
                                   .where(status_history.c.transaction_id == tx_id)
                                   .order_by(status_history.c.id)).all()
        events = uow.conn.execute(select(webhook_events.c.event_type)
                                  .where(webhook_events.c.transaction_id == tx_id)).scalars().all()
    return row, [tuple(h) for h in history], events


def test_a_refund_captured_after_its_payment_moved_decides_again_on_the_locked_payment(scripted):
    deps, provider, caller = scripted
    payment = captured(deps, caller, 100)
    first = pending_refund(deps, provider, caller, payment, 60)
    second = pending_refund(deps, provider, caller, payment, 40)
    second_as_read, payment_as_read = read(deps, second.id), read(deps, payment.id)
    assert payment_as_read.refund_captured == 0

    # Another process captures the first refund in between: the payment's captured total moves.
    settlement.apply_outcome(deps, first.id, answer(Status.CAPTURED, first), source="worker")

    settled = settlement.apply_outcome(deps, second.id, answer(Status.CAPTURED, second), source="worker",
                                       as_read=(second_as_read, payment_as_read))
    assert settled.status is Status.CAPTURED
    row, history, _ = row_and_history(deps, payment.id)
    # Decided on the payment as read (nothing captured yet), 40 would not have made it Refunded.
    assert (row.status, row.refund_reserved_minor, row.refund_captured_minor) == ("Refunded", 10000, 10000)
    assert history[-1] == ("Captured", "Refunded")
    assert (payment_as_read.status, payment_as_read.refund_captured) == (Status.CAPTURED, 0)  # not changed


def test_a_refund_settled_by_another_process_since_it_was_read_is_not_settled_twice(scripted):
    deps, provider, caller = scripted
    payment = captured(deps, caller, 100)
    refund = pending_refund(deps, provider, caller, payment, 30)
    refund_as_read, payment_as_read = read(deps, refund.id), read(deps, payment.id)

    settlement.apply_outcome(deps, refund.id, answer(Status.FAILED, refund), source="worker")
    late = settlement.apply_outcome(deps, refund.id, answer(Status.CAPTURED, refund), source="provider",
                                    as_read=(refund_as_read, payment_as_read))

    assert late.status is Status.FAILED
    refund_row, refund_history, events = row_and_history(deps, refund.id)
    payment_row, payment_history, _ = row_and_history(deps, payment.id)
    assert refund_row.status == "Failed"
    assert refund_history == [(None, "Pending"), ("Pending", "Failed")]
    assert events == ["refund.failed"]
    assert (payment_row.status, payment_row.refund_reserved_minor, payment_row.refund_captured_minor) == (
        "Captured", 0, 0)
    assert payment_history[-1] == ("Pending", "Captured")


def test_a_refund_answered_on_the_rows_as_read_moves_it_and_its_payment(scripted):
    deps, provider, caller = scripted
    payment = captured(deps, caller, 100)
    refund = pending_refund(deps, provider, caller, payment, 100)
    settled = settlement.apply_outcome(deps, refund.id, answer(Status.CAPTURED, refund), source="worker",
                                       as_read=(read(deps, refund.id), read(deps, payment.id)))
    assert settled.status is Status.CAPTURED
    refund_row, refund_history, events = row_and_history(deps, refund.id)
    payment_row, payment_history, _ = row_and_history(deps, payment.id)
    assert (refund_row.status, refund_row.provider_check_at) == ("Captured", None)
    assert refund_history == [(None, "Pending"), ("Pending", "Captured")]
    assert events == ["refund.captured"]
    assert (payment_row.status, payment_row.refund_reserved_minor, payment_row.refund_captured_minor) == (
        "Refunded", 10000, 10000)
    assert payment_history[-1] == ("Captured", "Refunded")


def test_a_workers_batch_read_gives_each_transaction_with_its_original(scripted):
    """many_for_worker: the worker's one read of a batch of calls returns every transaction asked
    for and the originals of its refunds, each as get_for_worker reads it alone."""
    deps, provider, caller = scripted
    payment = captured(deps, caller, 100)
    refund = pending_refund(deps, provider, caller, payment, 30)
    other = create.create_transaction(deps, caller, parse_create(payment_body(amount=5)))
    with deps.uow(write=False) as uow:
        found = uow.transactions.many_for_worker([refund.id, other.id, 10**9])
    assert sorted(found) == sorted([payment.id, refund.id, other.id])
    for tx_id in (payment.id, refund.id, other.id):
        assert found[tx_id] == read(deps, tx_id)
    assert found[refund.id].original_tx_no == payment.tx_no
