"""Cancelling a payment: the provider voids it first, then Declined, Payment Cancelled By User."""
from __future__ import annotations

import pytest

from app.payments import cancel
from app.payments.model import CANCELLED, CancelRejected, Kind, Status, TransactionNotFound
from app.payments.provider import Outcome, ProviderUnavailable

from .fakes import CALLER, NG_PAYOUT, OTHER_MERCHANT, transaction


@pytest.mark.parametrize("status", [Status.PENDING, Status.AUTHORIZED])
def test_a_pending_or_authorized_payment_is_voided_then_declined(deps, store, provider, status):
    payment = store.seed(transaction(status=status))
    provider.will_answer("cancel", Outcome(Status.DECLINED, "cs_1", "expired", "Session expired",
                                           decline_reason="Transaction Expired"))
    cancelled = cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    stored = store.get(payment)
    assert (cancelled.status, stored.status, stored.decline_reason) == (Status.DECLINED, Status.DECLINED, CANCELLED)
    assert provider.asked("cancel") == [payment.tx_no]
    assert store.history_of(payment) == [(status, Status.DECLINED, CALLER.actor)]
    assert store.webhooks_of(payment) == ["payment.declined"]
    assert [(a.action, a.target) for a in store.committed.audit_log] == [("payment.cancel", payment.tx_no)]


def test_a_payment_the_provider_has_nothing_to_void_for_is_declined_in_paydesk(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)  # the fake answers Pending: nothing to void
    assert (store.get(payment).status, store.get(payment).decline_reason) == (Status.DECLINED, CANCELLED)


def test_a_payment_paid_meanwhile_is_recorded_captured_and_the_cancel_refused(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING))
    provider.will_answer("cancel", Outcome(Status.CAPTURED, "cs_1", "complete", "Paid"))
    with pytest.raises(CancelRejected) as refused:
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert str(refused.value) == ("Only Pending or Authorized transactions can be cancelled. "
                                  "Current status: Captured")
    assert store.get(payment).status is Status.CAPTURED


@pytest.mark.parametrize("status", [Status.CAPTURED, Status.DECLINED, Status.FAILED, Status.REFUNDED,
                                    Status.CHARGEBACK])
def test_other_statuses_are_refused_and_the_provider_is_not_asked(deps, store, provider, status):
    payment = store.seed(transaction(status=status))
    with pytest.raises(CancelRejected) as refused:
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert str(refused.value) == ("Only Pending or Authorized transactions can be cancelled. "
                                  f"Current status: {status}")
    assert (provider.calls, store.get(payment).status) == ([], status)


def test_payouts_are_not_cancelled(deps, store, provider):
    payout = store.seed(transaction(kind=Kind.PAYOUT, status=Status.PENDING, method=NG_PAYOUT, currency="NGN"))
    with pytest.raises(CancelRejected) as refused:
        cancel.cancel_transaction(deps, CALLER, payout.tx_no)
    assert str(refused.value) == f"Only payments can be cancelled; transaction {payout.tx_no} is a payout"


def test_another_merchants_payment_is_not_found(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING, caller=OTHER_MERCHANT))
    with pytest.raises(TransactionNotFound):
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert provider.calls == []


def test_an_unreachable_provider_changes_nothing(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING))
    provider.will_answer("cancel", ProviderUnavailable("Stripe could not be reached"))
    with pytest.raises(ProviderUnavailable):
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert (store.get(payment).status, store.history_of(payment)) == (Status.PENDING, [])
