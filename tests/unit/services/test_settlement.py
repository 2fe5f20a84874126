"""Recording a provider's answer, and the worker's due checks that ask for it."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from app.payments import refunds, settlement
from app.payments.model import InvalidMove, Kind, Status
from app.payments.provider import Outcome, ProviderDisconnected
from app.payments.schemas import RefundRequest

from .fakes import CALLER, NG_PAYOUT, NOW, transaction

DECLINED = Outcome(Status.DECLINED, provider_status="DECLINED", decline_reason="Declined By Bank")
CAPTURED = Outcome(Status.CAPTURED, provider_status="PAID", provider_message="Paid")


@pytest.fixture
def captured_refund(store):
    """A payment of 100.00 with a Captured refund of 40.00."""
    payment = store.seed(transaction(amount="100.00"))
    return store.seed(transaction(kind=Kind.REFUND, amount="40.00", original_id=payment.id))


def test_an_answer_the_status_no_longer_allows_is_ignored(deps, store, captured_refund):
    commits = store.commits
    assert settlement.apply_outcome(deps, captured_refund.id, DECLINED, source="worker").status is (
        Status.CAPTURED)
    assert store.commits == commits


def test_an_answer_the_status_no_longer_allows_is_refused_when_strict(deps, store, captured_refund):
    with pytest.raises(InvalidMove) as caught:
        settlement.apply_outcome(deps, captured_refund.id, DECLINED, source="sandbox", strict=True)
    assert str(caught.value) == f"Transaction {captured_refund.tx_no} cannot move from Captured to Declined"
    assert store.get(captured_refund).status is Status.CAPTURED


def test_a_declined_payment_cannot_be_moved_to_captured(deps, store):
    declined = store.seed(transaction(status=Status.DECLINED))
    with pytest.raises(InvalidMove):
        settlement.move_by_provider(deps, CALLER, declined.tx_no, Status.CAPTURED, None, "sandbox")


def test_refunds_are_not_moved_by_hand(deps, captured_refund):
    with pytest.raises(InvalidMove):
        settlement.move_by_provider(deps, CALLER, captured_refund.tx_no, Status.FAILED, None, "sandbox")


@pytest.mark.parametrize("status, reason", [(Status.DECLINED, "Declined By Bank"),
                                            (Status.FAILED, "Provider Error")])
def test_a_payment_moved_to_a_decline_without_a_reason_gets_the_default_one(deps, store, status, reason):
    pending = store.seed(transaction(status=Status.PENDING))
    moved = settlement.move_by_provider(deps, CALLER, pending.tx_no, status, None, "checkout")
    assert (moved.status, moved.decline_reason) == (status, reason)
    assert store.history_of(pending) == [(Status.PENDING, status, "checkout")]
    assert store.webhooks_of(pending) == [f"payment.{status.value.lower()}"]


def test_a_payout_the_provider_still_holds_is_asked_about_again_later(deps, store):
    payout = store.seed(transaction(kind=Kind.PAYOUT, status=Status.PENDING, method=NG_PAYOUT,
                                    currency="NGN"))
    settlement.apply_outcome(deps, payout.id, Outcome(Status.PENDING, provider_status="PROCESSING"),
                             source="worker")
    stored = store.get(payout)
    assert (stored.status, stored.provider_status) == (Status.PENDING, "PROCESSING")
    assert stored.provider_check_at == NOW + settlement.CLAIM_FOR
    assert store.history_of(payout) == store.webhooks_of(payout) == []


def test_the_worker_settles_an_async_refund_once_its_check_is_due(deps, store, provider, clock):
    payment = store.seed(transaction(amount="100.00"))
    provider.will_answer("refund", Outcome(Status.PENDING, "fake_r1", "PROCESSING",
                                           check_again_at=NOW + timedelta(seconds=2)))
    refund = refunds.refund(deps, CALLER, RefundRequest(payment.tx_no, Decimal("100")))
    assert (refund.status, provider.calls) == (Status.PENDING, [])
    assert settlement.run_due_provider_checks(deps) == 1  # submitted: the provider is still at it
    assert provider.asked("refund") == [refund.tx_no]
    assert store.get(refund).status is Status.PENDING
    assert settlement.run_due_provider_checks(deps) == 0  # its check is not due yet

    clock.advance(seconds=2)
    provider.will_answer("status", CAPTURED)
    assert settlement.run_due_provider_checks(deps) == 1
    assert provider.asked("status") == [refund.tx_no]
    assert (store.get(refund).status, store.get(payment).status) == (Status.CAPTURED, Status.REFUNDED)
    assert store.history_of(refund)[-1] == (Status.PENDING, Status.CAPTURED, "worker")


def test_the_worker_pays_a_payout_once_its_check_is_due(deps, store, provider, clock):
    payout = store.seed(transaction(kind=Kind.PAYOUT, status=Status.PENDING, method=NG_PAYOUT,
                                    currency="NGN", provider_check_at=NOW + timedelta(seconds=2)))
    clock.advance(seconds=2)
    provider.will_answer("status", CAPTURED)
    assert settlement.run_due_provider_checks(deps) == 1
    assert store.get(payout).status is Status.CAPTURED
    assert store.webhooks_of(payout) == ["payout.captured"]


def test_a_refund_that_never_reached_the_provider_is_sent_again_once_a_dead_workers_claim_lapses(
        deps, store, provider, clock):
    payment = store.seed(transaction(amount="100.00"))
    refunds.refund(deps, CALLER, RefundRequest(payment.tx_no, Decimal("10")))
    [refund] = store.refunds_of(payment)
    assert (refund.provider_transaction_id, refund.provider_check_at, provider.calls) == (None, NOW, [])
    provider.will_answer("refund", RuntimeError("killed mid-call"))
    with pytest.raises(RuntimeError):
        settlement.run_due_provider_checks(deps)  # due at once: no grace; its worker dies in the call
    assert store.get(refund).provider_transaction_id is None

    clock.advance(seconds=settlement.CLAIM_FOR.total_seconds() - 1)
    assert settlement.run_due_provider_checks(deps) == 0
    clock.advance(seconds=1)
    assert settlement.run_due_provider_checks(deps) == 1
    assert provider.asked() == [refund.tx_no, refund.tx_no]
    assert provider.asked("refund") == provider.asked()  # submitted, not asked about
    assert store.get(refund).status is Status.CAPTURED


def test_a_payment_whose_account_was_disconnected_is_left_for_expiry_not_asked_again(deps, store, provider,
                                                                                    clock):
    payment = store.seed(transaction(status=Status.PENDING, provider_check_at=clock()))
    provider.will_answer("status", ProviderDisconnected("The provider account is disconnected"))
    settlement.run_due_provider_checks(deps)
    left = store.get(payment)
    assert (left.status, left.provider_check_at, left.provider_message) == (
        Status.PENDING, None, "The provider account is disconnected")


def test_a_refund_whose_account_was_disconnected_keeps_being_asked(deps, store, provider, clock):
    original = store.seed(transaction(status=Status.CAPTURED))
    refund = store.seed(transaction(kind=Kind.REFUND, status=Status.PENDING, original_id=original.id,
                                    provider_transaction_id="re_1", provider_check_at=clock()))
    provider.will_answer("status", ProviderDisconnected("The provider account is disconnected"))
    settlement.run_due_provider_checks(deps)
    assert store.get(refund).provider_check_at == clock() + settlement.CLAIM_FOR
