"""Cancelling a payment through a provider behind a network: the request commits a cancel request,
a worker asks the provider to void it, then Declined, Payment Cancelled By User."""
from __future__ import annotations

from datetime import timedelta

import pytest

from app.payments import cancel, settlement
from app.payments.model import CANCELLED, CancelRejected, Kind, Status, TransactionNotFound
from app.payments.provider import Outcome, ProviderUnavailable

from .fakes import CALLER, CARD, NG_PAYOUT, OTHER_MERCHANT, transaction


def _audit(store) -> list[tuple]:
    return [(a.actor, a.action, a.target, a.detail) for a in store.committed.audit_log]


@pytest.mark.parametrize("status", [Status.PENDING, Status.AUTHORIZED])
def test_a_cancel_is_requested_without_asking_the_provider(deps, store, provider, clock, status):
    payment = store.seed(transaction(status=status))
    requested = cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    stored = store.get(payment)
    assert provider.calls == []
    assert (requested.status, stored.status, stored.decline_reason) == (status, status, None)
    assert (stored.cancel_requested_at, stored.provider_check_at) == (clock(), clock())
    assert stored.provider_message == requested.provider_message == cancel.REQUESTED
    assert (store.history_of(payment), store.webhooks_of(payment)) == ([], [])
    assert _audit(store) == [(CALLER.actor, "payment.cancel.requested", payment.tx_no,
                              {"status": status.value})]


@pytest.mark.parametrize("status", [Status.PENDING, Status.AUTHORIZED])
def test_the_worker_voids_it_then_declines_it(deps, store, provider, status):
    payment = store.seed(transaction(status=status))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    provider.will_answer("cancel", Outcome(Status.DECLINED, "cs_1", "expired", "Session expired",
                                           decline_reason="Transaction Expired"))
    assert settlement.run_due_provider_checks(deps) == 1
    stored = store.get(payment)
    assert provider.asked() == [payment.tx_no] and provider.calls[0].operation == "cancel"
    assert provider.calls[0].write_units_open == 0  # asked outside any unit of work
    assert (stored.status, stored.decline_reason, stored.provider_message) == (
        Status.DECLINED, CANCELLED, "Session expired")
    assert stored.provider_check_at is None
    assert store.history_of(payment) == [(status, Status.DECLINED, "worker")]
    assert store.webhooks_of(payment) == ["payment.declined"]
    assert _audit(store)[1:] == [("worker", "payment.cancel", payment.tx_no, {"status": "Declined"})]
    assert settlement.run_due_provider_checks(deps) == 0  # nothing more is owed


def test_a_payment_the_provider_has_nothing_to_void_for_is_declined_in_paydesk(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    provider.will_answer("cancel", Outcome(Status.PENDING, "fake_1", "abandoned", None))
    settlement.run_due_provider_checks(deps)
    stored = store.get(payment)
    assert (stored.status, stored.decline_reason, stored.provider_message) == (
        Status.DECLINED, CANCELLED, "Cancelled by the merchant")


def test_a_payment_paid_meanwhile_is_recorded_captured_and_the_cancel_not_applied(deps, store, provider):
    payment = store.seed(transaction(status=Status.AUTHORIZED))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    provider.will_answer("cancel", Outcome(Status.CAPTURED, "cs_1", "complete", "Paid"))
    settlement.run_due_provider_checks(deps)
    stored = store.get(payment)
    assert (stored.status, stored.decline_reason, stored.provider_check_at) == (Status.CAPTURED, None, None)
    assert store.webhooks_of(payment) == ["payment.captured"]
    assert _audit(store)[1:] == [("worker", "payment.cancel", payment.tx_no, {"status": "Captured"})]
    with pytest.raises(CancelRejected):
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)


def test_an_unreachable_provider_leaves_the_request_outstanding_and_it_is_asked_again_later(
        deps, store, provider, clock):
    payment = store.seed(transaction(status=Status.AUTHORIZED))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    requested_at = clock()
    provider.will_answer("cancel", ProviderUnavailable("Stripe could not be reached"))
    clock.advance(minutes=8)
    settlement.run_due_provider_checks(deps)
    stored = store.get(payment)
    assert (stored.status, stored.cancel_requested_at, stored.provider_message) == (
        Status.AUTHORIZED, requested_at, "Stripe could not be reached")
    # Backoff from when the cancel was asked (a quarter of the wait), not from the payment's age.
    assert stored.provider_check_at == clock() + timedelta(minutes=2)
    assert settlement.run_due_provider_checks(deps) == 0
    clock.advance(minutes=2)
    provider.will_answer("cancel", Outcome(Status.DECLINED, "cs_1", "canceled", "Canceled"))
    assert settlement.run_due_provider_checks(deps) == 1
    assert (store.get(payment).status, store.get(payment).decline_reason) == (Status.DECLINED, CANCELLED)
    assert provider.asked("cancel") == [payment.tx_no, payment.tx_no]


