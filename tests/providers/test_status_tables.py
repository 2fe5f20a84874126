"""Each connector's status table, row by row: only explicit success and failure words move a transaction."""
from __future__ import annotations

import pytest

from app.payments.model import COMMON_DECLINE_REASONS, Status
from app.providers import paystack, stripe

P, C, D, F, A, B = (Status.PENDING, Status.CAPTURED, Status.DECLINED, Status.FAILED, Status.AUTHORIZED,
                    Status.CHARGEBACK)

# What each provider word must mean, written out here rather than read from the module.
PAYSTACK_ROWS = [
    ("transaction", "success", C, None),
    ("transaction", "failed", D, "Declined By Bank"),
    ("transaction", "abandoned", P, None),
    ("transaction", "ongoing", P, None),
    ("transaction", "pending", P, None),
    ("transaction", "processing", P, None),
    ("transaction", "queued", P, None),
    ("refund", "pending", P, None),
    ("refund", "processing", P, None),
    ("refund", "processed", C, None),
    ("refund", "failed", F, "Provider Error"),
    ("transfer", "pending", P, None),
    ("transfer", "received", P, None),
    ("transfer", "otp", P, None),
    ("transfer", "success", C, None),
    ("transfer", "reversed", D, "Declined By Bank"),
    ("transfer", "failed", F, "Provider Error"),
    ("transfer", "abandoned", D, "Transaction Expired"),
    ("transfer", "blocked", F, "Provider Error"),
    ("transfer", "rejected", F, "Provider Error"),
]

STRIPE_ROWS = [
    ("checkout_session", "open", P, None),
    ("checkout_session", "expired", D, "Transaction Expired"),
    ("checkout_payment", "paid", C, None),
    ("checkout_payment", "unpaid", P, None),
    ("payment_intent", "requires_payment_method", P, None),
    ("payment_intent", "requires_confirmation", P, None),
    ("payment_intent", "requires_action", P, None),
    ("payment_intent", "processing", P, None),
    ("payment_intent", "requires_capture", A, None),
    ("payment_intent", "succeeded", C, None),
    ("payment_intent", "canceled", D, "Payment Cancelled By User"),
    ("refund", "pending", P, None),
    ("refund", "requires_action", P, None),
    ("refund", "succeeded", C, None),
    ("refund", "failed", F, "Provider Error"),
    ("refund", "canceled", F, "Provider Error"),
    ("dispute", "needs_response", B, None),
    ("dispute", "under_review", B, None),
    ("dispute", "lost", B, None),
]


def test_every_paystack_row_is_tested():
    assert {(kind, word) for kind, word, *_ in PAYSTACK_ROWS} == set(paystack.STATUSES)


def test_every_stripe_row_is_tested():
    assert {(kind, word) for kind, word, *_ in STRIPE_ROWS} == set(stripe.STATUSES)


@pytest.mark.parametrize("kind, word, status, reason", PAYSTACK_ROWS)
def test_paystack_row(kind, word, status, reason):
    outcome = paystack.outcome(kind, word, message="Paystack's words")

    assert (outcome.status, outcome.decline_reason) == (status, reason)
    assert (outcome.provider_status, outcome.provider_message) == (word, "Paystack's words")


@pytest.mark.parametrize("kind, word, status, reason", STRIPE_ROWS)
def test_stripe_row(kind, word, status, reason):
    outcome = stripe.outcome(kind, word, message="Stripe's words")

    assert (outcome.status, outcome.decline_reason) == (status, reason)
    assert (outcome.provider_status, outcome.provider_message) == (word, "Stripe's words")


@pytest.mark.parametrize("connector, kind, word", [
    (paystack, "transaction", "reversed"),  # refunded or charged back: their own events say so
    (paystack, "transaction", "Success!"),
    (paystack, "transfer", "otp_expired"),
    (paystack, "refund", "needs-attention"),
    (stripe, "payment_intent", "requires_source"),
    (stripe, "dispute", "warning_needs_response"),
    (stripe, "dispute", "won"),
    (stripe, "refund", None),
])
def test_a_word_the_table_does_not_know_stays_pending_with_the_providers_words(connector, kind, word):
    outcome = connector.outcome(kind, word, message="whatever the provider said")

    assert (outcome.status, outcome.decline_reason) == (Status.PENDING, None)
    assert (outcome.provider_status, outcome.provider_message) == (word, "whatever the provider said")


@pytest.mark.parametrize("reason", sorted({r for *_, r in PAYSTACK_ROWS + STRIPE_ROWS if r}
                                          | set(paystack.DECLINE_REASONS.values())
                                          | set(stripe.DECLINE_CODES.values())))
def test_every_decline_reason_is_one_of_the_interfaces(reason):
    assert reason in COMMON_DECLINE_REASONS


@pytest.mark.parametrize("code, text, reason", [
    (None, "Insufficient Funds", "Insufficient Funds"),
    (None, "insufficient funds.", "Insufficient Funds"),
    ("insufficient_funds", "Not sufficient funds", "Insufficient Funds"),
    ("expired_card", "Expired Card", "Card Expired"),
    (None, "Suspected Fraud", "Suspected Fraud"),
    (None, "Exceeds Withdrawal Frequency Limit", "Daily Limit Exceeded"),
    (None, "Some words Paystack has not used before", None),
    (None, None, None),
])
def test_paystack_decline_reasons_come_from_its_code_or_text(code, text, reason):
    assert paystack.decline_reason(code, text) == reason


def test_a_declined_paystack_charge_without_a_known_reason_is_declined_by_bank():
    outcome = paystack.transaction_outcome({"status": "failed", "gateway_response": "Transaction failed"})

    assert (outcome.status, outcome.decline_reason) == (Status.DECLINED, "Declined By Bank")


@pytest.mark.parametrize("decline_code, code, reason", [
    ("insufficient_funds", "card_declined", "Insufficient Funds"),
    ("fraudulent", "card_declined", "Suspected Fraud"),
    (None, "incorrect_cvc", "Invalid Card Details"),
    ("card_velocity_exceeded", "card_declined", "Daily Limit Exceeded"),
    ("try_again_later", "card_declined", "Declined By Bank"),  # unknown decline code: the code's reason
    ("try_again_later", "something_new", "Payment Cancelled By User"),  # unknown both: the row's default
])
def test_stripe_decline_reasons_come_from_decline_code_then_code(decline_code, code, reason):
    outcome = stripe.payment_intent_outcome({
        "id": "pi_1", "status": "canceled",
        "last_payment_error": {"decline_code": decline_code, "code": code, "message": "Your card was declined."}})

    assert (outcome.status, outcome.decline_reason) == (Status.DECLINED, reason)
