"""Inbound webhooks: signatures made here as each provider makes them, then the events they report."""
from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from app.payments.model import Kind, Status
from app.providers import paystack, stripe as stripe_connector
from app.providers.events import IgnoredEvent, WebhookPayloadError, WebhookSignatureError

PAYSTACK_SECRET = "sk_live_0b3f9a6c2d8e4f1a7b5c9d3e6f0a2b4c8d1e5f79"
STRIPE_WEBHOOK_SECRET = "whsec_8d4b1f0e6c2a9b7d3f5e1c0a4b8d2f6e"
TX_NO = "PAY-9F2C41D07A3B5E68"


def paystack_signed(event: dict, secret: str = PAYSTACK_SECRET) -> tuple[bytes, dict]:
    """A Paystack delivery: the raw body and x-paystack-signature, hex HMAC-SHA512 with the secret key."""
    body = json.dumps(event).encode()
    return body, {"X-Paystack-Signature": hmac.new(secret.encode(), body, hashlib.sha512).hexdigest()}


def stripe_signed(event: dict, secret: str = STRIPE_WEBHOOK_SECRET, at: int | None = None) -> tuple[bytes, dict]:
    """A Stripe delivery: the raw body and Stripe-Signature t=<time>,v1=<HMAC-SHA256 of "t.body">."""
    body = json.dumps(event).encode()
    timestamp = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return body, {"Stripe-Signature": f"t={timestamp},v1={digest}"}


def charge_success() -> dict:
    """Paystack's charge.success event."""
    return {"event": "charge.success", "data": {
        "id": 4099260516, "domain": "live", "status": "success", "reference": TX_NO, "amount": 1050000,
        "message": None, "gateway_response": "Successful", "paid_at": "2026-11-23T10:03:12.000Z",
        "created_at": "2026-11-23T10:00:01.000Z", "channel": "card", "currency": "NGN",
        "ip_address": "102.89.34.12", "metadata": {"txNo": TX_NO}, "fees": 25750,
        "authorization": {"authorization_code": "AUTH_uh8bcl3zbn", "bin": "408408", "last4": "4081",
                          "exp_month": "12", "exp_year": "2030", "card_type": "visa ", "bank": "TEST BANK",
                          "country_code": "NG", "brand": "visa", "reusable": True},
        "customer": {"id": 181873746, "email": "ada@example.com", "customer_code": "CUS_1rkzaqsv4rrhqo6"},
        "requested_amount": 1050000,
        "source": {"type": "api", "source": "merchant_api", "entry_point": "transaction_initialize"}}}


def refund_event(name: str, status: str) -> dict:
    """Paystack's refund.* events: they name the original transaction, not the refund's reference."""
    return {"event": name, "data": {
        "status": status, "transaction_reference": TX_NO, "refund_reference": "1J1TNW2F5QHV",
        "amount": 250000, "currency": "NGN", "processor": "mpgs_zen",
        "customer": {"first_name": "Ada", "last_name": "Obi", "email": "ada@example.com"},
        "integration": 463433, "domain": "live"}}


def transfer_event(name: str, status: str) -> dict:
    """Paystack's transfer.* events: the reference is our txNo in lower case."""
    return {"event": name, "data": {
        "amount": 2500000, "createdAt": "2026-11-23T10:20:01.000Z", "currency": "NGN", "domain": "live",
        "failures": None, "id": 24226816, "integration": {"id": 463433, "is_live": True},
        "reason": "order-2f4680", "reference": "pou-7e3a9c1b5d2f4680", "source": "balance",
        "source_details": None, "status": status, "titan_code": None, "transfer_code": "TRF_vsyqdmlzble3uii",
        "transferred_at": None, "updatedAt": "2026-11-23T10:21:40.000Z",
        "recipient": {"name": "Ada Obi", "recipient_code": "RCP_t0ya41mp35flk40", "type": "nuban"},
        "session": {"provider": "nip", "id": "110006261123102140000012345678"}, "gateway_response": None}}


