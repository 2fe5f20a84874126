"""The refund totals on the original's row, and which commits may skip the disk flush.

A refund reserves its amount on the original in the unit that creates it; its settlement moves
the totals in the unit that records the provider's answer (asked by a worker, never by the
request), which may be lost in a database crash because the worker asks the provider again.
"""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from app.payments import create, refunds, settlement
from app.payments.model import RefundRejected, Status
from app.payments.provider import Outcome, ProviderUnavailable
from app.payments.schemas import RefundRequest

from .fakes import CALLER, FULL_REFUND_ONLY, FakeTransactions, transaction
from .test_create import create_request


def refund(deps, original, amount):
    return refunds.refund(deps, CALLER, RefundRequest(original.tx_no, Decimal(amount)))


def settled(deps, store, provider, original, amount):
    """A refund as the worker leaves it, once it is shown that the request alone answered it
    Pending without asking the provider."""
    created = refund(deps, original, amount)
    assert created.status is Status.PENDING
    assert created.tx_no not in provider.asked()
    assert settlement.run_due_provider_checks(deps) == 1
    return store.get(created)


def totals(store, payment) -> tuple[Decimal, Decimal]:
    """(reserved, captured) as the payment's committed row has them."""
    stored = store.get(payment)
    return stored.refund_reserved, stored.refund_captured


@pytest.fixture
def payment(store):
    """A Captured card payment of 100.00 EUR."""
    return store.seed(transaction(amount="100.00"))


def test_a_pending_refund_holds_its_amount_on_the_original(deps, store, provider, payment):
    provider.will_answer("refund", Outcome(Status.PENDING, "fake_r1", "PROCESSING"))
    settled(deps, store, provider, payment, "30")
    assert totals(store, payment) == (Decimal("30.00"), Decimal("0.00"))


def test_a_captured_refund_joins_the_captured_total(deps, store, provider, payment):
    settled(deps, store, provider, payment, "30")
    settled(deps, store, provider, payment, "20.5")
    assert totals(store, payment) == (Decimal("50.50"), Decimal("50.50"))
    assert store.get(payment).status is Status.CAPTURED


@pytest.mark.parametrize("answer", [Status.DECLINED, Status.FAILED])
def test_a_declined_or_failed_refund_gives_its_amount_back_in_the_unit_that_records_it(
        deps, store, provider, payment, answer):
    provider.will_answer("refund", Outcome(answer, "fake_r1", "NO", decline_reason="Declined By Bank"))
    commits = store.commits
    refund(deps, payment, "60")
    assert store.commits == commits + 1  # the Pending refund with its hold
    assert (totals(store, payment), provider.calls) == ((Decimal("60.00"), Decimal("0.00")), [])
    assert settlement.run_due_provider_checks(deps) == 1
    assert store.commits == commits + 3  # then the worker's claim; the answer with the release
    assert totals(store, payment) == (Decimal("0.00"), Decimal("0.00"))


def test_the_original_is_refunded_in_full_once_the_captured_total_reaches_its_amount(
        deps, store, provider, clock, payment):
    provider.will_answer("refund", Outcome(Status.PENDING, "fake_r1", "PROCESSING"))
    held = settled(deps, store, provider, payment, "40")
    settled(deps, store, provider, payment, "60")
    assert (store.get(payment).status, totals(store, payment)) == (
        Status.CAPTURED, (Decimal("100.00"), Decimal("60.00")))

    settlement.apply_outcome(deps, held.id, Outcome(Status.CAPTURED, "fake_r1", "SUCCESS"), source="worker")
    assert (store.get(payment).status, totals(store, payment)) == (
        Status.REFUNDED, (Decimal("100.00"), Decimal("100.00")))
    [moved] = [row for row in store.committed.history if row.transaction_id == payment.id]
    assert (moved.from_status, moved.to_status, moved.source, moved.note) == (
        Status.CAPTURED, Status.REFUNDED, "worker", "Refunded in full")


def test_a_refused_refund_holds_nothing(deps, store, provider, payment):
    settled(deps, store, provider, payment, "70")
    with pytest.raises(RefundRejected):
        refund(deps, payment, "30.01")
    assert totals(store, payment) == (Decimal("70.00"), Decimal("70.00"))


def test_what_refund_requests_awaiting_approval_hold_is_not_refundable(deps, store, payment):
    row = store.committed.transactions[payment.id]
    store.committed.transactions[payment.id] = replace(row, refund_held=Decimal("60.00"))
    with pytest.raises(RefundRejected) as refused:
        refund(deps, payment, "50")
    assert str(refused.value) == "Refund amount (50.00) exceeds remaining refundable amount (40.00)"
    assert refund(deps, payment, "40").status is Status.PENDING
    assert totals(store, payment) == (Decimal("40.00"), Decimal("0.00"))


def test_a_full_refund_only_method_takes_the_full_amount_again_after_a_declined_one(deps, store,
                                                                                   provider):
    payment = store.seed(transaction(method=FULL_REFUND_ONLY))
    provider.will_answer("refund", Outcome(Status.DECLINED, "fake_r1", "NO",
                                           decline_reason="Declined By Bank"))
    assert settled(deps, store, provider, payment, "100").status is Status.DECLINED
    assert settled(deps, store, provider, payment, "100").status is Status.CAPTURED
    assert totals(store, payment) == (Decimal("100.00"), Decimal("100.00"))


