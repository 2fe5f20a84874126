"""A cancel through Paystack or Stripe never asks the provider on the request's thread: the request
answers 202 with the payment as it stands and a worker asks the provider to void it (issue 29).
Against the fake providers over HTTP, both databases."""
from __future__ import annotations

import json
import uuid

from sqlalchemy import select
from standardwebhooks.webhooks import Webhook

from app.payments import settlement
from app.store.tables import audit_log
from tests.providers.fake_provider import Answer

from . import bodies
from .conftest import history, later, outgoing, stored
from .test_paystack_flow import create_payment as create_paystack_payment
from .test_stripe_flow import create_payment as create_stripe_payment

REQUESTED = "Cancellation requested; waiting for the provider"
CANCELLED = "Payment Cancelled By User"
PAYSTACK_AMOUNT_KOBO = 1050050  # create_paystack_payment's 10500.50 NGN


def _cancel(api, tx_no: str, headers=None):
    return api.post(f"/transactions/{tx_no}/cancel", headers=headers)


def _audit(deps, tx_no: str) -> list[tuple]:
    with deps.uow(write=False) as uow:
        rows = uow.conn.execute(select(audit_log).where(audit_log.c.target == tx_no)
                                .order_by(audit_log.c.id)).all()
    return [(row.action, row.actor, json.loads(row.detail)) for row in rows]


def test_a_paystack_payment_is_answered_202_and_declined_by_the_worker_with_its_webhook(
        server, live, merchant, deps, paystack_account, paystack_fake, receiver, deliver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver)
    before = live.status(tx_no)
    calls_before = len(paystack_fake.seen)

    response = _cancel(live, tx_no)

    assert response.status_code == 202, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {**before, "ProviderMessage": REQUESTED}
    assert response.json() == live.status(tx_no)
    assert len(paystack_fake.seen) == calls_before  # Paystack was not asked on the request's thread
    row = stored(deps, tx_no)
    assert row["cancel_requested_at"] is not None
    assert row["provider_check_at"] == row["cancel_requested_at"]  # due now for a worker
    actor = f"api:{merchant.live_token[:12]}"
    assert _audit(deps, tx_no) == [("payment.cancel.requested", actor, {"status": "Pending"})]
    assert outgoing(deps, tx_no) == []

    # The worker asks Paystack (no void: where the payment stands), which has it unpaid.
    verify = f"/transaction/verify/{tx_no}"
    paystack_fake.on("GET", verify, bodies.verify_answer(tx_no, PAYSTACK_AMOUNT_KOBO, "abandoned",
                                                         "The transaction was not completed"))
    assert settlement.run_due_provider_checks(deps) == 1
    assert len(paystack_fake.requests_to("GET", verify)) == 1

    status = live.status(tx_no)
    assert (status["Status"], status["DeclineReason"], status["ProviderStatus"], status["ProviderMessage"]) == (
        "Declined", CANCELLED, "abandoned", "The transaction was not completed")
    assert history(deps, tx_no)[-1] == ("Pending", "Declined", "worker", "The transaction was not completed")
    assert _audit(deps, tx_no)[1:] == [("payment.cancel", "worker", {"status": "Declined"})]
    assert [event for event, _ in outgoing(deps, tx_no)] == ["payment.declined"]
    assert deliver() == 1
    [delivered] = receiver.wait_for(1)
    payload = Webhook(merchant.live_webhook_secret).verify(delivered.body, delivered.headers)
    assert (payload["txNo"], payload["status"], payload["providerStatus"]) == (tx_no, "Declined", "abandoned")
    # Declined now: another cancel is refused with the rule's own words.
    again = _cancel(live, tx_no)
    assert (again.status_code, again.json()) == (
        400, {"error": "Only Pending or Authorized transactions can be cancelled. Current status: Declined"})


def test_a_second_cancel_answers_202_again_and_writes_nothing_and_its_key_replays(
        server, live, deps, paystack_account, paystack_fake, receiver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver)
    key = {"Idempotency-Key": f"cancel-{uuid.uuid4().hex}"}
    first = _cancel(live, tx_no, headers=key)
    row = stored(deps, tx_no)

    replayed = _cancel(live, tx_no, headers=key)
    second = _cancel(live, tx_no)

    assert first.status_code == replayed.status_code == second.status_code == 202
    assert (replayed.content, replayed.headers["Idempotent-Replayed"]) == (first.content, "true")
    assert "Idempotent-Replayed" not in second.headers and second.json() == first.json()
    assert stored(deps, tx_no) == row  # nothing written again
    assert [action for action, _, _ in _audit(deps, tx_no)] == ["payment.cancel.requested"]
    assert history(deps, tx_no) == [(None, "Pending", history(deps, tx_no)[0][2], None)]


