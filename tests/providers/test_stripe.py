"""The Stripe connector: the real stripe package against a fake Stripe answering as its API reference shows."""
from __future__ import annotations

import logging
import time

import pytest

from app.payments.model import Status
from app.payments.provider import BankListError, ProviderUnavailable
from app.providers.http import ProviderRejected, Timeouts
from app.providers.stripe import StripeConnector

from .builders import CARD, NG_PAYOUT, NOW, captured, payment, payout, refund_of
from .fake_provider import LOOPBACK_GUARD, Answer

SECRET = "sk_test_51NzQ3pKf0c2b7a1d4e6f80a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9"
TX_NO = "PAY-9F2C41D07A3B5E68"
SESSION = "cs_test_a1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvWxYz012345"
INTENT = "pi_3QeXyZ2eZvKYlo2C0abc1234"
REFUND = "re_3QeXyZ2eZvKYlo2C1xyz9876"


def stripe_on(fake, read_timeout: float) -> StripeConnector:
    """The connector on the fake Stripe, giving up on an answer after `read_timeout` seconds."""
    return StripeConnector(SECRET, base_url=fake.url, guard=LOOPBACK_GUARD,
                           timeouts=Timeouts(connect=1, read=read_timeout),
                           return_url="https://paydesk.example/checkout/{tx_no}/return")


@pytest.fixture
def stripe_connector(fake):
    """The connector on the fake Stripe. Its read timeout is wide: a loaded 2-core machine can
    stall a loopback answer for half a second, and only the timeout test wants it to fire."""
    return stripe_on(fake, read_timeout=10)


def session_body(status: str = "open", payment_status: str = "unpaid", payment_intent=None) -> dict:
    """A Checkout Session object."""
    return {
        "id": SESSION, "object": "checkout.session", "amount_subtotal": 10050, "amount_total": 10050,
        "cancel_url": "https://shop.example/failed", "client_reference_id": TX_NO, "created": 1795428000,
        "currency": "eur", "customer_email": "ada@example.com", "expires_at": 1795514400,
        "livemode": False, "metadata": {"txNo": TX_NO, "reference": "order-3b5e68"}, "mode": "payment",
        "payment_intent": payment_intent, "payment_status": payment_status, "status": status,
        "success_url": "https://shop.example/paid",
        "url": f"https://checkout.stripe.com/c/pay/{SESSION}#fidkdWxOYHwnPyd1blpxYHZxWjA0"
        if status == "open" else None,
    }


def intent_body(status: str, error: dict | None = None, **fields) -> dict:
    """A PaymentIntent object."""
    return {"id": INTENT, "object": "payment_intent", "amount": 10050, "amount_received": 0,
            "currency": "eur", "status": status, "metadata": {"txNo": TX_NO}, "last_payment_error": error,
            "cancellation_reason": None, "latest_charge": "ch_3QeXyZ2eZvKYlo2C0def5678", "livemode": False,
            "created": 1795428100, **fields}


def card_error(decline_code: str | None, message: str, code: str = "card_declined") -> dict:
    """A PaymentIntent's last_payment_error after a declined card."""
    return {"type": "card_error", "code": code, "decline_code": decline_code, "message": message,
            "doc_url": f"https://stripe.com/docs/error-codes/{code.replace('_', '-')}"}


def refund_body(status: str, failure_reason: str | None = None) -> dict:
    """A Refund object."""
    return {"id": REFUND, "object": "refund", "amount": 2500, "balance_transaction": None,
            "charge": "ch_3QeXyZ2eZvKYlo2C0def5678", "created": 1795429000, "currency": "eur",
            "metadata": {"txNo": "RFD-0A1B2C3D4E5F6789", "originalTxNo": TX_NO},
            "payment_intent": INTENT, "reason": None, "status": status, "failure_reason": failure_reason}


def stripe_error(status: int, message: str, code: str, error_type: str = "invalid_request_error") -> Answer:
    """An error answer in Stripe's shape."""
    return Answer(status, {"error": {"code": code, "doc_url": f"https://stripe.com/docs/error-codes/{code}",
                                     "message": message, "type": error_type}})


