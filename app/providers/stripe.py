"""Stripe: Checkout Sessions, refunds and disputes through the official stripe package, and its webhooks."""
from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import stripe

from app.payments.disputes import DisputeCallRefused, DisputeFacts, DisputeStatus
from app.payments.model import DECLINE_STATUSES, Kind, PaymentMethod, Status, Transaction
from app.payments.money import is_currency, to_minor, to_units
from app.payments.reconcile import FetchedLine, FetchedSettlement, LineType
from app.payments.provider import Bank, BankListError, Outcome, ProviderUnavailable
from app.webhooks.guard import AddressGuard, TargetRefused

from .events import IgnoredEvent, ProviderEvent, WebhookPayloadError, WebhookSignatureError, header
from .http import (
    ADDRESS_REFUSED, LOGGED_BODY_CHARS, PROVIDER_ERROR, PUBLIC_ONLY, ProviderAnswerError,
    ProviderRejected, Timeouts, answered, explanation, provider_session, redact, rejected_outcome,
    retry_later,
)

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "Stripe-Signature"
WEBHOOK_TOLERANCE = 300  # seconds a signed event stays acceptable

# Stripe's word for the state of an object -> Paydesk status and the decline reason when
# Stripe gives no reason of its own (DECLINE_CODES). A word not listed leaves Pending.
# A payment is read from its Checkout Session: an expired session is final, a complete one
# is read by its payment_status, an open one by its PaymentIntent. A declined card while the
# session is open stays Pending: the customer may try again on Stripe's page.
STATUSES: dict[tuple[str, str], tuple[Status, str | None]] = {
    ("checkout_session", "open"): (Status.PENDING, None),
    ("checkout_session", "expired"): (Status.DECLINED, "Transaction Expired"),  # or the last decline
    ("checkout_payment", "paid"): (Status.CAPTURED, None),
    ("checkout_payment", "unpaid"): (Status.PENDING, None),  # delayed methods settle later
    ("payment_intent", "requires_payment_method"): (Status.PENDING, None),
    ("payment_intent", "requires_confirmation"): (Status.PENDING, None),
    ("payment_intent", "requires_action"): (Status.PENDING, None),  # 3-D Secure in progress
    ("payment_intent", "processing"): (Status.PENDING, None),
    ("payment_intent", "requires_capture"): (Status.AUTHORIZED, None),
    ("payment_intent", "succeeded"): (Status.CAPTURED, None),
    ("payment_intent", "canceled"): (Status.DECLINED, "Payment Cancelled By User"),
    ("refund", "pending"): (Status.PENDING, None),
    ("refund", "requires_action"): (Status.PENDING, None),
    ("refund", "succeeded"): (Status.CAPTURED, None),
    ("refund", "failed"): (Status.FAILED, PROVIDER_ERROR),
    ("refund", "canceled"): (Status.FAILED, PROVIDER_ERROR),
    # Inquiries (warning_*) are not chargebacks yet; "won" gives the money back.
    ("dispute", "needs_response"): (Status.CHARGEBACK, None),
    ("dispute", "under_review"): (Status.CHARGEBACK, None),
    ("dispute", "lost"): (Status.CHARGEBACK, None),
}

# Stripe's dispute status -> Paydesk's. Inquiries (warning_needs_response, warning_under_review,
# warning_closed) are not chargebacks: not listed, they open no dispute record.
DISPUTE_STATUSES: dict[str, DisputeStatus] = {
    "needs_response": DisputeStatus.NEEDS_RESPONSE,
    "under_review": DisputeStatus.UNDER_REVIEW,
    "won": DisputeStatus.WON,
    "lost": DisputeStatus.LOST,
}
# Paydesk's evidence fields -> Stripe's Dispute evidence fields. Stripe has no phone field: the
# phone goes into uncategorized_text (stripe_evidence).
STRIPE_EVIDENCE: dict[str, str] = {
    "customerName": "customer_name",
    "customerEmail": "customer_email_address",
    "productDescription": "product_description",
    "serviceDate": "service_date",
    "shippingAddress": "shipping_address",
    "refundPolicy": "refund_policy",
    "uncategorizedText": "uncategorized_text",
}

