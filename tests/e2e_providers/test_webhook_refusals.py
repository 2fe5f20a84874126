"""Provider webhooks Paydesk must not act on, over HTTP: each is answered as documented, kept in
provider_events with its verdict, and changes no status, history or merchant webhook."""
from __future__ import annotations

import json
import time
import uuid

import pytest
import requests

from app.payments import settlement
from app.payments.model import Mode
from app.providers import accounts
from app.util import utcnow
from tests.providers.fake_provider import Answer

from . import bodies
from .conftest import (
    PAYSTACK_SECRET,
    STRIPE_WEBHOOK_SECRET,
    Account,
    connect,
    history,
    on_request,
    outgoing,
    payment_request,
    post_webhook,
    provider_events,
    stored,
)


RECEIVED = {"received": True}


def snapshot(deps, tx_no: str) -> tuple:
    """Everything a webhook could change about a transaction."""
    row = stored(deps, tx_no)
    return ({k: row[k] for k in ("status", "decline_reason", "provider_transaction_id", "provider_status",
                                 "provider_message", "updated_at")},
            history(deps, tx_no), outgoing(deps, tx_no))


@pytest.fixture
def paystack_payment(live, paystack_account, paystack_fake) -> str:
    """A Pending NGN 10,500.50 payment at Paystack; its txNo."""
    def initialized(seen):
        paystack_fake.on("POST", "/transaction/initialize", bodies.initialize_answer(seen.json["reference"]))

    paystack_fake.on("POST", "/transaction/initialize", {})
    on_request(paystack_fake, "POST", "/transaction/initialize", initialized)
    created = live.post("/transactions", payment_request("paystack-card", "NGN", 10500.50,
                                                         "https://merchant.example/hooks"))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


@pytest.fixture
def stripe_payment(sandbox, stripe_account, stripe_fake) -> str:
    """A Pending EUR 100.50 payment at Stripe; its txNo."""
    def opened(seen):
        stripe_fake.on("POST", "/v1/checkout/sessions", bodies.session(seen.form["client_reference_id"], 10050))

    stripe_fake.on("POST", "/v1/checkout/sessions", {})
    on_request(stripe_fake, "POST", "/v1/checkout/sessions", opened)
    created = sandbox.post("/transactions", payment_request("stripe-card", "EUR", 100.50,
                                                            "https://merchant.example/hooks"))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def completed(tx_no: str, amount: int = 10050, event_id: str = "evt_completed") -> dict:
    return bodies.stripe_event("checkout.session.completed", bodies.session(
        tx_no, amount, "complete", "paid", bodies.INTENT_ID), event_id=event_id)


def assert_refused(deps, account: Account, tx_no: str, answer: requests.Response, before: tuple,
                   error: str, body: bytes) -> None:
    """400 with the reason, kept as an unverified request, nothing changed."""
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(error), answer.json()
    [event] = provider_events(deps, account)
    assert {k: event[k] for k in ("signature_valid", "result", "event_type", "event_id", "tx_no")} == {
        "signature_valid": False, "result": "bad signature", "event_type": None, "event_id": None,
        "tx_no": None}
    assert event["body"] == body.decode()
    assert snapshot(deps, tx_no) == before


class TestPaystackSignatures:
    def test_a_tampered_body_is_refused(self, deps, paystack_account, paystack_payment):
        before = snapshot(deps, paystack_payment)
        body, headers = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET)
        tampered = body.replace(b'"Successful"', b'"Approved!!"')

        answer = post_webhook(paystack_account, tampered, headers)

        assert_refused(deps, paystack_account, paystack_payment, answer, before,
                       "Paystack signature does not match the body", tampered)

    def test_another_key_is_refused(self, deps, paystack_account, paystack_payment):
        before = snapshot(deps, paystack_payment)
        body, headers = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050),
                                               "sk_live_someone_elses_key_0000000000000000")

        answer = post_webhook(paystack_account, body, headers)

        assert_refused(deps, paystack_account, paystack_payment, answer, before,
                       "Paystack signature does not match the body", body)

    def test_a_missing_signature_is_refused(self, deps, paystack_account, paystack_payment):
        before = snapshot(deps, paystack_payment)
        body, _headers = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET)

        answer = post_webhook(paystack_account, body, {"Content-Type": "application/json"})

        assert_refused(deps, paystack_account, paystack_payment, answer, before,
                       "Paystack signature does not match the body", body)

    def test_a_signed_body_that_is_not_json_is_a_bad_payload(self, deps, paystack_account, paystack_payment):
        before = snapshot(deps, paystack_payment)

        answer = post_webhook(paystack_account, *bodies.paystack_signed(b"event=charge.success", PAYSTACK_SECRET))

        assert (answer.status_code, answer.json()) == (400, {"error": "Paystack event is not JSON"})
        [event] = provider_events(deps, paystack_account)
        assert (event["signature_valid"], event["result"]) == (True, "bad payload")
        assert snapshot(deps, paystack_payment) == before