class TestCheckoutSession:
    def test_create_posts_a_payment_mode_session_keyed_by_the_tx_no(self, stripe_connector, fake):
        fake.on("POST", "/v1/checkout/sessions", session_body())

        outcome = stripe_connector.create(payment(amount="100.50", currency="EUR",
                                                  success_url="https://shop.example/paid"), CARD)

        sent = fake.requests_to("POST", "/v1/checkout/sessions")[0]
        assert sent.header("Idempotency-Key") == TX_NO
        assert sent.header("Authorization") == f"Bearer {SECRET}"
        assert sent.header("Content-Type") == "application/x-www-form-urlencoded"
        assert sent.form == {
            "mode": "payment",
            "client_reference_id": TX_NO,
            "line_items[0][quantity]": "1",
            "line_items[0][price_data][currency]": "eur",
            "line_items[0][price_data][unit_amount]": "10050",
            "line_items[0][price_data][product_data][name]": "Payment order-3b5e68",
            "metadata[txNo]": TX_NO,
            "metadata[reference]": "order-3b5e68",
            "payment_intent_data[metadata][txNo]": TX_NO,
            "success_url": f"https://paydesk.example/checkout/{TX_NO}/return",
            "cancel_url": f"https://paydesk.example/checkout/{TX_NO}/return",
            "customer_email": "ada@example.com",
        }
        assert (outcome.status, outcome.provider_transaction_id) == (Status.PENDING, SESSION)
        assert outcome.redirect_url == session_body()["url"]

    def test_without_paydesks_return_page_the_payments_own_urls_are_used(self, fake):
        fake.on("POST", "/v1/checkout/sessions", session_body())
        connector = StripeConnector(SECRET, base_url=fake.url, guard=LOOPBACK_GUARD)

        connector.create(payment(currency="EUR", success_url="https://shop.example/paid",
                                 failure_url="https://shop.example/failed"), CARD)

        form = fake.seen[0].form
        assert (form["success_url"], form["cancel_url"]) == ("https://shop.example/paid",
                                                             "https://shop.example/failed")

    def test_a_repeated_create_sends_the_same_idempotency_key(self, stripe_connector, fake):
        fake.on("POST", "/v1/checkout/sessions", session_body())

        first = stripe_connector.create(payment(currency="EUR"), CARD)
        second = stripe_connector.create(payment(currency="EUR"), CARD)

        keys = [s.header("Idempotency-Key") for s in fake.requests_to("POST", "/v1/checkout/sessions")]
        assert keys == [TX_NO, TX_NO]
        assert first == second

    def test_a_refused_create_fails_with_stripes_message(self, stripe_connector, fake):
        fake.on("POST", "/v1/checkout/sessions", stripe_error(
            400, "Invalid currency: xxx. Stripe currently supports these currencies: usd, eur, ...",
            "parameter_invalid_string"))

        outcome = stripe_connector.create(payment(currency="EUR"), CARD)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert outcome.provider_message.startswith("Invalid currency: xxx.")
        assert outcome.provider_status == "HTTP 400 parameter_invalid_string"

    @pytest.mark.parametrize("amount, currency, unit_amount", [
        ("1500", "JPY", "1500"), ("5.120", "KWD", "5120"), ("1500", "ISK", "150000"), ("1500", "MGA", "1500"),
    ])
    def test_amounts_are_sent_in_the_units_stripe_takes(self, stripe_connector, fake, amount, currency,
                                                        unit_amount):
        fake.on("POST", "/v1/checkout/sessions", session_body())

        stripe_connector.create(payment(amount=amount, currency=currency), CARD)

        assert fake.seen[0].form["line_items[0][price_data][unit_amount]"] == unit_amount

    def test_a_fraction_stripe_cannot_take_fails_without_a_call(self, stripe_connector, fake):
        outcome = stripe_connector.create(payment(amount="1500.50", currency="MGA"), CARD)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert outcome.provider_message == "Stripe takes MGA amounts in whole units only"
        assert fake.seen == []

    def test_stripe_sends_no_payouts_here(self, stripe_connector, fake):
        outcome = stripe_connector.create(payout(), NG_PAYOUT)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Payment Method Not Available")
        assert fake.seen == []