class TestPaystackSignature:
    def test_a_valid_signature_reads_the_event(self):
        event = paystack.parse_webhook(*paystack_signed(charge_success()), PAYSTACK_SECRET)

        assert (event.kind, event.tx_no, event.outcome.status) == (Kind.PAYMENT, TX_NO, Status.CAPTURED)
        assert (event.provider_transaction_id, event.amount_minor, event.currency) == ("4099260516", 1050000, "NGN")

    def test_a_tampered_body_is_refused(self):
        body, headers = paystack_signed(charge_success())

        with pytest.raises(WebhookSignatureError):
            paystack.parse_webhook(body.replace(b"1050000", b"9050000"), headers, PAYSTACK_SECRET)

    def test_another_accounts_key_is_refused(self):
        body, headers = paystack_signed(charge_success(), secret="sk_live_someone_else")

        with pytest.raises(WebhookSignatureError):
            paystack.parse_webhook(body, headers, PAYSTACK_SECRET)

    def test_a_missing_signature_is_refused(self):
        body, _ = paystack_signed(charge_success())

        with pytest.raises(WebhookSignatureError):
            paystack.parse_webhook(body, {}, PAYSTACK_SECRET)

    def test_the_header_is_found_in_any_case(self):
        body, headers = paystack_signed(charge_success())

        event = paystack.parse_webhook(body, {"x-paystack-signature": headers["X-Paystack-Signature"]},
                                       PAYSTACK_SECRET)

        assert event.outcome.status is Status.CAPTURED

    def test_a_replayed_delivery_parses_the_same(self):
        """Paystack signs no timestamp, so an old delivery verifies: spotting replays is the route's job."""
        delivery = paystack_signed(charge_success())

        assert paystack.parse_webhook(*delivery, PAYSTACK_SECRET) == paystack.parse_webhook(*delivery, PAYSTACK_SECRET)

    def test_a_signed_body_that_is_not_json_is_a_payload_error(self):
        body = b"not json"
        signature = hmac.new(PAYSTACK_SECRET.encode(), body, hashlib.sha512).hexdigest()

        with pytest.raises(WebhookPayloadError):
            paystack.parse_webhook(body, {"x-paystack-signature": signature}, PAYSTACK_SECRET)


class TestPaystackEvents:
    @pytest.mark.parametrize("name, status, expected", [
        ("refund.processed", "processed", Status.CAPTURED),
        ("refund.failed", "failed", Status.FAILED),
        ("refund.pending", "pending", Status.PENDING),
        ("refund.processing", "processing", Status.PENDING),
    ])
    def test_refund_events_name_the_original_and_the_amount(self, name, status, expected):
        event = paystack.parse_webhook(*paystack_signed(refund_event(name, status)), PAYSTACK_SECRET)

        assert (event.kind, event.tx_no, event.original_tx_no) == (Kind.REFUND, None, TX_NO)
        assert (event.amount_minor, event.outcome.status) == (250000, expected)

    @pytest.mark.parametrize("name, status, expected, reason", [
        ("transfer.success", "success", Status.CAPTURED, None),
        ("transfer.failed", "failed", Status.FAILED, "Provider Error"),
        ("transfer.reversed", "reversed", Status.DECLINED, "Declined By Bank"),
    ])
    def test_transfer_events_name_the_payout_by_our_tx_no(self, name, status, expected, reason):
        event = paystack.parse_webhook(*paystack_signed(transfer_event(name, status)), PAYSTACK_SECRET)

        assert (event.kind, event.tx_no) == (Kind.PAYOUT, "POU-7E3A9C1B5D2F4680")
        assert (event.outcome.status, event.outcome.decline_reason) == (expected, reason)
        assert event.provider_transaction_id == "TRF_vsyqdmlzble3uii"

    def test_an_unknown_event_is_ignored(self):
        body, headers = paystack_signed({"event": "subscription.create", "data": {"subscription_code": "SUB_x"}})

        assert paystack.parse_webhook(body, headers, PAYSTACK_SECRET) == IgnoredEvent("paystack",
                                                                                      "subscription.create")