class TestStripeSignatures:
    def test_a_stale_timestamp_is_refused(self, deps, stripe_account, stripe_payment):
        before = snapshot(deps, stripe_payment)
        body, headers = bodies.stripe_signed(completed(stripe_payment), STRIPE_WEBHOOK_SECRET,
                                             at=int(time.time()) - 301)

        answer = post_webhook(stripe_account, body, headers)

        assert_refused(deps, stripe_account, stripe_payment, answer, before,
                       "Stripe signature refused: Timestamp outside the tolerance zone", body)

    def test_a_timestamp_inside_the_tolerance_is_taken(self, deps, stripe_account, stripe_payment):
        answer = post_webhook(stripe_account, *bodies.stripe_signed(
            completed(stripe_payment), STRIPE_WEBHOOK_SECRET, at=int(time.time()) - 280))

        assert (answer.status_code, answer.json()) == (200, RECEIVED)
        assert stored(deps, stripe_payment)["status"] == "Captured"

    def test_a_tampered_body_is_refused(self, deps, stripe_account, stripe_payment):
        before = snapshot(deps, stripe_payment)
        body, headers = bodies.stripe_signed(completed(stripe_payment), STRIPE_WEBHOOK_SECRET)
        tampered = body.replace(b'"amount_total": 10050', b'"amount_total": 10051')

        answer = post_webhook(stripe_account, tampered, headers)

        assert_refused(deps, stripe_account, stripe_payment, answer, before,
                       "Stripe signature refused: No signatures found matching the expected signature", tampered)

    def test_the_api_key_or_another_endpoints_secret_is_refused(self, deps, stripe_account, stripe_payment):
        for secret in ("whsec_another_endpoint_000000000000", "sk_test_51NzQ3pKf0c2b7a1d4e6f80"):
            body, headers = bodies.stripe_signed(completed(stripe_payment), secret)

            answer = post_webhook(stripe_account, body, headers)

            assert answer.status_code == 400
        assert [(e["signature_valid"], e["result"]) for e in provider_events(deps, stripe_account)] == [
            (False, "bad signature"), (False, "bad signature")]
        assert stored(deps, stripe_payment)["status"] == "Pending"

    def test_a_missing_header_is_refused(self, deps, stripe_account, stripe_payment):
        before = snapshot(deps, stripe_payment)
        body, _headers = bodies.stripe_signed(completed(stripe_payment), STRIPE_WEBHOOK_SECRET)

        answer = post_webhook(stripe_account, body, {"Content-Type": "application/json"})

        assert_refused(deps, stripe_account, stripe_payment, answer, before, "Stripe signature refused", body)


