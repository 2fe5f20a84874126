"""Disputes from provider webhooks, end to end: Stripe's charge.dispute.* and Paystack's
charge.dispute.* events, signed as the providers sign them, open and move dispute records; the
payment moves with them; a loss takes its amount from what can be refunded; every change sends
the merchant a Dispute webhook; replays change nothing. Both databases."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.payments.model import Caller, Mode
from app.store import tables

from . import bodies
from .conftest import PAYSTACK_SECRET, STRIPE_WEBHOOK_SECRET, history, outgoing, post_webhook, provider_events
from .test_paystack_flow import create_payment as create_paystack_payment
from .test_stripe_flow import create_payment as create_stripe_payment

RECEIVED = {"received": True}
DUE_AT = datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC)
DUE = int(DUE_AT.timestamp())  # as Stripe's evidence_details.due_by
DISPUTE_ID = "dp_1QeXyZ2eZvKYlo2C9ghi0000"


def stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver, amount=100.50) -> str:
    """A sandbox Stripe payment, paid (checkout.session.completed); Stripe's PaymentIntent names it."""
    tx_no, _ = create_stripe_payment(sandbox, deps, stripe_fake, receiver.url, amount)
    minor = int(round(amount * 100))
    completed = bodies.stripe_event("checkout.session.completed", bodies.session(
        tx_no, minor, "complete", "paid", bodies.INTENT_ID), event_id=f"evt_paid_{tx_no}")
    assert post_webhook(stripe_account, *bodies.stripe_signed(completed, STRIPE_WEBHOOK_SECRET)).status_code == 200
    stripe_fake.on("GET", f"/v1/payment_intents/{bodies.INTENT_ID}", bodies.payment_intent(tx_no, minor))
    return tx_no


def stripe_dispute_event(account, event_type: str, amount: int, status: str, event_id: str, **fields):
    """Post a signed charge.dispute.* event; its answer."""
    dispute = {**bodies.dispute(amount, status), "evidence_details": {"due_by": DUE, "submission_count": 0},
               **fields}
    event = bodies.stripe_event(event_type, dispute, event_id=event_id)
    return post_webhook(account, *bodies.stripe_signed(event, STRIPE_WEBHOOK_SECRET))


def disputes_of(deps, tx_no: str) -> list[dict]:
    """The payment's dispute rows, oldest first."""
    with deps.uow(write=False) as uow:
        rows = uow.conn.execute(
            tables.disputes.select().join(tables.transactions, tables.transactions.c.id == tables.disputes.c.payment_id)
            .where(tables.transactions.c.tx_no == tx_no).order_by(tables.disputes.c.id)).mappings().all()
    return [dict(row) for row in rows]


def dispute_moves(deps, dispute_id: int) -> list[tuple]:
    """(from, to, source) of the dispute's history."""
    with deps.uow(write=False) as uow:
        return [(row["from_status"], row["to_status"], row["source"]) for row in uow.disputes.history(dispute_id)]


def dispute_webhooks(deps, tx_no: str) -> list[dict]:
    return [payload for kind, payload in outgoing(deps, tx_no) if kind.startswith("dispute.")]


def test_a_stripe_dispute_opens_goes_under_review_and_is_won(
        sandbox, deps, stripe_fake, stripe_account, receiver):
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)

    answer = stripe_dispute_event(stripe_account, "charge.dispute.created", 10050, "needs_response", "evt_d1")
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    [row] = disputes_of(deps, tx_no)
    assert (row["provider"], row["provider_dispute_id"], row["amount_minor"], row["currency"], row["reason"],
            row["status"], row["due_by"].replace(tzinfo=UTC)) == (
        "stripe", DISPUTE_ID, 10050, "EUR", "fraudulent", "needs_response", DUE_AT)
    status = sandbox.status(tx_no)
    assert (status["Status"], status["ProviderStatus"], status["ProviderMessage"]) == (
        "Chargeback", "needs_response", f"Dispute {DISPUTE_ID} opened: fraudulent")
    assert history(deps, tx_no)[-1][:3] == ("Captured", "Chargeback", "stripe webhook")
    [opened] = dispute_webhooks(deps, tx_no)
    assert opened == {
        "txNo": row["dispute_no"], "status": "needs_response", "amount": 100.5, "currency": "EUR",
        "transactionType": "Dispute", "originalTxNo": tx_no, "providerTransactionId": DISPUTE_ID,
        "providerStatus": "needs_response", "providerMessage": "fraudulent",
        "dueBy": "2026-11-30T23:59:59.000Z", "evidenceSubmittedAt": None, "createdAt": opened["createdAt"]}

    stripe_dispute_event(stripe_account, "charge.dispute.updated", 10050, "under_review", "evt_d2")
    stripe_dispute_event(stripe_account, "charge.dispute.closed", 10050, "won", "evt_d3")
    assert disputes_of(deps, tx_no)[0]["status"] == "won"
    assert dispute_moves(deps, row["id"]) == [
        (None, "needs_response", "stripe webhook"), ("needs_response", "under_review", "stripe webhook"),
        ("under_review", "won", "stripe webhook")]
    # Won: the money is back, the payment Captured again and refundable in full.
    assert sandbox.status(tx_no)["Status"] == "Captured"
    assert history(deps, tx_no)[-1][:3] == ("Chargeback", "Captured", "stripe webhook")
    assert [p["status"] for p in dispute_webhooks(deps, tx_no)] == ["needs_response", "under_review", "won"]
    assert [e["result"] for e in provider_events(deps, stripe_account)][-3:] == ["applied"] * 3

    # funds_reinstated after the win says nothing new.
    answer = stripe_dispute_event(stripe_account, "charge.dispute.funds_reinstated", 10050, "won", "evt_d4")
    assert answer.status_code == 200
    assert provider_events(deps, stripe_account)[-1]["result"] == "no change"
    assert len(dispute_webhooks(deps, tx_no)) == 3


