"""The refund service: its rules on the stored original, the Pending commit, then the provider's
answer, which a worker asks for."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from app.payments import refunds, settlement
from app.payments.model import FieldErrors, Kind, RefundRejected, Status
from app.payments.provider import Outcome, ProviderUnavailable
from app.payments.schemas import RefundRequest

from .fakes import CALLER, FULL_REFUND_ONLY, NOW, OTHER_MERCHANT, ProviderCall, transaction


def refund(deps, original, amount, **fields):
    return refunds.refund(deps, CALLER, RefundRequest(original.tx_no, Decimal(amount), **fields))


@pytest.fixture
def settled(deps, store, provider):
    """A refund as the worker leaves it, once it is shown that the request alone answered it
    Pending without asking the provider (a provider behind a network is asked by a worker)."""
    def refunded(original, amount, **fields):
        created = refund(deps, original, amount, **fields)
        assert created.status is Status.PENDING
        assert created.tx_no not in provider.asked()
        assert settlement.run_due_provider_checks(deps) == 1
        return store.get(created)
    return refunded


@pytest.fixture
def rejection(deps, store, provider):
    """The message a refund is rejected with, once it is shown that the rejection changed nothing."""
    def rejected(original, amount, tx_no=None) -> str:
        commits, calls = store.commits, len(provider.calls)
        with pytest.raises(RefundRejected) as caught:
            refunds.refund(deps, CALLER, RefundRequest(tx_no or original.tx_no, Decimal(amount)))
        assert (store.commits, len(provider.calls)) == (commits, calls)
        return str(caught.value)
    return rejected


@pytest.fixture
def payment(store):
    """A Captured card payment of 100.00 EUR."""
    return store.seed(transaction(amount="100.00"))


def test_a_refund_of_an_unknown_transaction_is_rejected(payment, rejection):
    assert rejection(payment, "10", tx_no="PAY-UNKNOWN") == (
        "Original transaction with TxNo PAY-UNKNOWN not found")


def test_another_merchants_payment_is_not_found(store, rejection):
    theirs = store.seed(transaction(caller=OTHER_MERCHANT))
    assert rejection(theirs, "10") == f"Original transaction with TxNo {theirs.tx_no} not found"


@pytest.mark.parametrize("status", [Status.PENDING, Status.AUTHORIZED, Status.DECLINED, Status.REFUNDED])
def test_a_payment_that_is_not_captured_is_rejected_with_its_status(store, rejection, status):
    uncaptured = store.seed(transaction(status=status))
    assert rejection(uncaptured, "1000") == (
        f"Transaction must be in Captured status to be refunded. Current status: {status.value}")


@pytest.mark.parametrize("kind", [Kind.PAYOUT, Kind.REFUND])
def test_only_payments_can_be_refunded(store, rejection, kind):
    not_a_payment = store.seed(transaction(kind=kind))
    assert rejection(not_a_payment, "10") == (
        f"Only payments can be refunded; transaction {not_a_payment.tx_no} is a {kind.value}")


def test_a_refund_above_the_original_amount_is_rejected_before_the_remaining_amount_is(
        deps, payment, rejection):
    refund(deps, payment, "90")
    assert rejection(payment, "100.01") == (
        "Refund amount (100.01) cannot exceed original transaction amount (100.00)")


def test_a_refund_above_the_remaining_amount_is_rejected_and_changes_nothing(deps, store, payment,
                                                                            rejection):
    refund(deps, payment, "80")
    assert rejection(payment, "25") == "Refund amount (25.00) exceeds remaining refundable amount (20.00)"
    assert [r.amount for r in store.refunds_of(payment)] == [Decimal("80.00")]
    assert store.get(payment).status is Status.CAPTURED


def test_a_partial_refund_of_a_method_without_partial_refunds_is_rejected(store, rejection, settled):
    payment = store.seed(transaction(method=FULL_REFUND_ONLY))
    assert rejection(payment, "30") == (
        "Partial refunds are not supported for payment method card-full-refund-only")
    assert settled(payment, "100").status is Status.CAPTURED


def test_an_amount_finer_than_the_currency_is_a_field_error(deps, store):
    payment = store.seed(transaction(currency="JPY", amount="1000"))
    with pytest.raises(FieldErrors) as caught:
        refund(deps, payment, "1.5")
    assert caught.value.errors == {"Amount": ["Amount has more decimal places than JPY allows (0)"]}


def test_the_rules_read_the_original_under_a_lock(payment, store, rejection):
    rejection(payment, "150")
    assert store.locked == [payment.id]


def test_the_interfaces_example_30_and_50_of_100_are_refunded_then_25_is_rejected(store, payment,
                                                                                 rejection, settled):
    assert settled(payment, "30").status is Status.CAPTURED
    assert settled(payment, "50").status is Status.CAPTURED
    assert rejection(payment, "25") == "Refund amount (25.00) exceeds remaining refundable amount (20.00)"
    assert store.get(payment).status is Status.CAPTURED


def test_a_pending_refund_holds_its_amount(provider, payment, rejection, settled):
    provider.will_answer("refund", Outcome(Status.PENDING, "fake_r1", "PROCESSING"))
    assert settled(payment, "60").status is Status.PENDING
    assert rejection(payment, "50") == "Refund amount (50.00) exceeds remaining refundable amount (40.00)"


@pytest.mark.parametrize("answer", [Status.DECLINED, Status.FAILED])
def test_a_declined_or_failed_refund_frees_its_amount(store, provider, payment, settled, answer):
    provider.will_answer("refund", Outcome(answer, "fake_r1", "NO", decline_reason="Declined By Bank"))
    assert settled(payment, "100").status is answer
    assert settled(payment, "100").status is Status.CAPTURED
    assert store.get(payment).status is Status.REFUNDED


def test_a_refund_that_completes_the_amount_moves_the_original_to_refunded(store, payment, settled):
    first = settled(payment, "30")
    assert store.get(payment).status is Status.CAPTURED
    last = settled(payment, "70")
    assert store.get(payment).status is Status.REFUNDED
    # The worker asked the provider, so the worker is the moves' source.
    assert store.history_of(payment) == [(Status.CAPTURED, Status.REFUNDED, "worker")]
    assert store.history_of(last) == [(None, Status.PENDING, CALLER.actor),
                                      (Status.PENDING, Status.CAPTURED, "worker")]
    assert store.webhooks_of(payment) == []
    assert store.webhooks_of(first) == store.webhooks_of(last) == ["refund.captured"]


def test_the_provider_is_asked_only_by_the_worker_after_the_pending_refund_is_committed(deps, store, provider,
                                                                                        payment):
    created = refund(deps, payment, "10")
    assert (created.status, created.provider_transaction_id) == (Status.PENDING, None)
    assert provider.calls == []  # not on the request's thread
    assert store.get(created).provider_check_at == NOW  # handed to the workers, due at once
    assert settlement.run_due_provider_checks(deps) == 1
    assert provider.calls == [ProviderCall("refund", created.tx_no, write_units_open=0,
                                           committed_status=Status.PENDING)]


def test_an_unavailable_provider_leaves_the_refund_pending_with_a_check_time(deps, store, provider,
                                                                            payment):
    provider.latency = timedelta(seconds=10)
    provider.will_answer("refund", ProviderUnavailable("connect timeout"))
    created = refund(deps, payment, "10")
    assert provider.calls == []
    assert settlement.run_due_provider_checks(deps) == 1
    stored = store.get(created)
    assert (stored.status, stored.provider_message) == (Status.PENDING, "connect timeout")
    assert stored.provider_check_at == NOW + timedelta(seconds=10) + settlement.CLAIM_FOR
    assert store.webhooks_of(created) == []


def test_a_refund_takes_the_originals_details_and_is_audited(deps, store, payment):
    created = refund(deps, payment, "10", reason="Damaged", description="Box crushed")
    stored = store.get(created)
    assert (stored.original_tx_no, stored.currency, stored.reference, stored.callback_url) == (
        payment.tx_no, "EUR", payment.reference, payment.callback_url)
    assert (stored.udf1, stored.udf2) == ("Damaged", "Box crushed")
    [audit] = store.committed.audit_log
    assert (audit.action, audit.target, audit.amount, audit.actor) == (
        "refund.create", created.tx_no, Decimal("10"), CALLER.actor)


def test_a_refund_whose_creation_hook_fails_is_not_kept(deps, store, provider, payment):
    def link(uow, refund):
        raise LookupError("idempotency record gone")

    with pytest.raises(LookupError):
        refunds.refund(deps, CALLER, RefundRequest(payment.tx_no, Decimal("10")), on_created=link)
    assert store.refunds_of(payment) == []
    assert provider.calls == []


def test_a_refund_its_provider_answers_later_is_handed_to_the_workers_once(deps, store, payment):
    """A provider behind a network: the committed Pending refund is handed over (the workers are
    told: NOTIFY on PostgreSQL), once, after its commit."""
    handed = []
    deps.hand_over = handed.append
    created = refund(deps, payment, "10")
    assert [tx.tx_no for tx in handed] == [created.tx_no]
    assert store.get(created).status is Status.PENDING  # committed before it was handed over


def test_a_refund_its_provider_answers_in_process_wakes_no_worker(deps, store, provider, payment):
    """The simulator answers inside the request: no worker is told of a call it would find
    already made (its provider call stays due, for the poll, only if the answer is lost)."""
    handed = []
    deps.hand_over = handed.append
    provider.in_process = True
    created = refund(deps, payment, "10")
    assert handed == []
    assert created.status is Status.CAPTURED
