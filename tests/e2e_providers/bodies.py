"""What Paystack and Stripe answer and send, written from their API references, for one Paydesk payment.

The shapes are those of tests/providers (same fields, same values where they do not name the
payment); here every builder takes the Paydesk numbers of the transaction the test created.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import time

from tests.providers.fake_provider import Answer

# Paystack ids of the payment, its refund and a payout transfer (as Paystack would assign them).
PAYSTACK_TX_ID = 4099260516
PAYSTACK_REFUND_ID = 15581137
AUTHORIZATION_URL = "https://checkout.paystack.com/0peioxfhpn"
TRANSFER_CODE = "TRF_vsyqdmlzble3uii"
RECIPIENT_CODE = "RCP_t0ya41mp35flk40"


# Paystack


def initialize_answer(tx_no: str) -> dict:
    """POST /transaction/initialize."""
    return {"status": True, "message": "Authorization URL created",
            "data": {"authorization_url": AUTHORIZATION_URL, "access_code": "0peioxfhpn",
                     "reference": tx_no}}


def paystack_transaction(tx_no: str, amount_kobo: int, status: str = "success",
                         gateway_response: str = "Successful", **data) -> dict:
    """A Paystack transaction object (verify's data, charge.success's data)."""
    return {"id": PAYSTACK_TX_ID, "domain": "live", "status": status, "reference": tx_no,
            "receipt_number": None, "amount": amount_kobo, "message": None,
            "gateway_response": gateway_response, "paid_at": "2026-11-23T10:03:12.000Z",
            "created_at": "2026-11-23T10:00:01.000Z", "channel": "card", "currency": "NGN",
            "ip_address": "102.89.34.12", "metadata": {"txNo": tx_no}, "fees": 25750,
            "authorization": {"authorization_code": "AUTH_uh8bcl3zbn", "bin": "408408", "last4": "4081",
                              "exp_month": "12", "exp_year": "2030", "channel": "card",
                              "card_type": "visa ", "bank": "TEST BANK", "country_code": "NG",
                              "brand": "visa", "reusable": True},
            "customer": {"id": 181873746, "email": "ada@example.com",
                         "customer_code": "CUS_1rkzaqsv4rrhqo6"},
            "requested_amount": amount_kobo, **data}


def verify_answer(tx_no: str, amount_kobo: int, status: str = "success",
                  gateway_response: str = "Successful") -> dict:
    """GET /transaction/verify/:reference."""
    return {"status": True, "message": "Verification successful",
            "data": paystack_transaction(tx_no, amount_kobo, status, gateway_response)}


def charge_success(tx_no: str, amount_kobo: int) -> dict:
    """Paystack's charge.success event."""
    return {"event": "charge.success", "data": paystack_transaction(
        tx_no, amount_kobo, source={"type": "api", "source": "merchant_api",
                                    "entry_point": "transaction_initialize"})}


def paystack_refund(tx_no: str, refund_tx_no: str, amount_kobo: int, status: str, **data) -> dict:
    """A Paystack refund object."""
    return {"integration": 463433, "transaction": PAYSTACK_TX_ID, "dispute": None, "settlement": None,
            "id": PAYSTACK_REFUND_ID, "domain": "live", "currency": "NGN", "amount": amount_kobo,
            "status": status, "refunded_at": None, "refunded_by": "ops@merchant.example",
            "customer_note": "", "merchant_note": f"Paydesk refund {refund_tx_no}", "deducted_amount": 0,
            "fully_deducted": 0, "createdAt": "2026-11-23T10:10:00.000Z",
            "transaction_reference": tx_no, **data}


def refund_list(*refunds: dict) -> dict:
    """GET /refund?transaction=..."""
    return {"status": True, "message": "Refunds retrieved", "data": list(refunds),
            "meta": {"total": len(refunds), "skipped": 0, "perPage": 100, "page": 1}}


def refund_event(name: str, tx_no: str, amount_kobo: int, status: str) -> dict:
    """Paystack's refund.* events: they name the original, not Paydesk's refund."""
    return {"event": name, "data": {
        "status": status, "transaction_reference": tx_no, "refund_reference": "1J1TNW2F5QHV",
        "amount": amount_kobo, "currency": "NGN", "processor": "mpgs_zen",
        "customer": {"first_name": "Ada", "last_name": "Obi", "email": "ada@example.com"},
        "integration": 463433, "domain": "live"}}


def bank_row(code: str, name: str, **row) -> dict:
    """A row of GET /bank."""
    return {"id": int(code) if code.isdigit() else 1, "name": name,
            "slug": name.lower().replace(" ", "-"), "code": code, "longcode": code, "gateway": "",
            "pay_with_bank": False, "supports_transfer": True, "available_for_direct_debit": False,
            "active": True, "country": "Nigeria", "currency": "NGN", "type": "nuban", "is_deleted": False,
            "createdAt": "2016-07-14T10:04:29.000Z", "updatedAt": "2024-02-16T09:42:25.000Z", **row}


def bank_list() -> dict:
    """GET /bank?country=nigeria&currency=NGN: one page, one bank that takes no transfers."""
    return {"status": True, "message": "Banks retrieved",
            "data": [bank_row("058", "Guaranty Trust Bank"), bank_row("044", "Access Bank"),
                     bank_row("50211", "Kuda Bank", supports_transfer=False),
                     bank_row("011", "First Bank of Nigeria")],
            "meta": {"next": None, "previous": None, "perPage": 100}}


