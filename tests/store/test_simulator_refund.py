"""A refund whose provider answers in process (the simulator) takes the one route of every refund.

Its Pending refund is committed as any other, and the simulator is asked after that commit, in
the request; its answer is recorded by the code that records any provider's. The rows it leaves
are those a worker leaves when it asks a provider behind a network. When the payment changes
between the refund's commit and its answer, the answer is decided on the locked rows. Both
databases.
"""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from sqlalchemy import select

from app.payments import refunds, settlement
from app.payments.model import Caller, Mode, Status
from app.payments.provider import Outcome, ProvidersByName
from app.payments.schemas import RefundRequest
from app.providers.calls import CallSettings, ProviderCalls
from app.store.tables import audit_log, status_history, transactions, webhook_events
from tests.store.test_refund_ledger_property import ScriptedProvider


def stored(app, merchant, tx_no: str):
    """What the merchant's sandbox transaction left in the database, without what differs from
    one row to the next (ids, numbers, times): its row's outcome, history, events and audit."""
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(transactions).where(
            transactions.c.merchant_id == merchant.merchant_id, transactions.c.mode == "sandbox",
            transactions.c.tx_no == tx_no)).one()
        history = uow.conn.execute(
            select(status_history.c.from_status, status_history.c.to_status, status_history.c.source,
                   status_history.c.note)
            .where(status_history.c.transaction_id == row.id)
            .order_by(status_history.c.at, status_history.c.id)).all()
        events = uow.conn.execute(select(webhook_events.c.event_type)
                                  .where(webhook_events.c.transaction_id == row.id)).scalars().all()
        audited = uow.conn.execute(select(audit_log.c.action, audit_log.c.amount_minor)
                                   .where(audit_log.c.target == tx_no)).all()
    outcome = (row.kind, row.status, row.amount_minor, row.decline_reason, row.provider_status,
               row.provider_message, row.provider_check_at is None, row.refund_reserved_minor,
               row.refund_captured_minor, (row.provider_transaction_id or "").replace(tx_no, "<txNo>"))
    return outcome, [tuple(h) for h in history], events, [tuple(a) for a in audited]


def refunds_of(sandbox, app, merchant, tx_no: str, amounts, *, worker: bool = False) -> list:
    """Refund the payment by each amount through the API (and, with `worker`, let a worker make
    the provider calls the requests handed over); what each refund and, at the end, the payment
    left behind. The source of a provider's answer in the history is named "<answer>": the
    request's own ("provider") or a worker's."""
    refunds = []
    for amount in amounts:
        answer = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": amount})
        assert answer.status_code == 200, answer.text
        if worker:
            assert answer.json()["status"] == "Pending"  # the request did not wait for the provider
            with ProviderCalls(app.extensions["paydesk"], CallSettings(),
                               merchant_id=merchant.merchant_id) as calls:
                assert calls.run_until_idle() == 1
        refunds.append(stored(app, merchant, answer.json()["refundTxNo"]))
    return refunds + [stored(app, merchant, tx_no)]


def answers_named(refunds: list, source: str) -> list:
    """The refunds' rows with the source of the provider's answers replaced by "<answer>"."""
    def rename(history):
        return [(h[0], h[1], "<answer>" if h[2] == source else h[2], h[3]) for h in history]
    return [(outcome, rename(history), events, audited) for outcome, history, events, audited in refunds]


@pytest.mark.parametrize("amounts", [[60, 40], [100], [25]])
def test_a_refund_the_simulator_answers_in_the_request_leaves_what_a_workers_answer_leaves(
        app, merchant, sandbox, captured_payment, amounts):
    simulator = app.extensions["paydesk"].providers.simulators.by_name["simulator"]
    assert simulator.in_process
    first, second = captured_payment(100), captured_payment(100)  # both opened by the simulator
    in_the_request = refunds_of(sandbox, app, merchant, first, amounts)
    simulator.latency = 0.001  # asked by a worker after the Pending refund is committed, as behind a network
    try:
        assert not simulator.in_process
        by_a_worker = refunds_of(sandbox, app, merchant, second, amounts, worker=True)
    finally:
        simulator.latency = 0.0
    assert answers_named(in_the_request, "provider") == answers_named(by_a_worker, "worker")
    payment, payment_history, _, _ = in_the_request[-1]
    assert payment[1] == ("Refunded" if sum(amounts) == 100 else "Captured")
    assert [h[:2] for h in in_the_request[0][1]] == [(None, "Pending"), ("Pending", "Captured")]
    assert in_the_request[0][2] == ["refund.captured"]