class TestReplaysAndOtherEvents:
    def test_a_replayed_paystack_event_is_a_duplicate(self, deps, paystack_account, paystack_payment):
        delivery = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET)
        first = post_webhook(paystack_account, *delivery)
        assert (first.status_code, first.json()) == (200, RECEIVED)
        after_first = snapshot(deps, paystack_payment)

        replay = post_webhook(paystack_account, *delivery)

        assert (replay.status_code, replay.json()) == (200, RECEIVED)
        assert [e["result"] for e in provider_events(deps, paystack_account)] == ["applied", "duplicate"]
        assert snapshot(deps, paystack_payment) == after_first
        assert len(after_first[1]) == 2 and [e for e, _ in after_first[2]] == ["payment.captured"]

    def test_a_replayed_stripe_event_is_a_duplicate(self, deps, stripe_account, stripe_payment):
        delivery = bodies.stripe_signed(completed(stripe_payment), STRIPE_WEBHOOK_SECRET)
        assert post_webhook(stripe_account, *delivery).status_code == 200
        after_first = snapshot(deps, stripe_payment)

        replay = post_webhook(stripe_account, *delivery)

        assert (replay.status_code, replay.json()) == (200, RECEIVED)
        assert [(e["result"], e["event_id"]) for e in provider_events(deps, stripe_account)] == [
            ("applied", "evt_completed"), ("duplicate", "evt_completed")]
        assert snapshot(deps, stripe_payment) == after_first

    def test_unknown_event_types_are_ignored(self, deps, paystack_account, paystack_payment, stripe_account):
        before = snapshot(deps, paystack_payment)
        paystack_answer = post_webhook(paystack_account, *bodies.paystack_signed(
            {"event": "subscription.create", "data": {"subscription_code": "SUB_vsyqdmlzble3uii",
                                                      "status": "active"}}, PAYSTACK_SECRET))
        stripe_answer = post_webhook(stripe_account, *bodies.stripe_signed(bodies.stripe_event(
            "customer.created", {"id": "cus_Q1", "object": "customer"}, event_id="evt_customer"),
            STRIPE_WEBHOOK_SECRET))

        assert (paystack_answer.status_code, paystack_answer.json()) == (200, RECEIVED)
        assert (stripe_answer.status_code, stripe_answer.json()) == (200, RECEIVED)
        [paystack_event] = provider_events(deps, paystack_account)
        [stripe_event] = provider_events(deps, stripe_account)
        assert (paystack_event["result"], paystack_event["event_type"], paystack_event["signature_valid"]) == (
            "ignored", "subscription.create", True)
        assert (stripe_event["result"], stripe_event["event_type"], stripe_event["event_id"]) == (
            "ignored", "customer.created", "evt_customer")
        assert snapshot(deps, paystack_payment) == before

    def test_another_amount_is_not_taken(self, live, deps, paystack_account, paystack_payment):
        before = snapshot(deps, paystack_payment)

        answer = post_webhook(paystack_account, *bodies.paystack_signed(
            bodies.charge_success(paystack_payment, 1050000), PAYSTACK_SECRET))

        assert (answer.status_code, answer.json()) == (200, RECEIVED)
        [event] = provider_events(deps, paystack_account)
        assert (event["result"], event["tx_no"], event["detail"]) == (
            "amount mismatch", paystack_payment,
            "The event's amount is 1050000, the payment's 1050050 (minor units)")
        assert snapshot(deps, paystack_payment) == before
        assert live.status(paystack_payment)["Status"] == "Pending"

    def test_another_merchants_payment_is_an_unknown_transaction(self, app, deps, paystack_account,
                                                                 paystack_payment, paystack_fake):
        from app.store.merchants import create_merchant
        with deps.uow() as uow:
            other = create_merchant(uow, f"Other {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
            uow.commit()
        other_account = connect(app, other, Mode.LIVE, "paystack", paystack_fake.url)
        before = snapshot(deps, paystack_payment)

        answer = post_webhook(other_account, *bodies.paystack_signed(
            bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET))

        assert (answer.status_code, answer.json()) == (200, RECEIVED)
        [event] = provider_events(deps, other_account)
        assert (event["result"], event["tx_no"]) == ("unknown transaction", None)
        assert snapshot(deps, paystack_payment) == before


class TestUnknownAndDisconnected:
    def test_an_unknown_key_is_not_found(self, server, deps, paystack_account):
        for key in ("no-such-key", "x" * 65):
            answer = requests.post(f"{server.url}/provider-webhooks/{key}", data=b"{}", timeout=10)
            assert (answer.status_code, answer.json()) == (404, {"error": "Not found"})
        assert provider_events(deps, paystack_account) == []

    def test_a_disconnected_account_is_gone(self, deps, paystack_account, paystack_payment):
        assert accounts.disconnect(deps.uow, paystack_account.caller, paystack_account.id, utcnow())
        before = snapshot(deps, paystack_payment)
        body, headers = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET)

        answer = post_webhook(paystack_account, body, headers)

        assert (answer.status_code, answer.json()) == (410, {"error": "This provider account is disconnected"})
        [event] = provider_events(deps, paystack_account)
        assert (event["result"], event["signature_valid"], event["body"]) == ("disconnected", False, body.decode())
        assert snapshot(deps, paystack_payment) == before
        assert json.loads(event["body"])["event"] == "charge.success"