# Why: a PaymentIntent's last_payment_error decline_code or code, a refund's failure_reason,
# a PaymentIntent's cancellation_reason.
DECLINE_CODES: dict[str, str] = {
    "insufficient_funds": "Insufficient Funds",
    "expired_card": "Card Expired",
    "expired_or_canceled_card": "Card Expired",
    "incorrect_number": "Invalid Card Details",
    "invalid_number": "Invalid Card Details",
    "incorrect_cvc": "Invalid Card Details",
    "invalid_cvc": "Invalid Card Details",
    "invalid_expiry_month": "Invalid Card Details",
    "invalid_expiry_year": "Invalid Card Details",
    "incorrect_pin": "Invalid Card Details",
    "card_velocity_exceeded": "Daily Limit Exceeded",
    "withdrawal_count_limit_exceeded": "Daily Limit Exceeded",
    "fraudulent": "Suspected Fraud",
    "merchant_blacklist": "Suspected Fraud",
    "stolen_card": "Suspected Fraud",
    "lost_card": "Suspected Fraud",
    "lost_or_stolen_card": "Suspected Fraud",
    "pickup_card": "Restricted Card",
    "restricted_card": "Restricted Card",
    "transaction_not_allowed": "Restricted Card",
    "card_not_supported": "Payment Method Not Available",
    "currency_not_supported": "Currency Not Supported",
    "authentication_required": "3DS Authentication Failed",
    "payment_intent_authentication_failure": "3DS Authentication Failed",
    "processing_error": PROVIDER_ERROR,
    "generic_decline": "Declined By Bank",
    "do_not_honor": "Declined By Bank",
    "card_declined": "Declined By Bank",
    "declined": "Declined By Bank",
    "abandoned": "Transaction Expired",
    "requested_by_customer": "Payment Cancelled By User",
}


# Where Stripe's amounts differ from ISO 4217's minor digits (docs.stripe.com/currencies):
# MGA is zero-decimal at Stripe, and ISK stays two-decimal in its API (100 = 1 krona).
STRIPE_MINOR_DIGITS = {"MGA": 0, "ISK": 2}


def stripe_amount(amount: Decimal, currency: str) -> int:
    """The amount in the units Stripe's API takes; ValueError for a fraction Stripe cannot take."""
    digits = STRIPE_MINOR_DIGITS.get(currency)
    if digits is None:
        return to_minor(amount, currency)
    try:
        return to_units(amount, digits)
    except ValueError:
        raise ValueError(f"Stripe takes {currency} amounts in whole units only") from None


def iso_minor(stripe_units: int, currency: str) -> int:
    """A Stripe amount in ISO 4217 minor units (ISK: Stripe's 100 is 1 krona, ISO's 1)."""
    digits = STRIPE_MINOR_DIGITS.get(currency)
    if digits is None:
        return stripe_units
    return to_minor(Decimal(stripe_units).scaleb(-digits), currency)


# A balance transaction's type -> the settlement line it makes; "payout" (the payout itself) is
# no line, and a type not listed is an "other" line (fees, adjustments, transfers).
BALANCE_TYPES: dict[str, LineType] = {
    "charge": LineType.PAYMENT,
    "payment": LineType.PAYMENT,
    "refund": LineType.REFUND,
    "payment_refund": LineType.REFUND,
    "payment_failure_refund": LineType.REFUND,
    "dispute": LineType.DISPUTE,
    "adjustment": LineType.OTHER,  # a dispute's when its source is a dispute (see balance_line)
}
BALANCE_PAGE_SIZE = 100
BALANCE_PAGES = 50  # a bound, far above any payout's transactions (5,000)
PAYOUT_PAGE_SIZE = 100  # the newest payouts a fetch reads