def test_a_reservation_that_lost_a_race_is_made_once_the_rules_pass_on_the_locked_row(
        deps, store, provider, payment, monkeypatch):
    reserve = FakeTransactions.reserve_refund
    tries = []

    def refused_first(self, caller, tx_no, amount):
        tries.append(tx_no)  # the first: as if a settlement freed the amount just after it
        return None if len(tries) == 1 else reserve(self, caller, tx_no, amount)

    monkeypatch.setattr(FakeTransactions, "reserve_refund", refused_first)
    assert settled(deps, store, provider, payment, "40").status is Status.CAPTURED
    assert tries == [payment.tx_no, payment.tx_no]
    assert totals(store, payment) == (Decimal("40.00"), Decimal("40.00"))


def test_a_store_refusing_what_the_rules_allow_is_an_error_and_no_refund(deps, store, payment,
                                                                          monkeypatch):
    monkeypatch.setattr(FakeTransactions, "reserve_refund", lambda *args: None)
    with pytest.raises(RuntimeError):
        refund(deps, payment, "40")
    assert store.refunds_of(payment) == []


def test_the_pending_refund_is_committed_durably_and_the_providers_answer_is_not(deps, store, provider,
                                                                                 payment):
    before = len(store.relaxed_commits)
    refund(deps, payment, "10")
    assert (store.relaxed_commits[before:], provider.calls) == ([False], [])
    assert settlement.run_due_provider_checks(deps) == 1
    # The request's commit; the worker's claim; the provider's answer.
    assert store.relaxed_commits[before:] == [False, True, True]


def test_an_unreachable_provider_is_noted_durably(deps, store, provider, payment):
    provider.will_answer("refund", ProviderUnavailable("connect timeout"))
    before = len(store.relaxed_commits)
    refund(deps, payment, "10")
    assert (store.relaxed_commits[before:], provider.calls) == ([False], [])
    assert settlement.run_due_provider_checks(deps) == 1
    assert store.relaxed_commits[before:] == [False, True, False]  # the request; the claim; the note


def test_a_created_payment_and_its_opening_answer_are_both_durable(deps, store, provider):
    # The opening answer carries the provider's payment page, which no second question gives back.
    create.create_transaction(deps, CALLER, create_request())
    assert (store.relaxed_commits, provider.calls) == ([False], [])
    assert settlement.run_due_provider_checks(deps) == 1
    # The answer's durable commit keeps the claim before it too (the log is written in order).
    assert store.relaxed_commits == [False, True, False]  # the request; the worker's claim; the answer


def test_a_created_payout_is_durable_and_its_opening_answer_is_not(deps, store, provider):
    # A lost transfer answer is found again by its reference.
    create.create_transaction(deps, CALLER, create_request(
        method="ng-bank-payout", currency="NGN", country="NG", action="PAYMENT", bank="058",
        holder="Ada Obi", account_number="0123456785"))
    assert (store.relaxed_commits, provider.calls) == ([False], [])
    assert settlement.run_due_provider_checks(deps) == 1
    assert store.relaxed_commits == [False, True, True]  # the request; the worker's claim; the answer


def test_answers_the_worker_would_not_ask_for_again_are_committed_durably(deps, store, provider):
    waiting = store.seed(transaction(status=Status.PENDING))  # the customer has not paid yet
    moved = store.seed(transaction(status=Status.PENDING))
    before = len(store.relaxed_commits)
    provider.will_answer("status", Outcome(Status.CAPTURED, provider_status="PAID"))
    settlement.settle_with_provider(deps, waiting.id, source="checkout")  # back from the provider's page
    settlement.move_by_provider(deps, CALLER, moved.tx_no, Status.CAPTURED, None, "sandbox")
    assert store.relaxed_commits[before:] == [False, False]
    assert store.get(waiting).status is store.get(moved).status is Status.CAPTURED


def test_a_lost_settlement_is_recorded_again_by_the_worker_under_the_same_webhook_id(
        deps, store, provider, payment):
    store.crash_loses_relaxed_commits = True
    created = refund(deps, payment, "100")
    assert (created.status, provider.calls) == (Status.PENDING, [])  # what the caller was told
    assert settlement.run_due_provider_checks(deps) == 1
    [_claim, lost] = store.lost  # the crash lost the worker's claim and its answer
    assert lost.transactions[created.id].status is Status.CAPTURED  # recorded by the worker, then lost
    lost_ids = [row.webhook_id for row in lost.webhooks if row.transaction_id == created.id]
    assert store.get(created).status is Status.PENDING
    assert totals(store, payment) == (Decimal("100.00"), Decimal("0.00"))

    store.crash_loses_relaxed_commits = False
    assert settlement.run_due_provider_checks(deps) == 1  # due at once: its claim was lost too
    assert provider.asked("refund") == [created.tx_no, created.tx_no]  # submitted again, idempotently
    assert store.history_of(created) == [(None, Status.PENDING, CALLER.actor),
                                         (Status.PENDING, Status.CAPTURED, "worker")]
    assert store.webhooks_of(created) == ["refund.captured"]
    assert store.webhook_ids_of(created) == lost_ids
    assert totals(store, payment) == (Decimal("100.00"), Decimal("100.00"))
    assert store.get(payment).status is Status.REFUNDED