class TestUnavailable:
    @pytest.mark.parametrize("answer", [
        stripe_error(500, "An unknown error occurred", "api_error", "api_error"),
        Answer(502, "<html>Bad Gateway</html>", content_type="text/html"),
        stripe_error(429, "Too many requests made to the API too quickly", "rate_limit"),
        stripe_error(409, "There is currently another in-progress request using this Idempotent Key",
                     "idempotency_key_in_use", "idempotency_error"),
    ], ids=["500", "502-html", "429", "409"])
    def test_server_errors_leave_it_pending(self, stripe_connector, fake, answer):
        fake.on("POST", "/v1/checkout/sessions", answer)

        with pytest.raises(ProviderUnavailable, match=f"HTTP {answer.status}"):
            stripe_connector.create(payment(currency="EUR"), CARD)
        assert len(fake.seen) == 1  # no retries inside the call

    def test_a_read_timeout_leaves_it_pending(self, fake):
        stripe_connector = stripe_on(fake, read_timeout=0.5)
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}", Answer(body=session_body(), delay=2))
        started = time.monotonic()

        with pytest.raises(ProviderUnavailable, match="could not be reached"):
            stripe_connector.status(payment(currency="EUR", provider_transaction_id=SESSION), None, NOW)
        assert time.monotonic() - started < 1.5

    def test_a_closed_port_leaves_it_pending(self):
        from tests.support.servers import free_port
        connector = StripeConnector(SECRET, base_url=f"http://127.0.0.1:{free_port()}",
                                guard=LOOPBACK_GUARD)

        with pytest.raises(ProviderUnavailable):
            connector.create(payment(currency="EUR"), CARD)

    def test_a_refused_status_question_leaves_it_pending(self, stripe_connector, fake):
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}",
                stripe_error(401, "Invalid API Key provided: sk_test_****a0c9", "api_key_invalid"))

        with pytest.raises(ProviderUnavailable, match="Invalid API Key"):
            stripe_connector.status(payment(currency="EUR", provider_transaction_id=SESSION), None, NOW)

    def test_the_secret_is_not_logged(self, stripe_connector, fake, caplog):
        caplog.set_level(logging.DEBUG)
        fake.on("POST", "/v1/checkout/sessions", stripe_error(500, "An unknown error occurred", "api_error"))

        with pytest.raises(ProviderUnavailable):
            stripe_connector.create(payment(currency="EUR"), CARD)

        assert "An unknown error occurred" in caplog.text
        assert SECRET not in caplog.text
        assert SECRET not in repr(stripe_connector)


