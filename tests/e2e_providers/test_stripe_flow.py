"""Stripe end to end: the real stripe package against a fake Stripe over HTTP, Stripe-signed webhooks,
and Paydesk's own webhooks to the merchant. Sandbox mode, both databases."""
from __future__ import annotations

import pytest
import requests
from standardwebhooks.webhooks import Webhook

from app.payments import cancel, expiry, settlement
from app.payments.model import CancelRejected

from . import bodies
from .conftest import (
    STRIPE_SECRET,
    STRIPE_WEBHOOK_SECRET,
    history,
    on_request,
    outgoing,
    payment_request,
    post_webhook,
    provider_events,
)

RECEIVED = {"received": True}


def create_payment(sandbox, deps, stripe_fake, callback_url: str, amount=100.50) -> tuple[str, dict]:
    """POST /api/v1/transactions with stripe-card in EUR, then a worker's round opens it at Stripe;
    the fake answers with an open session."""
    request = payment_request("stripe-card", "EUR", amount, callback_url)
    stripe_fake.on("POST", "/v1/checkout/sessions", {})

    def open_session(seen):
        form = seen.form
        stripe_fake.on("POST", "/v1/checkout/sessions", bodies.session(
            form["client_reference_id"], int(form["line_items[0][price_data][unit_amount]"]),
            reference=form["metadata[reference]"]))

    on_request(stripe_fake, "POST", "/v1/checkout/sessions", open_session)
    calls_before = len(stripe_fake.seen)
    created = sandbox.post("/transactions", request)
    assert created.status_code == 200, created.text
    # The request answered Pending without calling Stripe: a worker opens the session.
    assert created.json()["status"] == "PENDING"
    assert len(stripe_fake.seen) == calls_before
    assert settlement.run_due_provider_checks(deps) == 1
    return created.json()["transactionId"], request