def test_replayed_dispute_events_change_nothing(sandbox, deps, stripe_fake, stripe_account, receiver):
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)
    dispute = {**bodies.dispute(10050), "evidence_details": {"due_by": DUE}}
    signed = bodies.stripe_signed(bodies.stripe_event("charge.dispute.created", dispute, event_id="evt_r"),
                                  STRIPE_WEBHOOK_SECRET)
    for _ in range(2):
        assert post_webhook(stripe_account, *signed).status_code == 200
    # The same event sent again with another id (Stripe retries with the same id; a second
    # endpoint or a resend may not) is no change either.
    stripe_dispute_event(stripe_account, "charge.dispute.created", 10050, "needs_response", "evt_r2")
    stripe_dispute_event(stripe_account, "charge.dispute.funds_withdrawn", 10050, "needs_response", "evt_r3")
    assert [e["result"] for e in provider_events(deps, stripe_account)][-4:] == [
        "applied", "duplicate", "no change", "no change"]
    assert len(disputes_of(deps, tx_no)) == 1
    assert len(dispute_webhooks(deps, tx_no)) == 1
    assert [h[1] for h in history(deps, tx_no)].count("Chargeback") == 1


def test_an_inquiry_is_not_a_chargeback(sandbox, deps, stripe_fake, stripe_account, receiver):
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)
    stripe_dispute_event(stripe_account, "charge.dispute.created", 10050, "warning_needs_response", "evt_w")
    assert provider_events(deps, stripe_account)[-1]["result"] == "no change"
    assert disputes_of(deps, tx_no) == []
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_a_dispute_under_review_may_need_a_response_again(sandbox, deps, stripe_fake, stripe_account, receiver):
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)
    stripe_dispute_event(stripe_account, "charge.dispute.created", 10050, "under_review", "evt_u1")
    stripe_dispute_event(stripe_account, "charge.dispute.updated", 10050, "needs_response", "evt_u2")
    [row] = disputes_of(deps, tx_no)
    assert dispute_moves(deps, row["id"]) == [(None, "under_review", "stripe webhook"),
                                              ("under_review", "needs_response", "stripe webhook")]
    assert sandbox.status(tx_no)["Status"] == "Chargeback"


def test_a_partly_lost_dispute_leaves_the_rest_refundable_and_no_more(
        sandbox, deps, stripe_fake, stripe_account, receiver):
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)
    stripe_dispute_event(stripe_account, "charge.dispute.created", 3000, "needs_response", "evt_p1")
    refused = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10})
    assert (refused.status_code, refused.json()) == (400, {
        "error": "Transaction must be in Captured status to be refunded. Current status: Chargeback"})
    stripe_dispute_event(stripe_account, "charge.dispute.closed", 3000, "lost", "evt_p2")
    [row] = disputes_of(deps, tx_no)
    assert row["status"] == "lost"
    # 100.50 less the 30.00 the customer got back through the dispute.
    assert sandbox.status(tx_no)["Status"] == "Captured"
    refused = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 70.51})
    assert (refused.status_code, refused.json()) == (400, {
        "error": "Refund amount (70.51) exceeds remaining refundable amount (70.50)"})
    assert [p["status"] for p in dispute_webhooks(deps, tx_no)] == ["needs_response", "lost"]