def recipient_answer(holder: str, account: str, bank: str) -> Answer:
    """POST /transferrecipient: 201 with the recipient."""
    return Answer(201, {"status": True, "message": "Transfer recipient created successfully", "data": {
        "active": True, "createdAt": "2026-11-23T10:20:00.000Z", "currency": "NGN", "domain": "live",
        "id": 6788170, "integration": 463433, "name": holder, "recipient_code": RECIPIENT_CODE,
        "type": "nuban", "updatedAt": "2026-11-23T10:20:00.000Z", "is_deleted": False,
        "details": {"authorization_code": None, "account_number": account, "account_name": None,
                    "bank_code": bank, "bank_name": "Guaranty Trust Bank"}}})


def transfer_object(tx_no: str, amount_kobo: int, status: str, **data) -> dict:
    """A Paystack transfer object (initiate, verify, transfer.* data)."""
    return {"integration": 463433, "domain": "live", "amount": amount_kobo, "currency": "NGN",
            "source": "balance", "reason": "PAYDESK PAYOUT", "recipient": 6788170, "status": status,
            "transfer_code": TRANSFER_CODE, "id": 24226816, "reference": tx_no.lower(),
            "createdAt": "2026-11-23T10:20:01.000Z", "updatedAt": "2026-11-23T10:20:01.000Z", **data}


def transfer_event(name: str, tx_no: str, amount_kobo: int, status: str) -> dict:
    """Paystack's transfer.* events."""
    return {"event": name, "data": transfer_object(
        tx_no, amount_kobo, status, failures=None, titan_code=None, transferred_at=None,
        recipient={"name": "Ada Obi", "recipient_code": RECIPIENT_CODE, "type": "nuban"},
        session={"provider": "nip", "id": "110006261123102140000012345678"}, gateway_response=None)}


def paystack_signed(event: dict | bytes, secret: str) -> tuple[bytes, dict]:
    """A Paystack delivery: the raw body and x-paystack-signature (hex HMAC-SHA512 with the secret key)."""
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    return body, {"Content-Type": "application/json",
                  "x-paystack-signature": hmac.new(secret.encode(), body, hashlib.sha512).hexdigest()}


# Stripe

SESSION_ID = "cs_test_a1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvWxYz012345"
INTENT_ID = "pi_3QeXyZ2eZvKYlo2C0abc1234"
REFUND_ID = "re_3QeXyZ2eZvKYlo2C1xyz9876"
CHARGE_ID = "ch_3QeXyZ2eZvKYlo2C0def5678"
SESSION_URL = f"https://checkout.stripe.com/c/pay/{SESSION_ID}#fidkdWxOYHwnPyd1blpxYHZxWjA0"


def session(tx_no: str, amount: int, status: str = "open", payment_status: str = "unpaid",
            payment_intent=None, reference: str = "order") -> dict:
    """A Checkout Session object."""
    return {
        "id": SESSION_ID, "object": "checkout.session", "amount_subtotal": amount, "amount_total": amount,
        "cancel_url": None, "client_reference_id": tx_no, "created": 1795428000, "currency": "eur",
        "customer_email": "ada@example.com", "expires_at": 1795514400, "livemode": False,
        "metadata": {"txNo": tx_no, "reference": reference}, "mode": "payment",
        "payment_intent": payment_intent, "payment_status": payment_status, "status": status,
        "success_url": None, "url": SESSION_URL if status == "open" else None,
    }


def payment_intent(tx_no: str, amount: int, status: str = "succeeded") -> dict:
    """A PaymentIntent object."""
    return {"id": INTENT_ID, "object": "payment_intent", "amount": amount,
            "amount_received": amount if status == "succeeded" else 0, "currency": "eur", "status": status,
            "metadata": {"txNo": tx_no}, "last_payment_error": None, "cancellation_reason": None,
            "latest_charge": CHARGE_ID, "livemode": False, "created": 1795428100}


def stripe_refund(refund_tx_no: str, tx_no: str, amount: int, status: str) -> dict:
    """A Refund object."""
    return {"id": REFUND_ID, "object": "refund", "amount": amount, "balance_transaction": None,
            "charge": CHARGE_ID, "created": 1795429000, "currency": "eur",
            "metadata": {"txNo": refund_tx_no, "originalTxNo": tx_no}, "payment_intent": INTENT_ID,
            "reason": None, "status": status, "failure_reason": None}


def dispute(amount: int, status: str = "needs_response") -> dict:
    """A Dispute object."""
    return {"id": "dp_1QeXyZ2eZvKYlo2C9ghi0000", "object": "dispute", "amount": amount,
            "charge": CHARGE_ID, "currency": "eur", "payment_intent": INTENT_ID,
            "reason": "fraudulent", "status": status, "is_charge_refundable": False,
            "livemode": False, "created": 1795430000}


def stripe_event(event_type: str, obj: dict, event_id: str = "evt_1QeXyZ2eZvKYlo2C") -> dict:
    """An Event object wrapping one API object."""
    return {"id": event_id, "object": "event", "api_version": "2025-03-31.basil", "created": 1795430000,
            "data": {"object": obj}, "livemode": False, "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None}, "type": event_type}


def stripe_signed(event: dict | bytes, secret: str, at: int | None = None) -> tuple[bytes, dict]:
    """A Stripe delivery: raw body and Stripe-Signature t=<time>,v1=<hex HMAC-SHA256 of "t.body">."""
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    timestamp = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return body, {"Content-Type": "application/json", "Stripe-Signature": f"t={timestamp},v1={digest}"}


def stripe_error(status: int, message: str, code: str, error_type: str = "invalid_request_error") -> Answer:
    """An error answer in Stripe's shape."""
    return Answer(status, {"error": {"code": code, "doc_url": f"https://stripe.com/docs/error-codes/{code}",
                                     "message": message, "type": error_type}})