def test_a_second_cancel_while_one_is_requested_writes_nothing(deps, store, provider, clock):
    payment = store.seed(transaction(status=Status.PENDING))
    first = cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    clock.advance(seconds=5)
    again = cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert again == first == store.get(payment)
    assert [a[1] for a in _audit(store)] == ["payment.cancel.requested"]
    assert provider.calls == []


def test_a_payment_never_opened_at_its_provider_is_declined_without_asking_anybody(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING, provider_transaction_id=None,
                                     provider_check_at=None))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert settlement.run_due_provider_checks(deps) == 1
    stored = store.get(payment)
    assert provider.calls == []
    assert (stored.status, stored.decline_reason, stored.provider_message, stored.provider_status) == (
        Status.DECLINED, CANCELLED, "Cancelled before the provider was asked", None)
    assert store.webhooks_of(payment) == ["payment.declined"]
    assert _audit(store)[1:] == [("worker", "payment.cancel", payment.tx_no, {"status": "Declined"})]


def test_a_payment_opened_since_it_was_read_is_voided_at_its_provider_not_declined_unasked(
        deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING))  # opened: it has the provider's id
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    read_before_it_opened = store.get(payment)
    read_before_it_opened.provider_transaction_id = None
    read_before_it_opened.updated_at -= timedelta(seconds=1)
    provider.will_answer("cancel", Outcome(Status.DECLINED, "fake_1", "canceled", "Canceled"))
    settlement.settle_with_provider(deps, payment.id, source="worker",
                                    known=settlement.AsRead(read_before_it_opened, None, CARD))
    assert provider.asked("cancel") == [payment.tx_no]
    assert (store.get(payment).status, store.get(payment).provider_message) == (Status.DECLINED, "Canceled")


def test_another_answer_crossing_the_request_leaves_the_void_due(deps, store, provider, clock):
    payment = store.seed(transaction(status=Status.PENDING))
    cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    clock.advance(seconds=1)
    # A status call a worker made before the request lands after it, with no time to ask again.
    settlement.apply_outcome(deps, payment.id, Outcome(Status.PENDING, "fake_1", "open", "Awaiting"),
                             source="worker")
    assert store.get(payment).provider_check_at == clock()
    provider.will_answer("cancel", Outcome(Status.DECLINED, "fake_1", "canceled", "Canceled"))
    assert settlement.run_due_provider_checks(deps) == 1
    assert store.get(payment).status is Status.DECLINED


@pytest.mark.parametrize("status", [Status.CAPTURED, Status.DECLINED, Status.FAILED, Status.REFUNDED,
                                    Status.CHARGEBACK])
def test_other_statuses_are_refused_and_nothing_is_requested(deps, store, provider, status):
    payment = store.seed(transaction(status=status))
    with pytest.raises(CancelRejected) as refused:
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert str(refused.value) == ("Only Pending or Authorized transactions can be cancelled. "
                                  f"Current status: {status}")
    stored = store.get(payment)
    assert (provider.calls, stored.status, stored.cancel_requested_at) == ([], status, None)
    assert store.committed.audit_log == []


def test_payouts_are_not_cancelled(deps, store, provider):
    payout = store.seed(transaction(kind=Kind.PAYOUT, status=Status.PENDING, method=NG_PAYOUT, currency="NGN"))
    with pytest.raises(CancelRejected) as refused:
        cancel.cancel_transaction(deps, CALLER, payout.tx_no)
    assert str(refused.value) == f"Only payments can be cancelled; transaction {payout.tx_no} is a payout"
    assert store.get(payout).cancel_requested_at is None


def test_another_merchants_payment_is_not_found(deps, store, provider):
    payment = store.seed(transaction(status=Status.PENDING, caller=OTHER_MERCHANT))
    with pytest.raises(TransactionNotFound):
        cancel.cancel_transaction(deps, CALLER, payment.tx_no)
    assert store.get(payment, OTHER_MERCHANT).cancel_requested_at is None