class TestPaymentStatus:
    def status_of(self, connector, fake, session: dict):
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}", session)
        return connector.status(payment(currency="EUR", provider_transaction_id=SESSION), None, NOW)

    def test_status_reads_the_session_with_its_payment_intent_expanded(self, stripe_connector, fake):
        outcome = self.status_of(stripe_connector, fake, session_body(
            "complete", "paid", intent_body("succeeded", amount_received=10050)))

        sent = fake.requests_to("GET", f"/v1/checkout/sessions/{SESSION}")[0]
        assert sent.query == {"expand[0]": ["payment_intent"]}
        assert (outcome.status, outcome.provider_transaction_id) == (Status.CAPTURED, SESSION)
        assert outcome.provider_payment_id == INTENT

    def test_an_open_session_without_an_attempt_is_pending(self, stripe_connector, fake):
        outcome = self.status_of(stripe_connector, fake, session_body())

        assert (outcome.status, outcome.provider_status) == (Status.PENDING, "open")

    def test_a_declined_card_on_an_open_session_stays_pending_with_stripes_words(self, stripe_connector, fake):
        outcome = self.status_of(stripe_connector, fake, session_body(payment_intent=intent_body(
            "requires_payment_method", card_error("insufficient_funds", "Your card has insufficient funds."))))

        assert (outcome.status, outcome.provider_status) == (Status.PENDING, "requires_payment_method")
        assert outcome.provider_message == "Your card has insufficient funds."
        assert outcome.provider_transaction_id == SESSION

    @pytest.mark.parametrize("error, reason", [
        (card_error("insufficient_funds", "Your card has insufficient funds."), "Insufficient Funds"),
        (card_error(None, "Your card has expired.", code="expired_card"), "Card Expired"),
        (card_error("generic_decline", "Your card was declined."), "Declined By Bank"),
        (card_error(None, "We are unable to authenticate your payment method.",
                    code="payment_intent_authentication_failure"), "3DS Authentication Failed"),
        (card_error("call_issuer", "Your card was declined."), "Declined By Bank"),
        (None, "Transaction Expired"),
    ])
    def test_an_expired_session_is_declined_for_its_last_attempts_reason(self, stripe_connector, fake,
                                                                         error, reason):
        intent = intent_body("canceled", error, cancellation_reason="automatic") if error else None

        outcome = self.status_of(stripe_connector, fake, session_body("expired", payment_intent=intent))

        assert (outcome.status, outcome.decline_reason) == (Status.DECLINED, reason)

    def test_a_complete_but_unpaid_session_waits_for_its_delayed_payment(self, stripe_connector, fake):
        outcome = self.status_of(stripe_connector, fake, session_body(
            "complete", "unpaid", intent_body("processing")))

        assert (outcome.status, outcome.provider_status) == (Status.PENDING, "unpaid")

    def test_a_payment_known_by_its_payment_intent_is_read_from_it(self, stripe_connector, fake):
        fake.on("GET", f"/v1/payment_intents/{INTENT}", intent_body("requires_capture"))

        outcome = stripe_connector.status(payment(currency="EUR", provider_transaction_id=INTENT), None, NOW)

        assert outcome.status is Status.AUTHORIZED


class TestRefund:
    def test_refund_posts_the_payment_intent_and_amount_keyed_by_the_refunds_tx_no(self, stripe_connector, fake):
        original = captured(currency="EUR", amount="100.50", provider_transaction_id=SESSION)
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}",
                session_body("complete", "paid", intent_body("succeeded")))
        fake.on("POST", "/v1/refunds", refund_body("pending"))

        outcome = stripe_connector.refund(refund_of(original, "25.00"), original, NOW)

        sent = fake.requests_to("POST", "/v1/refunds")[0]
        assert sent.header("Idempotency-Key") == "RFD-0A1B2C3D4E5F6789"
        assert sent.form == {"payment_intent": INTENT, "amount": "2500",
                             "metadata[txNo]": "RFD-0A1B2C3D4E5F6789", "metadata[originalTxNo]": TX_NO}
        assert (outcome.status, outcome.provider_transaction_id) == (Status.PENDING, REFUND)

    def test_a_succeeded_refund_is_captured(self, stripe_connector, fake):
        original = captured(currency="EUR", provider_transaction_id=INTENT)
        fake.on("POST", "/v1/refunds", refund_body("succeeded"))

        outcome = stripe_connector.refund(refund_of(original, "25.00"), original, NOW)

        assert fake.requests_to("GET", f"/v1/checkout/sessions/{SESSION}") == []
        assert outcome.status is Status.CAPTURED

    def test_a_refused_refund_fails_with_stripes_message(self, stripe_connector, fake):
        original = captured(currency="EUR", provider_transaction_id=INTENT)
        fake.on("POST", "/v1/refunds", stripe_error(
            400, "Refund amount (€125.00) is greater than unrefunded amount on charge (€100.50)",
            "amount_too_large"))

        outcome = stripe_connector.refund(refund_of(original, "125.00"), original, NOW)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert "greater than unrefunded amount" in outcome.provider_message

    @pytest.mark.parametrize("word, failure, status, reason", [
        ("succeeded", None, Status.CAPTURED, None),
        ("pending", None, Status.PENDING, None),
        ("failed", "expired_or_canceled_card", Status.FAILED, "Card Expired"),
        ("failed", "unknown", Status.FAILED, "Provider Error"),
        ("canceled", None, Status.FAILED, "Provider Error"),
    ])
    def test_refund_status_is_read_from_the_refund(self, stripe_connector, fake, word, failure, status, reason):
        original = captured(currency="EUR", provider_transaction_id=SESSION)
        fake.on("GET", f"/v1/refunds/{REFUND}", refund_body(word, failure))

        outcome = stripe_connector.status(refund_of(original, "25.00", provider_transaction_id=REFUND),
                                          original, NOW)

        assert (outcome.status, outcome.decline_reason) == (status, reason)