def test_session_checkout_completed_partial_refund_dispute_and_merchant_webhooks(
        server, sandbox, merchant, deps, stripe_account, stripe_fake, receiver, deliver):
    tx_no, request = create_payment(sandbox, deps, stripe_fake, receiver.url)

    [created] = stripe_fake.requests_to("POST", "/v1/checkout/sessions")
    assert created.header("Authorization") == f"Bearer {STRIPE_SECRET}"
    assert created.header("Idempotency-Key") == tx_no
    assert created.header("Content-Type") == "application/x-www-form-urlencoded"
    assert created.form == {
        "mode": "payment",
        "client_reference_id": tx_no,
        "line_items[0][quantity]": "1",
        "line_items[0][price_data][currency]": "eur",
        "line_items[0][price_data][unit_amount]": "10050",
        "line_items[0][price_data][product_data][name]": "PAYDESK E2E",
        "metadata[txNo]": tx_no,
        "metadata[reference]": request["reference"],
        "payment_intent_data[metadata][txNo]": tx_no,
        "success_url": f"{server.url}/checkout/{tx_no}/return",
        "cancel_url": f"{server.url}/checkout/{tx_no}/return",
        "customer_email": "ada@example.com",
    }
    status = sandbox.status(tx_no)
    assert (status["Status"], status["ProviderTransactionId"], status["ProviderStatus"]) == (
        "Pending", bodies.SESSION_ID, "open")

    page = requests.get(f"{server.url}/checkout/{tx_no}", allow_redirects=False, timeout=10)
    assert (page.status_code, page.headers["Location"]) == (303, bodies.SESSION_URL)

    # checkout.session.completed, signed with the endpoint's whsec_ secret.
    completed = bodies.stripe_event("checkout.session.completed", bodies.session(
        tx_no, 10050, "complete", "paid", bodies.INTENT_ID), event_id="evt_completed")
    answer = post_webhook(stripe_account, *bodies.stripe_signed(completed, STRIPE_WEBHOOK_SECRET))
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    status = sandbox.status(tx_no)
    assert (status["Status"], status["ProviderStatus"], status["ProviderMessage"]) == (
        "Captured", "paid", "Checkout Session complete")
    assert history(deps, tx_no)[1:] == [("Pending", "Captured", "stripe webhook", "Checkout Session complete")]
    [event] = provider_events(deps, stripe_account)
    assert (event["event_type"], event["event_id"], event["result"], event["tx_no"]) == (
        "checkout.session.completed", "evt_completed", "applied", tx_no)

    # A partial refund: answered Pending at once; a worker then reads the PaymentIntent from the
    # session, then POST /v1/refunds.
    stripe_fake.on("GET", f"/v1/checkout/sessions/{bodies.SESSION_ID}", bodies.session(
        tx_no, 10050, "complete", "paid", bodies.payment_intent(tx_no, 10050)))

    def pending_refund(seen):
        stripe_fake.on("POST", "/v1/refunds", bodies.stripe_refund(
            seen.form["metadata[txNo]"], tx_no, int(seen.form["amount"]), "pending"))

    on_request(stripe_fake, "POST", "/v1/refunds", pending_refund)
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 25})
    assert refund.status_code == 200, refund.text
    refund_tx_no = refund.json()["refundTxNo"]
    assert refund.json() == {
        "refundTxNo": refund_tx_no, "originalTxNo": tx_no, "amount": 25, "currency": "EUR",
        "status": "Pending", "message": "Refund is being processed", "providerRefundId": None,
        "createdAt": refund.json()["createdAt"]}
    assert stripe_fake.requests_to("GET", f"/v1/checkout/sessions/{bodies.SESSION_ID}") == []
    assert stripe_fake.requests_to("POST", "/v1/refunds") == []
    assert settlement.run_due_provider_checks(deps) == 1  # the worker submits it
    submitted = sandbox.status(refund_tx_no)
    assert (submitted["Status"], submitted["ProviderMessage"], submitted["ProviderTransactionId"]) == (
        "Pending", "Refund pending", bodies.REFUND_ID)
    [read] = stripe_fake.requests_to("GET", f"/v1/checkout/sessions/{bodies.SESSION_ID}")
    assert read.query == {"expand[0]": ["payment_intent"]}
    [posted] = stripe_fake.requests_to("POST", "/v1/refunds")
    assert posted.header("Idempotency-Key") == refund_tx_no
    assert posted.form == {"payment_intent": bodies.INTENT_ID, "amount": "2500",
                           "metadata[txNo]": refund_tx_no, "metadata[originalTxNo]": tx_no}

    updated = bodies.stripe_event("refund.updated", bodies.stripe_refund(refund_tx_no, tx_no, 2500, "succeeded"),
                                  event_id="evt_refund")
    answer = post_webhook(stripe_account, *bodies.stripe_signed(updated, STRIPE_WEBHOOK_SECRET))
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    refunded = sandbox.status(refund_tx_no)
    assert (refunded["Status"], refunded["ProviderTransactionId"], refunded["ProviderMessage"]) == (
        "Captured", bodies.REFUND_ID, "Refund succeeded")
    assert sandbox.status(tx_no)["Status"] == "Captured"  # partial

    # A dispute names only the PaymentIntent: Paydesk reads its metadata.txNo at Stripe.
    stripe_fake.on("GET", f"/v1/payment_intents/{bodies.INTENT_ID}", bodies.payment_intent(tx_no, 10050))
    disputed = bodies.stripe_event("charge.dispute.created", bodies.dispute(10050), event_id="evt_dispute")
    answer = post_webhook(stripe_account, *bodies.stripe_signed(disputed, STRIPE_WEBHOOK_SECRET))
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    assert len(stripe_fake.requests_to("GET", f"/v1/payment_intents/{bodies.INTENT_ID}")) == 1
    status = sandbox.status(tx_no)
    assert (status["Status"], status["ProviderStatus"], status["ProviderMessage"]) == (
        "Chargeback", "needs_response", "Dispute dp_1QeXyZ2eZvKYlo2C9ghi0000 opened: fraudulent")
    assert history(deps, tx_no)[-1][:3] == ("Captured", "Chargeback", "stripe webhook")
    assert [e["result"] for e in provider_events(deps, stripe_account)] == ["applied"] * 3

    # Every POST to Stripe carried its Idempotency-Key.
    posts = [s for s in stripe_fake.seen if s.method == "POST"]
    assert [s.header("Idempotency-Key") for s in posts] == [tx_no, refund_tx_no]

    # The dispute's own webhook (transactionType Dispute) goes with the payment's Chargeback.
    assert deliver() == 4
    deliveries = receiver.wait_for(4)
    verified = [Webhook(merchant.sandbox_webhook_secret).verify(d.body, d.headers) for d in deliveries]
    dispute_no = next(p["txNo"] for p in verified if p["transactionType"] == "Dispute")
    assert sorted((p["txNo"], p["status"], p["transactionType"]) for p in verified) == sorted([
        (tx_no, "Captured", "Payment"), (refund_tx_no, "Captured", "Refund"), (tx_no, "Chargeback", "Payment"),
        (dispute_no, "needs_response", "Dispute")])
    assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.captured", "payment.chargeback",
                                                     "dispute.needs_response"]
    refund_payload = next(p for p in verified if p["txNo"] == refund_tx_no)
    assert refund_payload == {
        "txNo": refund_tx_no, "status": "Captured", "amount": 25, "currency": "EUR",
        "transactionType": "Refund", "originalTxNo": tx_no, "providerTransactionId": bodies.REFUND_ID,
        "providerStatus": "succeeded", "providerMessage": "Refund succeeded",
        "createdAt": refund.json()["createdAt"]}