class TestWhenMatchingNeedsTheProvider:
    """Events that name only the provider's side need a question to the provider; if it cannot be
    answered, the event is answered 503 so that the provider sends it again."""

    def test_a_dispute_while_stripe_cannot_answer_is_retried_later(self, deps, stripe_account, stripe_fake,
                                                                   stripe_payment):
        assert post_webhook(stripe_account, *bodies.stripe_signed(
            completed(stripe_payment), STRIPE_WEBHOOK_SECRET)).status_code == 200
        stripe_fake.on("GET", f"/v1/payment_intents/{bodies.INTENT_ID}",
                       bodies.stripe_error(500, "An unknown error occurred", "api_error", "api_error"),
                       bodies.payment_intent(stripe_payment, 10050))
        delivery = bodies.stripe_signed(bodies.stripe_event(
            "charge.dispute.created", bodies.dispute(10050), event_id="evt_dispute"), STRIPE_WEBHOOK_SECRET)
        captured = snapshot(deps, stripe_payment)

        answer = post_webhook(stripe_account, *delivery)

        assert (answer.status_code, answer.json()) == (503, {"error": "Try again later"})
        assert provider_events(deps, stripe_account)[-1]["result"] == "retry later"
        assert snapshot(deps, stripe_payment) == captured
        # Stripe sends it again: now it is applied (the retry is not taken for a duplicate).
        again = post_webhook(stripe_account, *delivery)
        assert (again.status_code, again.json()) == (200, RECEIVED)
        assert provider_events(deps, stripe_account)[-1]["result"] == "applied"
        assert stored(deps, stripe_payment)["status"] == "Chargeback"

    def test_a_paystack_refund_event_while_paystack_cannot_answer_is_retried_later(
            self, live, deps, paystack_account, paystack_fake, paystack_payment):
        tx_no = paystack_payment
        assert post_webhook(paystack_account, *bodies.paystack_signed(
            bodies.charge_success(tx_no, 1050050), PAYSTACK_SECRET)).status_code == 200
        paystack_fake.on("GET", "/refund", bodies.refund_list())
        on_request(paystack_fake, "POST", "/refund", lambda seen: paystack_fake.on("POST", "/refund", {
            "status": True, "message": "Refund has been queued for processing",
            "data": bodies.paystack_refund(tx_no, seen.json["merchant_note"][15:], 1050050, "pending")}))
        refund = live.post("/transactions/refund", {"txNo": tx_no, "amount": 10500.50})
        assert (refund.status_code, refund.json()["status"]) == (200, "Pending")
        assert paystack_fake.requests_to("POST", "/refund") == []  # a worker submits it
        assert settlement.run_due_provider_checks(deps) == 1
        assert len(paystack_fake.requests_to("POST", "/refund")) == 1
        paystack_fake.on("GET", f"/refund/{bodies.PAYSTACK_REFUND_ID}",
                         Answer(500, {"status": False, "message": "An error occurred"}))

        delivery = bodies.paystack_signed(
            bodies.refund_event("refund.processed", tx_no, 1050050, "processed"), PAYSTACK_SECRET)

        answer = post_webhook(paystack_account, *delivery)

        refund_tx_no = refund.json()["refundTxNo"]
        assert stored(deps, refund_tx_no)["status"] == "Pending"
        assert (answer.status_code, answer.json()) == (503, {"error": "Try again later"})
        assert provider_events(deps, paystack_account)[-1]["result"] == "retry later"
        # Paystack sends it again once it answers: applied, and the original is Refunded in full.
        paystack_fake.on("GET", f"/refund/{bodies.PAYSTACK_REFUND_ID}", {
            "status": True, "message": "Refund retrieved",
            "data": bodies.paystack_refund(tx_no, refund_tx_no, 1050050, "processed")})
        again = post_webhook(paystack_account, *delivery)
        assert (again.status_code, again.json()) == (200, RECEIVED)
        assert provider_events(deps, paystack_account)[-1]["result"] == "applied"
        assert (stored(deps, refund_tx_no)["status"], stored(deps, tx_no)["status"]) == ("Captured", "Refunded")
        assert len(paystack_fake.requests_to("POST", "/refund")) == 1  # asked about, never submitted again


def test_the_same_event_delivered_many_times_at_once_moves_the_payment_once(
        deps, paystack_account, paystack_payment):
    from concurrent.futures import ThreadPoolExecutor

    delivery = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: post_webhook(paystack_account, *delivery), range(8)))

    assert [(a.status_code, a.json()) for a in answers] == [(200, RECEIVED)] * 8
    assert stored(deps, paystack_payment)["status"] == "Captured"
    assert [row[:2] for row in history(deps, paystack_payment)] == [(None, "Pending"), ("Pending", "Captured")]
    assert [e for e, _ in outgoing(deps, paystack_payment)] == ["payment.captured"]
    results = [e["result"] for e in provider_events(deps, paystack_account)]
    assert len(results) == 8 and "applied" in results
    assert set(results) <= {"applied", "no change", "duplicate"}


def test_of_two_racing_deliveries_of_one_event_only_one_is_recorded_applied(
        monkeypatch, deps, paystack_account, paystack_payment):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from app.payments import settlement

    both_read = threading.Barrier(2, timeout=5)
    apply_outcome = settlement.apply_outcome

    def after_both_have_read(*args, **kwargs):
        both_read.wait()  # both requests have verified, looked for replays and read the payment
        return apply_outcome(*args, **kwargs)

    monkeypatch.setattr(settlement, "apply_outcome", after_both_have_read)
    delivery = bodies.paystack_signed(bodies.charge_success(paystack_payment, 1050050), PAYSTACK_SECRET)
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: post_webhook(paystack_account, *delivery), range(2)))

    assert [a.status_code for a in answers] == [200, 200]
    assert len(history(deps, paystack_payment)) == 2  # moved once
    assert [e for e, _ in outgoing(deps, paystack_payment)] == ["payment.captured"]
    assert sorted(e["result"] for e in provider_events(deps, paystack_account)) == ["applied", "no change"]