class TestCancel:
    def test_an_open_session_is_expired_and_then_reported(self, stripe_connector, fake):
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}", session_body(), session_body("expired"))
        fake.on("POST", f"/v1/checkout/sessions/{SESSION}/expire", session_body("expired"))

        outcome = stripe_connector.cancel(payment(currency="EUR", provider_transaction_id=SESSION))

        expire = fake.requests_to("POST", f"/v1/checkout/sessions/{SESSION}/expire")[0]
        assert expire.header("Idempotency-Key") == f"{TX_NO}-expire"
        assert (outcome.status, outcome.decline_reason) == (Status.DECLINED, "Transaction Expired")

    def test_a_paid_session_cannot_be_voided_and_says_so(self, stripe_connector, fake):
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}",
                session_body("complete", "paid", intent_body("succeeded")))

        outcome = stripe_connector.cancel(payment(currency="EUR", provider_transaction_id=SESSION))

        assert [(s.method, s.path) for s in fake.seen] == [("GET", f"/v1/checkout/sessions/{SESSION}")]
        assert outcome.status is Status.CAPTURED

    def test_a_payment_intent_is_cancelled(self, stripe_connector, fake):
        fake.on("GET", f"/v1/payment_intents/{INTENT}", intent_body("requires_capture"))
        fake.on("POST", f"/v1/payment_intents/{INTENT}/cancel",
                intent_body("canceled", cancellation_reason="requested_by_customer"))

        outcome = stripe_connector.cancel(payment(currency="EUR", provider_transaction_id=INTENT))

        cancel = fake.requests_to("POST", f"/v1/payment_intents/{INTENT}/cancel")[0]
        assert cancel.header("Idempotency-Key") == f"{TX_NO}-cancel"
        assert (outcome.status, outcome.decline_reason) == (Status.DECLINED, "Payment Cancelled By User")

    def test_a_session_paid_while_expiring_reports_where_it_stands(self, stripe_connector, fake):
        fake.on("GET", f"/v1/checkout/sessions/{SESSION}", session_body(),
                session_body("complete", "paid", intent_body("succeeded")))
        fake.on("POST", f"/v1/checkout/sessions/{SESSION}/expire", stripe_error(
            400, "This Checkout Session is not in an expirable state.", "checkout_session_not_expirable"))

        outcome = stripe_connector.cancel(payment(currency="EUR", provider_transaction_id=SESSION))

        assert outcome.status is Status.CAPTURED


class TestBeyondPayments:
    def test_stripe_has_no_bank_list(self, stripe_connector):
        with pytest.raises(BankListError, match="Payment method ng-bank-payout does not support bank lists"):
            stripe_connector.banks(NG_PAYOUT, "NGN", "NG")

    def test_test_connection_reads_the_balance(self, stripe_connector, fake):
        no_money = [{"amount": 0, "currency": "eur", "source_types": {"card": 0}}]
        fake.on("GET", "/v1/balance", {"object": "balance", "livemode": False, "available": no_money,
                                       "pending": no_money})

        assert stripe_connector.test_connection() == "Connected to Stripe (test mode)"

    def test_test_connection_with_a_bad_key_raises_stripes_refusal(self, stripe_connector, fake):
        fake.on("GET", "/v1/balance", stripe_error(401, "Invalid API Key provided: sk_test_****a0c9",
                                                   "api_key_invalid"))

        with pytest.raises(ProviderRejected, match="Invalid API Key"):
            stripe_connector.test_connection()

    def test_a_payment_intent_names_its_payment_through_its_metadata(self, stripe_connector, fake):
        fake.on("GET", f"/v1/payment_intents/{INTENT}", intent_body("succeeded"))

        assert stripe_connector.payment_tx_no(INTENT) == TX_NO