def test_a_payment_paid_meanwhile_is_recorded_captured_and_the_cancel_not_applied(
        server, live, deps, paystack_account, paystack_fake, receiver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver)
    assert _cancel(live, tx_no).status_code == 202
    paystack_fake.on("GET", f"/transaction/verify/{tx_no}", bodies.verify_answer(tx_no, PAYSTACK_AMOUNT_KOBO))

    assert settlement.run_due_provider_checks(deps) == 1

    status = live.status(tx_no)
    assert (status["Status"], status["DeclineReason"], status["ProviderStatus"]) == ("Captured", None, "success")
    assert [event for event, _ in outgoing(deps, tx_no)] == ["payment.captured"]
    assert _audit(deps, tx_no)[1:] == [("payment.cancel", "worker", {"status": "Captured"})]
    assert stored(deps, tx_no)["provider_check_at"] is None
    refused = _cancel(live, tx_no)
    assert (refused.status_code, refused.json()) == (
        400, {"error": "Only Pending or Authorized transactions can be cancelled. Current status: Captured"})


def test_an_unreachable_provider_leaves_the_request_outstanding_and_it_is_asked_again(
        server, live, deps, paystack_account, paystack_fake, receiver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver)
    assert _cancel(live, tx_no).status_code == 202
    verify = f"/transaction/verify/{tx_no}"
    paystack_fake.on("GET", verify, Answer(503, {"status": False, "message": "Service unavailable"}),
                     bodies.verify_answer(tx_no, PAYSTACK_AMOUNT_KOBO, "abandoned", "Abandoned"))

    assert settlement.run_due_provider_checks(deps) == 1

    status = live.status(tx_no)
    assert (status["Status"], status["DeclineReason"]) == ("Pending", None)
    assert status["ProviderMessage"] != REQUESTED  # why the provider could not be asked
    row = stored(deps, tx_no)
    assert row["cancel_requested_at"] is not None and row["provider_check_at"] > row["cancel_requested_at"]
    assert settlement.run_due_provider_checks(deps) == 0  # backing off
    assert outgoing(deps, tx_no) == []

    assert settlement.run_due_provider_checks(later(deps, 60)) == 1  # retried once due again
    assert len(paystack_fake.requests_to("GET", verify)) == 2
    assert (live.status(tx_no)["Status"], live.status(tx_no)["DeclineReason"]) == ("Declined", CANCELLED)


def test_an_authorized_stripe_payment_is_picked_up_by_the_worker_and_its_session_expired(
        server, sandbox, deps, stripe_account, stripe_fake, receiver):
    tx_no, _request = create_stripe_payment(sandbox, deps, stripe_fake, receiver.url, amount=40)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Authorized"}).status_code == 200
    before = sandbox.status(tx_no)
    calls_before = len(stripe_fake.seen)

    response = _cancel(sandbox, tx_no)

    assert (response.status_code, response.json()) == (202, {**before, "ProviderMessage": REQUESTED})
    assert len(stripe_fake.seen) == calls_before
    path = f"/v1/checkout/sessions/{bodies.SESSION_ID}"
    stripe_fake.on("GET", path, bodies.session(tx_no, 4000), bodies.session(tx_no, 4000, "expired"))
    stripe_fake.on("POST", f"{path}/expire", bodies.session(tx_no, 4000, "expired"))

    assert settlement.run_due_provider_checks(deps) == 1

    [expire] = stripe_fake.requests_to("POST", f"{path}/expire")
    assert expire.header("Idempotency-Key") == f"{tx_no}-expire"
    status = sandbox.status(tx_no)
    assert (status["Status"], status["DeclineReason"], status["ProviderStatus"]) == (
        "Declined", CANCELLED, "expired")
    assert history(deps, tx_no)[-1] == ("Authorized", "Declined", "worker", "Checkout Session expired")
    assert [event for event, _ in outgoing(deps, tx_no)][-1] == "payment.declined"