def test_a_cancel_the_worker_takes_to_stripe_expires_the_open_session_and_declines_the_payment(
        server, sandbox, merchant, deps, stripe_account, stripe_fake, receiver):
    tx_no, _request = create_payment(sandbox, deps, stripe_fake, receiver.url, amount=40)
    path = f"/v1/checkout/sessions/{bodies.SESSION_ID}"
    stripe_fake.on("GET", path, bodies.session(tx_no, 4000), bodies.session(tx_no, 4000, "expired"))
    stripe_fake.on("POST", f"{path}/expire", bodies.session(tx_no, 4000, "expired"))

    requested = cancel.cancel_transaction(deps, stripe_account.caller, tx_no)
    # Requested: Stripe is asked by the worker, not on the caller's thread.
    assert (requested.status.value, requested.provider_message) == ("Pending", cancel.REQUESTED)
    assert stripe_fake.requests_to("POST", f"{path}/expire") == []
    assert settlement.run_due_provider_checks(deps) == 1

    [expire] = stripe_fake.requests_to("POST", f"{path}/expire")
    assert expire.header("Idempotency-Key") == f"{tx_no}-expire"
    assert expire.body == b""
    assert [(s.method, s.path) for s in stripe_fake.seen] == [
        ("POST", "/v1/checkout/sessions"), ("GET", path), ("POST", f"{path}/expire"), ("GET", path)]
    status = sandbox.status(tx_no)
    assert (status["Status"], status["DeclineReason"], status["ProviderStatus"]) == (
        "Declined", "Payment Cancelled By User", "expired")
    assert history(deps, tx_no)[1:] == [("Pending", "Declined", "worker", "Checkout Session expired")]
    assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.declined"]
    # Declined: the checkout URL no longer sends anyone to Stripe, and a second cancel is refused.
    page = requests.get(f"{server.url}/checkout/{tx_no}", allow_redirects=False, timeout=10)
    assert page.status_code == 200
    try:
        cancel.cancel_transaction(deps, stripe_account.caller, tx_no)
    except CancelRejected as refused:
        assert str(refused) == "Only Pending or Authorized transactions can be cancelled. Current status: Declined"
    else:
        raise AssertionError("a second cancel was accepted")
    assert len(stripe_fake.requests_to("POST", f"{path}/expire")) == 1


def created_long_ago(deps, tx_no: str) -> None:
    """Make the payment older than the expiry window (only this one: the others are minutes old)."""
    from datetime import timedelta

    from sqlalchemy import update

    from app.store.tables import transactions
    from app.util import utcnow
    with deps.uow() as uow:
        uow.conn.execute(update(transactions).where(transactions.c.tx_no == tx_no)
                         .values(created_at=utcnow() - deps.pending_expiry - timedelta(minutes=1)))
        uow.commit()


@pytest.mark.parametrize("paid_meanwhile", [False, True], ids=["unpaid", "paid-meanwhile"])
def test_expiry_expires_the_session_first_and_respects_a_payment_made_meanwhile(
        sandbox, deps, stripe_account, stripe_fake, paid_meanwhile):
    tx_no, _request = create_payment(sandbox, deps, stripe_fake, "https://merchant.example/hooks", amount=40)
    path = f"/v1/checkout/sessions/{bodies.SESSION_ID}"
    if paid_meanwhile:
        stripe_fake.on("GET", path, bodies.session(tx_no, 4000, "complete", "paid",
                                                   bodies.payment_intent(tx_no, 4000)))
    else:
        stripe_fake.on("GET", path, bodies.session(tx_no, 4000), bodies.session(tx_no, 4000, "expired"))
        stripe_fake.on("POST", f"{path}/expire", bodies.session(tx_no, 4000, "expired"))
    created_long_ago(deps, tx_no)

    assert expiry.expire_pending(deps) == 1

    status = sandbox.status(tx_no)
    expires = stripe_fake.requests_to("POST", f"{path}/expire")
    if paid_meanwhile:
        assert expires == []
        assert (status["Status"], status["DeclineReason"]) == ("Captured", None)
        assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.captured"]
    else:
        assert [e.header("Idempotency-Key") for e in expires] == [f"{tx_no}-expire"]
        assert (status["Status"], status["DeclineReason"]) == ("Declined", "Transaction Expired")
        assert history(deps, tx_no)[1:] == [("Pending", "Declined", "worker", "Transaction expired before completion")]
        assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.declined"]
    assert expiry.expire_pending(deps) == 0