def payout_settlement(payout: Mapping) -> FetchedSettlement | None:
    """A Payout without its lines; gross and fees come with them (with_lines). None when it lacks
    an id, a known currency or an arrival date."""
    currency = str(payout.get("currency") or "").upper()
    arrival = payout.get("arrival_date")
    if not payout.get("id") or not is_currency(currency) or not isinstance(arrival, int):
        return None
    amount = iso_minor(int(payout.get("amount") or 0), currency)
    return FetchedSettlement(payout["id"], datetime.fromtimestamp(arrival, UTC).date(), currency,
                             amount, 0, amount, str(payout.get("status") or "unknown"))


def balance_line(row: Mapping) -> FetchedLine | None:
    """A balance transaction of a payout (its source expanded) as a settlement line; None for the
    payout's own row.

    A payment's line names its PaymentIntent and, from the charge's metadata, Paydesk's txNo; a
    refund's its Refund (the id Paydesk keeps) and txNo; a dispute's the disputed PaymentIntent.
    """
    kind = str(row.get("type") or "")
    if kind == "payout":
        return None
    source = row.get("source")
    source = source if isinstance(source, Mapping) else {"id": source}
    line_type = BALANCE_TYPES.get(kind, LineType.OTHER)
    if source.get("object") == "dispute":
        line_type = LineType.DISPUTE
    currency = str(row.get("currency") or "").upper()
    if not is_currency(currency):
        return None
    metadata = source.get("metadata") if isinstance(source.get("metadata"), Mapping) else {}
    intent = source.get("payment_intent")
    if isinstance(intent, Mapping):  # expanded: Paydesk's txNo is in the PaymentIntent's metadata
        intent_metadata = intent.get("metadata") if isinstance(intent.get("metadata"), Mapping) else {}
        metadata = {**intent_metadata, **metadata}
        intent = intent.get("id")
    if line_type in (LineType.PAYMENT, LineType.DISPUTE):
        provider_id = intent or source.get("id") or row.get("id")
    else:
        provider_id = source.get("id") or row.get("id")
    return FetchedLine(str(provider_id), line_type, iso_minor(int(row.get("amount") or 0), currency),
                       iso_minor(int(row.get("fee") or 0), currency),
                       iso_minor(int(row.get("net") or 0), currency), currency, metadata.get("txNo"))


def outcome(kind: str, word: str | None, *, message: str | None = None, reason: str | None = None,
            provider_transaction_id: str | None = None, payment_id: str | None = None) -> Outcome:
    """Stripe's word for an object through STATUSES; unknown words stay Pending with Stripe's words."""
    row = STATUSES.get((kind, word or ""))
    if row is None:
        return Outcome(Status.PENDING, provider_transaction_id, word, message,
                       provider_payment_id=payment_id)
    status, default_reason = row
    return Outcome(status, provider_transaction_id, word, message,
                   decline_reason=(reason or default_reason) if status in DECLINE_STATUSES else None,
                   provider_payment_id=payment_id)


def _reason(*codes: str | None) -> str | None:
    return next((DECLINE_CODES[code] for code in codes if code in DECLINE_CODES), None)


def payment_intent_outcome(intent: Mapping) -> Outcome:
    """A PaymentIntent on its own: its status, and why from its last error or cancellation."""
    error = intent.get("last_payment_error") or {}
    return outcome("payment_intent", intent.get("status"), message=error.get("message"),
                   reason=_reason(intent.get("cancellation_reason"), error.get("decline_code"),
                                  error.get("code")),
                   payment_id=intent.get("id"))


def session_outcome(session: Mapping) -> Outcome:
    """A payment's Checkout Session (payment_intent expanded or an id) as an Outcome.

    provider_transaction_id stays the session id, the id Paydesk keeps for the payment.
    """
    intent = session.get("payment_intent")
    intent = intent if isinstance(intent, Mapping) else None
    payment_id = intent.get("id") if intent else session.get("payment_intent")
    state = session.get("status")
    if state == "expired":
        error = (intent or {}).get("last_payment_error") or {}
        return outcome("checkout_session", state, provider_transaction_id=session.get("id"),
                       message=error.get("message") or "Checkout Session expired",
                       reason=_reason(error.get("decline_code"), error.get("code")), payment_id=payment_id)
    if state == "complete":
        return outcome("checkout_payment", session.get("payment_status"),
                       provider_transaction_id=session.get("id"), message="Checkout Session complete",
                       payment_id=payment_id)
    if intent is not None:
        return replace(payment_intent_outcome(intent), provider_transaction_id=session.get("id"))
    return outcome("checkout_session", state, provider_transaction_id=session.get("id"),
                   message="Awaiting customer at Stripe Checkout", payment_id=payment_id)


