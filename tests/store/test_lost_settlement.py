"""A provider's answer is committed without waiting for the disk; a crash that loses it loses nothing.

The worker asks the provider again and records the same move: one history row, one webhook
event under the webhook id the lost commit had given it, the refund totals right.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

from sqlalchemy import select, text

from app.payments import refunds, settlement
from app.payments.model import Caller, Mode, Status
from app.payments.schemas import RefundRequest
from app.providers.calls import CallSettings, ProviderCalls
from app.store.unit_of_work import UnitOfWork
from app.store.tables import status_history, transactions, webhook_events
from tests.store.test_worker import deps_at
from tests.support.lost_commits import LostCommits, crash_loses_relaxed_commits


def stored(app, merchant, tx_no: str):
    """The transaction's row, its history as (from, to) and its events' (type, webhook id)."""
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(transactions).where(
            transactions.c.merchant_id == merchant.merchant_id, transactions.c.mode == "sandbox",
            transactions.c.tx_no == tx_no)).one()
        history = uow.conn.execute(
            select(status_history.c.from_status, status_history.c.to_status)
            .where(status_history.c.transaction_id == row.id).order_by(status_history.c.id)).all()
        events = uow.conn.execute(
            select(webhook_events.c.event_type, webhook_events.c.webhook_id)
            .where(webhook_events.c.transaction_id == row.id).order_by(webhook_events.c.id)).all()
    return row, [tuple(h) for h in history], [tuple(e) for e in events]


def crash_window(app, merchant):
    """The app's deps, a crash's window (open), deps whose relaxed commits it loses, and a caller."""
    deps = app.extensions["paydesk"]
    lost = LostCommits()
    crashing = replace(deps, uow=crash_loses_relaxed_commits(app.extensions["paydesk.engine"], lost))
    return deps, lost, crashing, Caller(merchant.merchant_id, Mode.SANDBOX, "api:test")


def test_a_lost_refund_settlement_is_redone_by_the_worker_under_the_same_webhook_id(
        app, sandbox, merchant, captured_payment, simulator_behind_a_network):
    tx_no = captured_payment(100)
    deps, lost, crashing, caller = crash_window(app, merchant)

    answered = refunds.refund(crashing, caller, RefundRequest(tx_no, Decimal("100")))
    assert answered.status is Status.PENDING  # the request hands the refund to a worker
    assert lost.commits == 0
    # The worker claims the call and records the provider's answer, neither waiting for the disk;
    # the crash loses both. (One pass: while the crash lasts, no relaxed commit holds.)
    with ProviderCalls(crashing, CallSettings(), merchant_id=merchant.merchant_id) as worker:
        assert worker.dispatch() == 1
        worker.wait()
    assert lost.commits == 2  # the claim, the answer
    [(lost_tx_no, lost_webhook_id)] = lost.webhook_events
    assert lost_tx_no == answered.tx_no
    lost.crashing = False  # the database is back

    # The durable commit survived: the Pending refund and the amount it holds.
    refund, history, events = stored(app, merchant, answered.tx_no)
    payment, _, _ = stored(app, merchant, tx_no)
    assert (refund.status, refund.provider_transaction_id, history, events) == (
        "Pending", None, [(None, "Pending")], [])
    assert (payment.status, payment.refund_reserved_minor, payment.refund_captured_minor) == (
        "Captured", 10000, 0)

    # The claim was lost with the answer, so the call is due again at once: no claim to lapse.
    while settlement.run_due_provider_checks(deps):  # other tests' due work comes first
        pass

    refund, history, events = stored(app, merchant, answered.tx_no)
    payment, payment_history, _ = stored(app, merchant, tx_no)
    assert refund.status == "Captured"
    assert history == [(None, "Pending"), ("Pending", "Captured")]
    assert events == [("refund.captured", lost_webhook_id)]
    assert (payment.status, payment.refund_reserved_minor, payment.refund_captured_minor) == (
        "Refunded", 10000, 10000)
    assert payment_history[-1] == ("Captured", "Refunded")
    assert sandbox.status(tx_no)["Status"] == "Refunded"


def test_a_lost_answer_whose_claim_held_is_redone_once_the_claim_lapses(
        app, sandbox, merchant, captured_payment, simulator_behind_a_network):
    # Another session's durable commit flushed the claim to disk; the crash came after the answer.
    tx_no = captured_payment(100)
    deps, lost, crashing, caller = crash_window(app, merchant)
    answered = refunds.refund(deps, caller, RefundRequest(tx_no, Decimal("100")))
    assert settlement.claim_provider_calls(deps, [answered.id], deps.clock()).keys() == {answered.id}
    settlement.settle_with_provider(crashing, answered.id, source="worker")
    assert lost.commits == 1
    [(_, lost_webhook_id)] = lost.webhook_events
    lost.crashing = False

    settlement.run_due_provider_checks(deps_at(app, timedelta(seconds=5)))
    assert stored(app, merchant, answered.tx_no)[0].status == "Pending"  # still claimed
    later = deps_at(app, settlement.CLAIM_FOR + timedelta(seconds=1))
    while settlement.run_due_provider_checks(later):  # other tests' due work comes first
        pass
    refund, history, events = stored(app, merchant, answered.tx_no)
    assert (refund.status, history, events) == (
        "Captured", [(None, "Pending"), ("Pending", "Captured")], [("refund.captured", lost_webhook_id)])
    assert sandbox.status(tx_no)["Status"] == "Refunded"


def test_relaxed_durability_skips_the_flush_for_its_own_transaction_only(app):
    engine = app.extensions["paydesk.engine"]
    with UnitOfWork(engine) as uow:
        uow.relax_durability()
        if uow.is_postgres:
            assert uow.conn.execute(text("SHOW synchronous_commit")).scalar() == "off"
            uow.commit()
            assert uow.conn.execute(text("SHOW synchronous_commit")).scalar() == "on"
        else:  # SQLite keeps its setting: WAL with synchronous=NORMAL (1)
            assert uow.conn.execute(text("PRAGMA synchronous")).scalar() == 1
            uow.commit()