def stripe_event(event_type: str, obj: dict) -> dict:
    """A Stripe Event around its object."""
    return {"id": "evt_1QeXyZ2eZvKYlo2CqWmV0e8N", "object": "event", "api_version": "2026-10-28.endive",
            "created": int(time.time()), "data": {"object": obj}, "livemode": False, "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None}, "type": event_type}


def completed_session(payment_status: str = "paid", status: str = "complete") -> dict:
    """The Checkout Session of a checkout.session.* event (payment_intent not expanded)."""
    return {"id": "cs_test_a1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvWxYz012345", "object": "checkout.session",
            "amount_total": 10050, "client_reference_id": TX_NO, "currency": "eur", "mode": "payment",
            "metadata": {"txNo": TX_NO, "reference": "order-3b5e68"},
            "payment_intent": "pi_3QeXyZ2eZvKYlo2C0abc1234", "payment_status": payment_status,
            "status": status, "url": None}


def intent(status: str, error: dict | None = None) -> dict:
    """The PaymentIntent of a payment_intent.* event."""
    return {"id": "pi_3QeXyZ2eZvKYlo2C0abc1234", "object": "payment_intent", "amount": 10050,
            "currency": "eur", "status": status, "metadata": {"txNo": TX_NO}, "last_payment_error": error,
            "cancellation_reason": None}


class TestStripeSignature:
    def test_a_valid_signature_reads_the_event(self):
        event = stripe_connector.parse_webhook(*stripe_signed(stripe_event("checkout.session.completed",
                                                                          completed_session())),
                                               STRIPE_WEBHOOK_SECRET)

        assert (event.kind, event.tx_no, event.outcome.status) == (Kind.PAYMENT, TX_NO, Status.CAPTURED)
        assert event.provider_transaction_id == "cs_test_a1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvWxYz012345"
        assert (event.event_id, event.amount_minor, event.currency) == ("evt_1QeXyZ2eZvKYlo2CqWmV0e8N", 10050, "EUR")

    def test_a_tampered_body_is_refused(self):
        body, headers = stripe_signed(stripe_event("checkout.session.completed", completed_session()))

        with pytest.raises(WebhookSignatureError):
            stripe_connector.parse_webhook(body.replace(b"10050", b"90050"), headers, STRIPE_WEBHOOK_SECRET)

    def test_a_signature_older_than_five_minutes_is_refused(self):
        delivery = stripe_signed(stripe_event("checkout.session.completed", completed_session()),
                                 at=int(time.time()) - 301)

        with pytest.raises(WebhookSignatureError, match="tolerance"):
            stripe_connector.parse_webhook(*delivery, STRIPE_WEBHOOK_SECRET)

    def test_a_signature_within_five_minutes_is_accepted(self):
        delivery = stripe_signed(stripe_event("checkout.session.completed", completed_session()),
                                 at=int(time.time()) - 290)

        assert stripe_connector.parse_webhook(*delivery, STRIPE_WEBHOOK_SECRET).outcome.status is Status.CAPTURED

    def test_another_endpoints_secret_is_refused(self):
        delivery = stripe_signed(stripe_event("checkout.session.completed", completed_session()),
                                 secret="whsec_someone_else")

        with pytest.raises(WebhookSignatureError):
            stripe_connector.parse_webhook(*delivery, STRIPE_WEBHOOK_SECRET)

    def test_a_missing_signature_is_refused(self):
        body, _ = stripe_signed(stripe_event("checkout.session.completed", completed_session()))

        with pytest.raises(WebhookSignatureError):
            stripe_connector.parse_webhook(body, {}, STRIPE_WEBHOOK_SECRET)

    def test_a_replayed_delivery_parses_the_same(self):
        """Within the tolerance a delivery verifies each time: spotting replays (event id) is the route's job."""
        delivery = stripe_signed(stripe_event("payment_intent.succeeded", intent("succeeded")))

        first = stripe_connector.parse_webhook(*delivery, STRIPE_WEBHOOK_SECRET)

        assert stripe_connector.parse_webhook(*delivery, STRIPE_WEBHOOK_SECRET) == first

    def test_a_signed_body_that_is_not_json_is_a_payload_error(self):
        body, timestamp = b"not json", int(time.time())
        digest = hmac.new(STRIPE_WEBHOOK_SECRET.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()

        with pytest.raises(WebhookPayloadError):
            stripe_connector.parse_webhook(body, {"stripe-signature": f"t={timestamp},v1={digest}"},
                                           STRIPE_WEBHOOK_SECRET)


class TestStripeEvents:
    def parse(self, event_type: str, obj: dict):
        return stripe_connector.parse_webhook(*stripe_signed(stripe_event(event_type, obj)), STRIPE_WEBHOOK_SECRET)

    def test_an_expired_session_is_declined_as_expired(self):
        event = self.parse("checkout.session.expired", completed_session("unpaid", "expired"))

        assert (event.outcome.status, event.outcome.decline_reason) == (Status.DECLINED, "Transaction Expired")

    def test_a_succeeded_payment_intent_names_the_payment_by_its_metadata(self):
        event = self.parse("payment_intent.succeeded", intent("succeeded"))

        assert (event.kind, event.tx_no, event.outcome.status) == (Kind.PAYMENT, TX_NO, Status.CAPTURED)
        assert event.outcome.provider_transaction_id is None  # the payment keeps its session id

    def test_a_failed_attempt_stays_pending_with_stripes_words(self):
        """The customer may try another card while the Checkout Session is open."""
        event = self.parse("payment_intent.payment_failed", intent("requires_payment_method", {
            "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
            "message": "Your card has insufficient funds."}))

        assert (event.outcome.status, event.outcome.provider_status) == (Status.PENDING, "requires_payment_method")
        assert event.outcome.provider_message == "Your card has insufficient funds."

    @pytest.mark.parametrize("event_type, status, failure, expected, reason", [
        ("refund.created", "pending", None, Status.PENDING, None),
        ("refund.updated", "succeeded", None, Status.CAPTURED, None),
        ("refund.failed", "failed", "lost_or_stolen_card", Status.FAILED, "Suspected Fraud"),
    ])
    def test_refund_events_name_the_refund_by_its_metadata(self, event_type, status, failure, expected, reason):
        event = self.parse(event_type, {
            "id": "re_3QeXyZ2eZvKYlo2C1xyz9876", "object": "refund", "amount": 2500, "currency": "eur",
            "metadata": {"txNo": "RFD-0A1B2C3D4E5F6789", "originalTxNo": TX_NO},
            "payment_intent": "pi_3QeXyZ2eZvKYlo2C0abc1234", "status": status, "failure_reason": failure})

        assert (event.kind, event.tx_no, event.provider_transaction_id) == (
            Kind.REFUND, "RFD-0A1B2C3D4E5F6789", "re_3QeXyZ2eZvKYlo2C1xyz9876")
        assert (event.outcome.status, event.outcome.decline_reason) == (expected, reason)

    @pytest.mark.parametrize("dispute_status, expected", [("needs_response", Status.CHARGEBACK),
                                                          ("warning_needs_response", Status.PENDING)])
    def test_a_dispute_is_a_chargeback_named_by_its_payment_intent(self, dispute_status, expected):
        event = self.parse("charge.dispute.created", {
            "id": "du_1QeXyZ2eZvKYlo2C5dsp0001", "object": "dispute", "amount": 10050, "currency": "eur",
            "charge": "ch_3QeXyZ2eZvKYlo2C0def5678", "payment_intent": "pi_3QeXyZ2eZvKYlo2C0abc1234",
            "reason": "fraudulent", "status": dispute_status, "metadata": {}})

        assert (event.kind, event.tx_no) == (Kind.PAYMENT, None)
        assert event.provider_transaction_id == "pi_3QeXyZ2eZvKYlo2C0abc1234"
        assert event.outcome.status is expected
        assert event.outcome.provider_message == "Dispute du_1QeXyZ2eZvKYlo2C5dsp0001 opened: fraudulent"

    def test_an_unknown_event_is_ignored(self):
        event = self.parse("customer.created", {"id": "cus_R1x2y3z4", "object": "customer"})

        assert event == IgnoredEvent("stripe", "customer.created", "evt_1QeXyZ2eZvKYlo2CqWmV0e8N")


@pytest.mark.parametrize("signature", ["\x80", "é" * 128, "t=1,v1=\u00e9"])
def test_a_signature_header_that_is_not_ascii_is_refused_not_a_crash(signature):
    # Found by the hostile corpus: hmac.compare_digest raises TypeError on non-ASCII text.
    with pytest.raises(WebhookSignatureError):
        paystack.parse_webhook(b"{}", {"x-paystack-signature": signature}, "sk_test_x")
    with pytest.raises(WebhookSignatureError):
        stripe_connector.parse_webhook(b"{}", {"Stripe-Signature": signature}, "whsec_x")