@pytest.mark.parametrize("fixture", ["SBX-REFUND-DECLINED", "SBX-REFUND-FAILED", "SBX-REFUND-ASYNC"])
def test_a_sandbox_refund_declined_failed_or_answered_later_leaves_what_a_workers_answer_leaves(
        app, merchant, sandbox, fixture):
    simulator = app.extensions["paydesk"].providers.simulators.by_name["simulator"]
    in_the_request = refunds_of(sandbox, app, merchant, fixture, [1])
    simulator.latency = 0.001
    try:
        by_a_worker = refunds_of(sandbox, app, merchant, fixture, [1], worker=True)
    finally:
        simulator.latency = 0.0
    assert answers_named(in_the_request, "provider")[0] == answers_named(by_a_worker, "worker")[0]
    status = in_the_request[0][0][1]
    assert status == {"SBX-REFUND-DECLINED": "Declined", "SBX-REFUND-FAILED": "Failed",
                      "SBX-REFUND-ASYNC": "Pending"}[fixture]


class ChangesThePaymentWhileAsked(ScriptedProvider):
    """A provider answering in process that, while it is asked, lets another process change the
    payment (`meanwhile`): what happens between this refund's commit and its answer."""

    in_process = True

    def __init__(self, meanwhile):
        super().__init__()
        self.meanwhile = meanwhile

    def refund(self, refund, original, now):
        if self.meanwhile:
            self.meanwhile(original)
            self.meanwhile = None
        return super().refund(refund, original, now)


def another_refund(deps, caller: Caller, amount: int, answer: str):
    """Another process refunds the payment, its provider (behind a network) answering `answer`."""
    other = ScriptedProvider()
    other.answer = answer
    deps = replace(deps, providers=ProvidersByName({"simulator": other}))

    def refund(original):
        made = refunds.refund(deps, caller, RefundRequest(original.tx_no, Decimal(amount)))
        return settlement.settle_with_provider(deps, made.id, source="worker")  # its worker, at once

    return refund


def payment_row(app, tx_no: str):
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(transactions).where(transactions.c.tx_no == tx_no)).one()


def test_a_refund_captured_meanwhile_counts_when_the_payment_is_refunded_in_full(
        app, merchant, sandbox, captured_payment):
    """Its Pending refund of 60 is captured between this refund's commit and its answer: the
    payment's captured total moves and nothing else of its row. This refund's answer then
    refunds it in full: Refunded, which a decision on the payment as the refund's commit left it
    (nothing captured) would miss."""
    tx_no, caller = captured_payment(100), Caller(merchant.merchant_id, Mode.SANDBOX, "api:test")
    deps = app.extensions["paydesk"]
    pending = another_refund(deps, caller, 60, "Pending")(payment_row(app, tx_no))
    assert pending.status is Status.PENDING

    def captured_meanwhile(_original):
        settlement.apply_outcome(deps, pending.id, Outcome(Status.CAPTURED, "re_1", "SUCCESS"), source="worker")

    refund = refunds.refund(replace(deps, providers=ProvidersByName(
        {"simulator": ChangesThePaymentWhileAsked(captured_meanwhile)})), caller, RefundRequest(tx_no, Decimal(40)))
    assert refund.status is Status.CAPTURED
    payment = payment_row(app, tx_no)
    assert (payment.status, payment.refund_reserved_minor, payment.refund_captured_minor) == (
        "Refunded", 10000, 10000)