def refund_outcome(refund: Mapping) -> Outcome:
    """A Refund object as an Outcome; failure_reason says why a failed one failed."""
    failure = refund.get("failure_reason")
    word = refund.get("status")
    return outcome("refund", word, provider_transaction_id=refund.get("id"),
                   message=f"Refund {word}" + (f": {failure}" if failure else ""),
                   reason=_reason(failure))


def dispute_facts(dispute: Mapping) -> DisputeFacts:
    """A Dispute object as what Paydesk keeps of it (the deadline is evidence_details.due_by)."""
    details = dispute.get("evidence_details") or {}
    due = details.get("due_by") if isinstance(details, Mapping) else None
    currency = dispute.get("currency")
    amount = dispute.get("amount")
    word = dispute.get("status")
    return DisputeFacts(
        provider_dispute_id=str(dispute.get("id")), status=DISPUTE_STATUSES.get(word or ""),
        provider_status=word, amount_minor=amount if isinstance(amount, int) else None,
        currency=currency.upper() if isinstance(currency, str) else None, reason=dispute.get("reason"),
        due_by=datetime.fromtimestamp(due, UTC) if isinstance(due, int) else None)


def stripe_evidence(evidence: Mapping[str, str]) -> dict[str, str]:
    """Paydesk's evidence fields as a Dispute's evidence hash."""
    sent = {STRIPE_EVIDENCE[name]: value for name, value in evidence.items() if name in STRIPE_EVIDENCE and value}
    phone = evidence.get("customerPhone")
    if phone:
        text = sent.get("uncategorized_text")
        sent["uncategorized_text"] = f"Customer phone: {phone}" + (f"\n{text}" if text else "")
    return sent


def dispute_outcome(dispute: Mapping) -> Outcome:
    """A Dispute as an Outcome for its payment (Chargeback once it is a real dispute)."""
    return outcome("dispute", dispute.get("status"),
                   message=f"Dispute {dispute.get('id')} opened: {dispute.get('reason') or 'no reason given'}",
                   payment_id=dispute.get("payment_intent"))