def test_a_dispute_lost_in_full_leaves_the_payment_charged_back(
        sandbox, deps, stripe_fake, stripe_account, receiver):
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)
    stripe_dispute_event(stripe_account, "charge.dispute.created", 10050, "needs_response", "evt_f1")
    stripe_dispute_event(stripe_account, "charge.dispute.closed", 10050, "lost", "evt_f2")
    assert disputes_of(deps, tx_no)[0]["status"] == "lost"
    assert sandbox.status(tx_no)["Status"] == "Chargeback"
    assert [h[1] for h in history(deps, tx_no)][-1] == "Chargeback"


# Paystack


def paystack_dispute_event(account, event: str, tx_no: str, status: str, resolution=None, due="2026-12-01T10:00:00.000Z"):
    """Post a signed charge.dispute.* event about the payment; its answer."""
    data = {"id": 2867, "refund_amount": 1050050, "currency": "NGN", "status": status,
            "resolution": resolution, "domain": "live", "category": "chargeback",
            "transaction": bodies.paystack_transaction(tx_no, 1050050), "transaction_reference": None,
            "dueAt": due, "resolvedAt": None, "evidence": None, "attachments": None, "note": None,
            "history": [], "messages": [], "createdAt": "2026-11-24T10:00:00.000Z",
            "updatedAt": "2026-11-24T10:00:00.000Z"}
    return post_webhook(account, *bodies.paystack_signed({"event": event, "data": data}, PAYSTACK_SECRET))


def paystack_captured(live, server, deps, paystack_fake, paystack_account, receiver) -> str:
    tx_no, _ = create_paystack_payment(live, server, deps, paystack_fake, receiver)
    paid = post_webhook(paystack_account, *bodies.paystack_signed(bodies.charge_success(tx_no, 1050050),
                                                                  PAYSTACK_SECRET))
    assert paid.status_code == 200
    assert live.status(tx_no)["Status"] == "Captured"
    return tx_no


@pytest.mark.parametrize("resolution, final, payment_after", [
    ("declined", "won", "Captured"), ("merchant-accepted", "accepted", "Chargeback"),
    ("auto-accepted", "lost", "Chargeback")])
def test_a_paystack_dispute_opens_is_reminded_and_resolves(
        live, server, deps, paystack_fake, paystack_account, receiver, resolution, final, payment_after):
    tx_no = paystack_captured(live, server, deps, paystack_fake, paystack_account, receiver)
    answer = paystack_dispute_event(paystack_account, "charge.dispute.create", tx_no, "awaiting-merchant-feedback")
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    [row] = disputes_of(deps, tx_no)
    assert (row["provider"], row["provider_dispute_id"], row["amount_minor"], row["status"], row["reason"]) == (
        "paystack", "2867", 1050050, "needs_response", "chargeback")
    assert live.status(tx_no)["Status"] == "Chargeback"

    # A reminder with a new deadline updates it, and moves nothing.
    paystack_dispute_event(paystack_account, "charge.dispute.remind", tx_no, "awaiting-merchant-feedback",
                           due="2026-12-02T10:00:00.000Z")
    [row] = disputes_of(deps, tx_no)
    assert (row["due_by"].day, row["status"]) == (2, "needs_response")
    assert provider_events(deps, paystack_account)[-1]["detail"] == f"Dispute {row['dispute_no']} details updated"

    paystack_dispute_event(paystack_account, "charge.dispute.resolve", tx_no, "resolved", resolution)
    assert disputes_of(deps, tx_no)[0]["status"] == final
    assert dispute_moves(deps, row["id"]) == [(None, "needs_response", "paystack webhook"),
                                              ("needs_response", final, "paystack webhook")]
    assert live.status(tx_no)["Status"] == payment_after
    assert [p["status"] for p in dispute_webhooks(deps, tx_no)] == ["needs_response", final]


def test_a_dispute_of_another_merchants_payment_is_unknown(
        live, server, deps, paystack_fake, paystack_account, receiver):
    answer = paystack_dispute_event(paystack_account, "charge.dispute.create", "PAY-0000000000000000",
                                    "awaiting-merchant-feedback")
    assert answer.status_code == 200
    assert provider_events(deps, paystack_account)[-1]["result"] == "unknown transaction"
    with deps.uow(write=False) as uow:
        assert uow.disputes.listing(Caller(paystack_account.caller.merchant_id, Mode.LIVE, "t")) == []