class StripeConnector:
    """Stripe behind the Provider interface, with one merchant account's secret key."""

    name = "stripe"
    in_process = False  # a network call: never made inside a unit of work

    def __init__(self, secret_key: str, base_url: str | None = None,
                 timeouts: Timeouts = Timeouts(), return_url: str | None = None,
                 guard: AddressGuard = PUBLIC_ONLY):
        # return_url: Paydesk's page the customer comes back to from Checkout ("{tx_no}" is
        # replaced); it knows the outcome and sends the customer on to SuccessUrl or FailureUrl.
        # Without it the payment's own SuccessUrl and FailureUrl are used.
        self.return_url = return_url
        self.client = stripe.StripeClient(
            secret_key,
            # Files go to files.stripe.com unless told: the account's base URL takes both.
            base_addresses={"api": base_url, "files": base_url} if base_url else None,
            # Every call goes through the guard: the base URL is the merchant's to choose.
            http_client=stripe.RequestsClient(timeout=timeouts.as_tuple(),
                                              session=provider_session(guard)),
            # No retries inside a call: a Pending transaction is asked again by the worker.
            max_network_retries=0,
        )

    def __repr__(self) -> str:
        return "StripeConnector()"  # never the key

    # The Provider interface

    def create(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        """A Checkout Session in payment mode (its URL in redirect_url); Stripe sends no payouts here."""
        if tx.kind is Kind.PAYOUT:
            return Outcome(Status.FAILED, provider_message="Payouts are not offered through Stripe",
                           decline_reason="Payment Method Not Available")
        try:
            unit_amount = stripe_amount(tx.amount, tx.currency)
        except ValueError as error:
            return Outcome(Status.FAILED, provider_message=str(error), decline_reason=PROVIDER_ERROR)
        paydesk_page = self.return_url.format(tx_no=tx.tx_no) if self.return_url else None
        params: dict = {
            "mode": "payment",
            "client_reference_id": tx.tx_no,
            "line_items": [{
                "quantity": 1,
                "price_data": {
                    "currency": tx.currency.lower(),
                    "unit_amount": unit_amount,
                    "product_data": {"name": tx.statement_descriptor or f"Payment {tx.reference}"},
                },
            }],
            "metadata": {"txNo": tx.tx_no, "reference": tx.reference},
            # The PaymentIntent carries the txNo too, so its events name the payment.
            "payment_intent_data": {"metadata": {"txNo": tx.tx_no}},
        }
        for name, url in (("success_url", paydesk_page or tx.success_url),
                          ("cancel_url", paydesk_page or tx.failure_url)):
            if url:
                params[name] = url
        if tx.billing.get("email"):
            params["customer_email"] = tx.billing["email"]
        try:
            session = self._call(self.client.v1.checkout.sessions.create, params=params,
                                 options={"idempotency_key": tx.tx_no})
        except ProviderRejected as refused:
            return rejected_outcome(refused)
        found = session_outcome(session)
        found.redirect_url = session.get("url")
        return found

    def refund(self, refund: Transaction, original: Transaction, now: datetime) -> Outcome:
        """POST /v1/refunds for the original's PaymentIntent, the refund's txNo as Idempotency-Key."""
        try:
            amount = stripe_amount(refund.amount, refund.currency)
        except ValueError as error:
            return Outcome(Status.FAILED, provider_message=str(error), decline_reason=PROVIDER_ERROR)
        try:
            intent = self._payment_intent_id(original)
            if intent is None:
                return Outcome(Status.FAILED, provider_message="The payment has no PaymentIntent at Stripe",
                               decline_reason=PROVIDER_ERROR)
            created = self._call(self.client.v1.refunds.create, params={
                "payment_intent": intent,
                "amount": amount,
                "metadata": {"txNo": refund.tx_no, "originalTxNo": original.tx_no},
            }, options={"idempotency_key": refund.tx_no})
        except ProviderRejected as refused:
            return rejected_outcome(refused)
        return refund_outcome(created)

    def status(self, tx: Transaction, original: Transaction | None, now: datetime) -> Outcome:
        """A payment from its Checkout Session and PaymentIntent, a refund from its Refund.

        A refused question (4xx) says nothing about the money, so it raises
        ProviderUnavailable (the transaction stays Pending) instead of failing it.
        """
        known = tx.provider_transaction_id
        if not known:
            return Outcome(Status.PENDING, provider_message="Not yet opened at Stripe")
        try:
            if tx.kind is Kind.REFUND:
                return refund_outcome(self._call(self.client.v1.refunds.retrieve, known))
            if known.startswith("pi_"):
                return payment_intent_outcome(self._call(self.client.v1.payment_intents.retrieve, known))
            return session_outcome(self._session(known))
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Stripe refused the status request: {refused}") from None

    def banks(self, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
        """Stripe offers no bank list for this product."""
        raise BankListError(f"Payment method {method.method_id} does not support bank lists")

    @staticmethod
    def bank_list_country(method: PaymentMethod, currency: str, country: str | None) -> str:
        """Stripe offers no bank list for this product: no list is ever stored or fetched."""
        raise BankListError(f"Payment method {method.method_id} does not support bank lists")

    def fetch_banks(self, currency: str, country: str) -> list[Bank]:
        """Stripe offers no bank list for this product."""
        raise BankListError(f"Stripe lists no {currency} banks")

    # Beyond the interface

    def cancel(self, tx: Transaction) -> Outcome:
        """Expire an open Checkout Session, or cancel its PaymentIntent; then where the payment stands.

        A session that completed meanwhile cannot be voided: its state (Captured) is answered.
        """
        known = tx.provider_transaction_id
        if tx.kind is not Kind.PAYMENT or not known:
            return self.status(tx, None, datetime.now(UTC))
        try:
            if known.startswith("cs_"):
                session = self._session(known)
                if session.get("status") != "open":
                    return session_outcome(session)  # complete or expired: nothing left to void
                self._call(self.client.v1.checkout.sessions.expire, known,
                           options={"idempotency_key": f"{tx.tx_no}-expire"})
                return session_outcome(self._session(known))
            intent = self._call(self.client.v1.payment_intents.retrieve, known)
            if intent.get("status") in ("requires_payment_method", "requires_capture",
                                        "requires_confirmation", "requires_action"):
                intent = self._call(self.client.v1.payment_intents.cancel, known,
                                    options={"idempotency_key": f"{tx.tx_no}-cancel"})
            return payment_intent_outcome(intent)
        except ProviderRejected:
            # The state moved under us (paid, already expired): report where it is now.
            return self.status(tx, None, datetime.now(UTC))

    def test_connection(self) -> str:
        """GET /v1/balance, which needs a valid secret key."""
        balance = self._call(self.client.v1.balance.retrieve)
        return f"Connected to Stripe ({'live' if balance.get('livemode') else 'test'} mode)"

    evidence_takes_files = True
    accept_needs_receipt = False

    def upload_dispute_file(self, _provider_dispute_id: str, filename: str, data: bytes, _content_type: str,
                            idempotency_key: str) -> str:
        """POST /v1/files (multipart, purpose dispute_evidence) on the files base address; the
        File's id, for a Dispute's evidence file fields. DisputeCallRefused when Stripe refuses it."""
        upload = io.BytesIO(data)
        upload.name = filename  # the multipart part's filename
        try:
            answer = self._call(self.client.v1.files.create,
                                params={"file": upload, "purpose": "dispute_evidence"},
                                options={"idempotency_key": idempotency_key})
        except ProviderRejected as refused:
            raise DisputeCallRefused(f"Stripe refused the file {filename}: {refused}") from None
        file_id = answer.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise ProviderUnavailable("Stripe answered a file upload without a file id")
        return file_id

    def submit_dispute_evidence(self, provider_dispute_id: str, evidence: Mapping[str, str],
                                idempotency_key: str, files: Mapping[str, str] | None = None) -> DisputeFacts:
        """POST /v1/disputes/{id} with the evidence and submit=true; the dispute as Stripe answers.
        `files`: Stripe's evidence file fields (receipt, customer_communication, ...) -> File ids.
        DisputeCallRefused when Stripe refuses it (a closed dispute, a deadline passed)."""
        return self._dispute_call(self.client.v1.disputes.update, provider_dispute_id,
                                  params={"evidence": {**stripe_evidence(evidence), **(files or {})},
                                          "submit": True},
                                  options={"idempotency_key": idempotency_key})

    def dispute_status(self, provider_dispute_id: str) -> DisputeFacts:
        """GET /v1/disputes/{id}: where the dispute stands (the worker's check for missed events)."""
        return self._dispute_call(self.client.v1.disputes.retrieve, provider_dispute_id)

    def accept_dispute(self, provider_dispute_id: str, idempotency_key: str) -> DisputeFacts:
        """POST /v1/disputes/{id}/close: the merchant accepts the dispute (Stripe then says lost)."""
        return self._dispute_call(self.client.v1.disputes.close, provider_dispute_id,
                                  options={"idempotency_key": idempotency_key})

    def _dispute_call(self, method: Callable, *args, **kwargs) -> DisputeFacts:
        try:
            return dispute_facts(self._call(method, *args, **kwargs))
        except ProviderRejected as refused:
            raise DisputeCallRefused(f"Stripe refused: {refused}") from None

    def payment_tx_no(self, payment_intent: str) -> str | None:
        """Paydesk's txNo of a PaymentIntent (from its metadata), for events that name only it (disputes)."""
        try:
            intent = self._call(self.client.v1.payment_intents.retrieve, payment_intent)
        except ProviderRejected:
            return None
        return (intent.get("metadata") or {}).get("txNo")

    # Settlements (app/providers/settlement_fetch.py)

    def settlements(self) -> list[FetchedSettlement]:
        """The newest payouts (GET /v1/payouts), without their lines (with_lines adds them)."""
        try:
            answer = self._call(self.client.v1.payouts.list, params={"limit": PAYOUT_PAGE_SIZE})
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Stripe refused the payout list: {refused}") from None
        found = (payout_settlement(payout) for payout in answer.get("data") or [])
        return [settlement for settlement in found if settlement is not None]

    def with_lines(self, settlement: FetchedSettlement) -> FetchedSettlement:
        """The payout with its balance transactions (GET /v1/balance_transactions?payout=, every
        page); its gross and fees are theirs added up, its net what the payout paid."""
        lines: list[FetchedLine] = []
        params: dict = {"payout": settlement.provider_settlement_id, "limit": BALANCE_PAGE_SIZE,
                        # The charge's PaymentIntent too: it carries Paydesk's txNo (the
                        # Checkout Session set it there), which a charge's own metadata does not.
                        "expand": ["data.source", "data.source.payment_intent"]}
        try:
            for _page in range(BALANCE_PAGES):
                answer = self._call(self.client.v1.balance_transactions.list, params=params)
                rows = answer.get("data") or []
                lines += [line for line in map(balance_line, rows) if line is not None]
                if not answer.get("has_more") or not rows:
                    break
                params = {**params, "starting_after": rows[-1]["id"]}
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Stripe refused the payout's transactions: {refused}") from None
        return replace(settlement, gross_minor=sum(line.gross_minor for line in lines),
                       fees_minor=sum(line.fee_minor for line in lines), lines=lines)

    # Requests

    def _session(self, session_id: str) -> dict:
        return self._call(self.client.v1.checkout.sessions.retrieve, session_id,
                          params={"expand": ["payment_intent"]})

    def _payment_intent_id(self, payment: Transaction) -> str | None:
        known = payment.provider_transaction_id or ""
        if known.startswith("pi_"):
            return known
        if not known:
            return None
        intent = self._session(known).get("payment_intent")
        return intent.get("id") if isinstance(intent, Mapping) else intent

    def _call(self, method: Callable, *args, **kwargs) -> dict:
        """One stripe-python call as a plain dict; ProviderUnavailable or ProviderRejected as Paystack's.

        Stripe's own message is kept only from an error object in its documented shape; any other
        answer is told by its status in fixed words, and its body goes to the log alone.
        """
        try:
            return method(*args, **kwargs).to_dict()
        except stripe.APIConnectionError as error:
            if isinstance(error.__cause__, TargetRefused):
                log.warning("Stripe not asked: %s", error.__cause__)
                raise ProviderUnavailable(f"Stripe was not asked: {ADDRESS_REFUSED}") from None
            cause = type(error.__cause__).__name__ if error.__cause__ else "no answer"
            log.warning("Stripe could not be reached: %s", redact(str(error.user_message)))
            raise ProviderUnavailable(f"Stripe could not be reached: {cause}") from None
        except stripe.StripeError as error:
            http_status = error.http_status
            error_object = (error.json_body or {}).get("error") if isinstance(error.json_body, dict) else None
            words = error_object.get("message") if isinstance(error_object, dict) else None
            shaped = isinstance(words, str) and bool(words)
            logged = redact(words if shaped else str(error.http_body or "")[:LOGGED_BODY_CHARS])
            if http_status is None:
                log.warning("Stripe gave no HTTP answer: %s", redact(str(error.user_message)))
                raise ProviderUnavailable(f"Stripe gave no usable answer ({type(error).__name__})") from None
            if retry_later(http_status):
                log.warning("Stripe answered HTTP %s: %s", http_status, logged)
                raise ProviderAnswerError(f"Stripe answered HTTP {http_status}: {words}" if shaped
                                          else answered("Stripe", http_status), http_status) from None
            log.info("Stripe refused: HTTP %s %s", http_status, logged)
            raise ProviderRejected(words if shaped else explanation(http_status), http_status,
                                   error.code) from None


# Events by type: which transaction kind they report and how their object reads.
_EVENTS: dict[str, tuple[Kind, Callable[[Mapping], Outcome]]] = {
    "checkout.session.completed": (Kind.PAYMENT, session_outcome),
    "checkout.session.expired": (Kind.PAYMENT, session_outcome),
    "payment_intent.succeeded": (Kind.PAYMENT, payment_intent_outcome),
    "payment_intent.payment_failed": (Kind.PAYMENT, payment_intent_outcome),
    "refund.created": (Kind.REFUND, refund_outcome),
    "refund.updated": (Kind.REFUND, refund_outcome),
    "refund.failed": (Kind.REFUND, refund_outcome),
    "charge.dispute.created": (Kind.PAYMENT, dispute_outcome),
    "charge.dispute.updated": (Kind.PAYMENT, dispute_outcome),
    "charge.dispute.closed": (Kind.PAYMENT, dispute_outcome),
    "charge.dispute.funds_withdrawn": (Kind.PAYMENT, dispute_outcome),
    "charge.dispute.funds_reinstated": (Kind.PAYMENT, dispute_outcome),
}


# The event types to choose for a Stripe webhook endpoint (what Paydesk acts on).
WEBHOOK_EVENTS = tuple(_EVENTS)


def parse_webhook(body: bytes, headers: Mapping[str, str], webhook_secret: str,
                  tolerance: int = WEBHOOK_TOLERANCE) -> ProviderEvent | IgnoredEvent:
    """Verify Stripe-Signature with the endpoint's whsec_ secret and read the event.

    Sessions name the payment by client_reference_id, PaymentIntents and refunds by
    metadata.txNo. A dispute names only its PaymentIntent (provider_transaction_id):
    the route finds the payment with StripeConnector.payment_tx_no.
    """
    signature = header(headers, SIGNATURE_HEADER)
    if signature is not None and not signature.isascii():
        raise WebhookSignatureError("Stripe signature refused: the header is not ASCII")
    try:
        event = stripe.Webhook.construct_event(body, signature, webhook_secret, tolerance=tolerance).to_dict()
    except stripe.SignatureVerificationError as error:
        raise WebhookSignatureError(f"Stripe signature refused: {error.user_message}") from None
    except ValueError:  # not UTF-8 or not JSON, though signed
        raise WebhookPayloadError("Stripe event is not JSON") from None
    event_type = str(event.get("type"))
    handler = _EVENTS.get(event_type)
    obj = (event.get("data") or {}).get("object")
    if handler is None:
        return IgnoredEvent("stripe", event_type, event.get("id"))
    if not isinstance(obj, Mapping):
        raise WebhookPayloadError(f"Stripe event {event.get('id')} has no data object")
    kind, read = handler
    metadata = obj.get("metadata") or {}
    if event_type.startswith("checkout.session."):
        tx_no, provider_id = obj.get("client_reference_id"), obj.get("id")
        amount = obj.get("amount_total")
    elif event_type.startswith("charge.dispute."):
        tx_no, provider_id, amount = None, obj.get("payment_intent"), obj.get("amount")
    else:
        tx_no, provider_id, amount = metadata.get("txNo"), obj.get("id"), obj.get("amount")
    currency = obj.get("currency")
    return ProviderEvent("stripe", event_type, kind, read(obj), tx_no=tx_no,
                         provider_transaction_id=provider_id,
                         amount_minor=amount if isinstance(amount, int) else None,
                         currency=currency.upper() if isinstance(currency, str) else None,
                         event_id=event.get("id"),
                         dispute=dispute_facts(obj) if event_type.startswith("charge.dispute.") else None)
