"""Paystack: hosted checkout, refunds, bank lists and bank payouts over its REST API, and its webhooks."""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, date, datetime
from urllib.parse import quote, urlencode

from app.payments.disputes import DisputeCallRefused, DisputeFacts, DisputeStatus
from app.payments.model import DECLINE_STATUSES, Kind, PaymentMethod, Status, Transaction
from app.payments.money import is_currency, to_minor
from app.payments.reconcile import FetchedLine, FetchedSettlement, LineType
from app.payments.provider import AccountNotResolved, Bank, BankListError, Outcome, ProviderUnavailable
from app.webhooks.guard import AddressGuard, CallFailed, TargetRefused

from .events import IgnoredEvent, ProviderEvent, WebhookPayloadError, WebhookSignatureError, header
from .http import (
    ADDRESS_REFUSED, LOGGED_BODY_CHARS, PROVIDER_ERROR, PUBLIC_ONLY, ProviderAnswerError,
    ProviderRejected, Timeouts, answered, explanation, provider_pool, redact, rejected_outcome,
    retry_later,
)

log = logging.getLogger(__name__)

PAYSTACK_API = "https://api.paystack.co"
LOST_PAGE = ("Paystack has this payment's reference, but its payment page was lost with an "
             "earlier answer; create a new payment")
SIGNATURE_HEADER = "x-paystack-signature"
USER_AGENT = "Paydesk"

# Paystack's word for the state of a transaction, refund or transfer -> Paydesk status and
# the decline reason when Paystack gives none. A word not listed leaves the transaction
# Pending with Paystack's words. A transaction's "reversed" is deliberately absent: it means
# refunded or charged back, and those reach Paydesk as refunds and disputes of their own.
STATUSES: dict[tuple[str, str], tuple[Status, str | None]] = {
    ("transaction", "success"): (Status.CAPTURED, None),
    ("transaction", "failed"): (Status.DECLINED, "Declined By Bank"),  # or why, from DECLINE_REASONS
    ("transaction", "abandoned"): (Status.PENDING, None),  # initialized, the customer has not paid yet
    ("transaction", "ongoing"): (Status.PENDING, None),
    ("transaction", "pending"): (Status.PENDING, None),
    ("transaction", "processing"): (Status.PENDING, None),
    ("transaction", "queued"): (Status.PENDING, None),
    ("refund", "pending"): (Status.PENDING, None),
    ("refund", "processing"): (Status.PENDING, None),
    ("refund", "processed"): (Status.CAPTURED, None),
    ("refund", "failed"): (Status.FAILED, PROVIDER_ERROR),
    ("transfer", "pending"): (Status.PENDING, None),
    ("transfer", "received"): (Status.PENDING, None),  # awaiting the merchant's approval server
    ("transfer", "otp"): (Status.PENDING, None),  # awaiting the OTP sent to the business
    ("transfer", "success"): (Status.CAPTURED, None),
    ("transfer", "reversed"): (Status.DECLINED, "Declined By Bank"),  # the receiving bank refused it
    ("transfer", "failed"): (Status.FAILED, PROVIDER_ERROR),  # Paystack's processor could not send it
    ("transfer", "abandoned"): (Status.DECLINED, "Transaction Expired"),  # no OTP within 30 minutes
    ("transfer", "blocked"): (Status.FAILED, PROVIDER_ERROR),  # the approval server did not answer
    ("transfer", "rejected"): (Status.FAILED, PROVIDER_ERROR),  # the approval server refused it
}

# Why a charge failed, from its gateway_response_code or gateway_response text, compared
# in lower case with underscores as spaces ("insufficient_funds" = "Insufficient Funds").
DECLINE_REASONS: dict[str, str] = {
    "insufficient funds": "Insufficient Funds",
    "not sufficient funds": "Insufficient Funds",
    "expired card": "Card Expired",
    "card expired": "Card Expired",
    "incorrect pin": "Invalid Card Details",
    "invalid card number": "Invalid Card Details",
    "invalid account number": "Invalid Card Details",
    "restricted card": "Restricted Card",
    "transaction not permitted to cardholder": "Restricted Card",
    "pickup card": "Restricted Card",
    "suspected fraud": "Suspected Fraud",
    "exceeds withdrawal limit": "Daily Limit Exceeded",
    "exceeds withdrawal amount limit": "Daily Limit Exceeded",
    "exceeds withdrawal frequency limit": "Daily Limit Exceeded",
    "customer cancellation": "Payment Cancelled By User",
    "do not honor": "Declined By Bank",
    "declined": "Declined By Bank",
}

# Transfer recipient type by payout currency (bank accounts); mobile-money methods use "mobile_money".
# Paystack's OpenAPI document allows no bank-account type for Kenya (its /bank filter's "kepss"
# is refused by /transferrecipient), so KES is paid out to mobile money only.
# Settlements a fetch reads: the newest pages of GET /settlement (Paystack settles daily, so two
# pages of 50 reach back well past any settlement still changing).
SETTLEMENT_PAGE_SIZE = 50
SETTLEMENT_PAGES = 2

RECIPIENT_TYPES = {"NGN": "nuban", "GHS": "ghipss", "ZAR": "basa"}
# Transfers in one POST /transfer/bulk: Paystack's guide to bulk transfers allows 100 a request
# (its OpenAPI document sets no maxItems).
BULK_TRANSFERS = 100
BULK_UNLISTED = "Paystack's bulk answer did not list this transfer; Paydesk asks again"

# The countries Paystack lists banks for, by currency, and the names its /bank filter takes.
BANK_COUNTRIES = {"NGN": ("NG", "nigeria"), "GHS": ("GH", "ghana"), "KES": ("KE", "kenya"),
                  "ZAR": ("ZA", "south africa")}

EVENT_OBJECTS = {"charge.success": "transaction", "refund.processed": "refund",
                 "refund.failed": "refund", "refund.pending": "refund",
                 "refund.processing": "refund", "transfer.success": "transfer",
                 "transfer.failed": "transfer", "transfer.reversed": "transfer",
                 "charge.dispute.create": "dispute", "charge.dispute.remind": "dispute",
                 "charge.dispute.resolve": "dispute"}

# A dispute's status word (and, once resolved, its resolution) -> Paydesk's dispute status.
# Paystack's OpenAPI document lists the statuses of GET /dispute and the resolutions of
# PUT /dispute/{id}/resolve; "auto-accepted" is what a dispute left unanswered past its
# deadline resolves as. A word not listed changes nothing.
DISPUTE_STATUSES: dict[str, DisputeStatus] = {
    "awaiting-merchant-feedback": DisputeStatus.NEEDS_RESPONSE,
    "awaiting-bank-feedback": DisputeStatus.UNDER_REVIEW,
    "pending": DisputeStatus.UNDER_REVIEW,
}
DISPUTE_RESOLUTIONS: dict[str, DisputeStatus] = {
    "declined": DisputeStatus.WON,  # the merchant declined the claim and the bank agreed
    "merchant-accepted": DisputeStatus.ACCEPTED,
    "auto-accepted": DisputeStatus.LOST,
}


def transfer_reference(tx_no: str) -> str:
    """Paystack wants transfer references in lower case; Paydesk numbers are upper case."""
    return tx_no.lower()


def refund_note(tx_no: str) -> str:
    """The merchant_note that names the Paydesk refund, since Paystack refunds take no reference."""
    return f"Paydesk refund {tx_no}"


def decline_reason(gateway_response_code: str | None, gateway_response: str | None) -> str | None:
    """The interface's decline reason for Paystack's own words, or None when it gives no known one."""
    for words in (gateway_response_code, gateway_response):
        if words:
            found = DECLINE_REASONS.get(" ".join(words.replace("_", " ").lower().rstrip(".").split()))
            if found:
                return found
    return None


def outcome(kind: str, word: str | None, *, provider_transaction_id: str | None = None,
            message: str | None = None, reason: str | None = None) -> Outcome:
    """Paystack's word for a transaction, refund or transfer through STATUSES; unknown words stay Pending."""
    row = STATUSES.get((kind, (word or "").lower()))
    if row is None:
        return Outcome(Status.PENDING, provider_transaction_id, word, message)
    status, default_reason = row
    return Outcome(status, provider_transaction_id, word, message,
                   decline_reason=(reason or default_reason) if status in DECLINE_STATUSES else None)


def transaction_outcome(data: Mapping, message: str | None = None) -> Outcome:
    """A transaction object (verify answer, charge.* event data) as an Outcome."""
    return outcome("transaction", data.get("status"), provider_transaction_id=_id(data.get("id")),
                   message=data.get("gateway_response") or message,
                   reason=decline_reason(data.get("gateway_response_code"), data.get("gateway_response")))


def refund_outcome(data: Mapping, message: str | None = None) -> Outcome:
    """A refund object (create, fetch, refund.* event data) as an Outcome."""
    return outcome("refund", data.get("status"), provider_transaction_id=_id(data.get("id")),
                   message=message)


def transfer_outcome(data: Mapping, message: str | None = None) -> Outcome:
    """A transfer object (initiate, verify, transfer.* event data) as an Outcome."""
    return outcome("transfer", data.get("status"), provider_transaction_id=data.get("transfer_code"),
                   message=data.get("gateway_response") or message)


def dispute_facts(data: Mapping) -> DisputeFacts:
    """A Dispute object (charge.dispute.* event data) as what Paydesk keeps of it."""
    word = str(data.get("status") or "").lower()
    resolution = str(data.get("resolution") or "").lower()
    status = DISPUTE_RESOLUTIONS.get(resolution) if word == "resolved" else DISPUTE_STATUSES.get(word)
    amount = data.get("refund_amount")
    transaction = data.get("transaction") if isinstance(data.get("transaction"), Mapping) else {}
    if not isinstance(amount, int):
        amount = transaction.get("amount") if isinstance(transaction.get("amount"), int) else None
    currency = data.get("currency") or transaction.get("currency")
    return DisputeFacts(
        provider_dispute_id=str(data.get("id")), status=status,
        provider_status=f"{word}:{resolution}" if resolution else word or None, amount_minor=amount,
        currency=currency.upper() if isinstance(currency, str) else None,
        reason=data.get("category"), due_by=_timestamp(data.get("dueAt")))


def _timestamp(value) -> datetime | None:
    """Paystack's ISO 8601 time (2026-11-30T10:00:00.000Z) as an aware datetime; None if absent."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def paystack_evidence(evidence: Mapping[str, str]) -> dict[str, str]:
    """Paydesk's evidence fields as POST /dispute/{id}/evidence's body (DisputeEvidence): the
    product description, refund policy and other text together make service_details."""
    details = [evidence.get(name) for name in ("productDescription", "refundPolicy", "uncategorizedText")]
    body = {"customer_email": evidence.get("customerEmail", ""), "customer_name": evidence.get("customerName", ""),
            "customer_phone": evidence.get("customerPhone", ""),
            "service_details": "\n\n".join(text for text in details if text)}
    if evidence.get("shippingAddress"):
        body["delivery_address"] = evidence["shippingAddress"]
    if evidence.get("serviceDate"):  # a date (check_evidence); Paystack's field is a date-time
        body["delivery_date"] = f"{evidence['serviceDate']}T00:00:00.000Z"
    return body


class PaystackConnector:
    """Paystack behind the Provider interface, with one merchant account's secret key."""

    name = "paystack"
    in_process = False  # a network call: never made inside a unit of work

    def __init__(self, secret_key: str, base_url: str = PAYSTACK_API,
                 timeouts: Timeouts = Timeouts(), return_url: str | None = None,
                 guard: AddressGuard = PUBLIC_ONLY):
        # return_url: Paydesk's page the customer comes back to after checkout ("{tx_no}" is
        # replaced); it knows the outcome and sends the customer on to SuccessUrl or FailureUrl.
        # Without it the payment's SuccessUrl is used (Paystack has one callback for both).
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts
        self.return_url = return_url
        # Every call goes through the guard: the base URL is the merchant's to choose. Dispute
        # files go through it too, to the signed URL Paystack gives (its storage), never with the key.
        self.http = provider_pool(guard)
        self.headers = {"Authorization": f"Bearer {secret_key}", "Accept": "application/json",
                        "User-Agent": USER_AGENT}

    def __repr__(self) -> str:
        return f"PaystackConnector({self.base_url!r})"  # never the key

    # The Provider interface

    def create(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        """A payment opens a hosted checkout (its URL in redirect_url); a payout sends a transfer."""
        if tx.kind is Kind.PAYOUT:
            return self._send_transfer(tx, method)
        request = {
            "email": tx.billing.get("email"),
            "amount": to_minor(tx.amount, tx.currency),
            "currency": tx.currency,
            "reference": tx.tx_no,
            "metadata": {"txNo": tx.tx_no, "reference": tx.reference},
        }
        callback = self.return_url.format(tx_no=tx.tx_no) if self.return_url else tx.success_url
        if callback:
            request["callback_url"] = callback
        try:
            answer = self._request("POST", "/transaction/initialize", json=request)
        except ProviderRejected as refused:
            found = self._opened_before(tx, refused, self._verify_payment)
            if found.status is Status.PENDING:
                # Paystack took an earlier initialize whose answer was lost: the reference is
                # used, and no call gives its payment page again. The customer cannot pay it.
                return Outcome(Status.FAILED, found.provider_transaction_id, found.provider_status,
                               LOST_PAGE, decline_reason=PROVIDER_ERROR)
            return found
        data = answer["data"]
        return Outcome(Status.PENDING, provider_message=answer.get("message"),
                       redirect_url=data.get("authorization_url"))

    def refund(self, refund: Transaction, original: Transaction, now: datetime) -> Outcome:
        """POST /refund (partial with amount) unless a refund naming this one exists already."""
        try:
            existing = self._find_refund(refund, original)
            if existing is not None:
                return existing
            answer = self._request("POST", "/refund", json={
                "transaction": original.tx_no,
                "amount": to_minor(refund.amount, refund.currency),
                "currency": refund.currency,
                "merchant_note": refund_note(refund.tx_no),
            })
        except ProviderRejected as refused:
            return rejected_outcome(refused)
        return refund_outcome(answer["data"], answer.get("message"))

    def status(self, tx: Transaction, original: Transaction | None, now: datetime) -> Outcome:
        """Where Paystack has the transaction: verify by reference, or fetch the refund.

        A refused question (4xx) says nothing about the money, so it raises
        ProviderUnavailable (the transaction stays Pending) instead of failing it.
        """
        try:
            if tx.kind is Kind.PAYMENT:
                return self._verify_payment(tx)
            if tx.kind is Kind.PAYOUT:
                return self._verify_transfer(tx)
            return self._refund_status(tx, original)
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Paystack refused the status request: {refused}") from None

    def banks(self, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
        """GET /bank for the currency's country, asked now (requests read the worker's stored copy)."""
        return self.fetch_banks(currency, self.bank_list_country(method, currency, country))

    # Bank lists as Paydesk stores them (app.payments.provider.BankListSource)

    @staticmethod
    def bank_list_country(method: PaymentMethod, currency: str, country: str | None) -> str:
        """The one country Paystack lists banks for in the currency (NGN: NG, ...); no I/O."""
        if currency not in BANK_COUNTRIES:
            raise BankListError(f"Currency {currency} is not supported by payment method {method.method_id}")
        alpha2, _paystack_country = BANK_COUNTRIES[currency]
        if country is not None and country != alpha2:
            raise BankListError(f"Country {country} is not supported by payment method {method.method_id}")
        return alpha2

    def fetch_banks(self, currency: str, country: str) -> list[Bank]:
        """GET /bank for the currency and country: the banks Paystack can transfer to, by name."""
        alpha2, paystack_country = BANK_COUNTRIES[currency]
        if country != alpha2:
            raise BankListError(f"Paystack lists no {currency} banks for {country}")
        banks: dict[str, Bank] = {}
        params = {"country": paystack_country, "currency": currency, "perPage": 100, "use_cursor": "true"}
        try:
            for _page in range(50):  # a bound, far above any country's bank count
                answer = self._request("GET", "/bank", params=params)
                for row in answer["data"]:
                    if _listed(row):
                        banks.setdefault(row["code"], Bank(row["code"], row["name"].strip()))
                cursor = (answer.get("meta") or {}).get("next")
                if not cursor:
                    break
                params = {**params, "next": cursor}
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Paystack refused the bank list: {refused}") from None
        return sorted(banks.values(), key=lambda bank: (bank.name.casefold(), bank.code))

    # Account names (app.payments.provider.AccountNameSource), asked by the worker only

    def resolve_account(self, account_number: str, bank_code: str) -> str:
        """GET /bank/resolve: the holder's name of a bank account, as its bank has it.

        Paystack answers 422 "Could not resolve account name. Check parameters or try again." (or
        400/404) for an account it cannot find: AccountNotResolved with its words. A refused key
        (401, 403) says nothing about the account: ProviderUnavailable.
        """
        try:
            answer = self._request("GET", "/bank/resolve", params={
                "account_number": account_number, "bank_code": bank_code})
        except ProviderRejected as refused:
            if refused.http_status in (400, 404, 422):
                raise AccountNotResolved(refused.message) from None
            raise ProviderUnavailable(f"Paystack refused the account name request: {refused}") from None
        name = (answer["data"] or {}).get("account_name") if isinstance(answer["data"], dict) else None
        if not isinstance(name, str) or not name.strip():
            raise ProviderAnswerError("Paystack answered without an account name", 200)
        return name.strip()

    # Beyond the interface

    def cancel(self, tx: Transaction) -> Outcome:
        """Paystack has no void for checkouts, transfers or refunds: where the transaction stands.

        An unpaid checkout lapses with the integration's payment session timeout; the caller
        declines the transaction in Paydesk if this still answers Pending.
        """
        return self.status(tx, None, datetime.now(UTC))

    def test_connection(self) -> str:
        """GET /balance, which needs a valid secret key; fixed words, never the answer's own."""
        self._request("GET", "/balance")
        return "Connected to Paystack"

    # Settlements (app/providers/settlement_fetch.py)

    def settlements(self) -> list[FetchedSettlement]:
        """GET /settlement, newest first, without their lines (with_lines adds them).

        Paystack reports a settlement's processed total, its fees and what it paid out: gross,
        fees and net. A row without an id or a known currency is skipped.
        """
        found: list[FetchedSettlement] = []
        try:
            for page in range(1, SETTLEMENT_PAGES + 1):
                answer = self._request("GET", "/settlement", params={"perPage": SETTLEMENT_PAGE_SIZE, "page": page})
                rows = answer["data"] if isinstance(answer["data"], list) else []
                found += [settlement for settlement in map(_settlement, rows) if settlement is not None]
                if len(rows) < SETTLEMENT_PAGE_SIZE:
                    break
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Paystack refused the settlement list: {refused}") from None
        return found

    def with_lines(self, settlement: FetchedSettlement) -> FetchedSettlement:
        """The settlement with its lines: GET /settlement/{id}/transactions, Paystack's charges it paid
        out (refunds and chargebacks reach a Paystack settlement as deductions, not as lines)."""
        path = f"/settlement/{quote(settlement.provider_settlement_id, safe='')}/transactions"
        try:
            answer = self._request("GET", path)
        except ProviderRejected as refused:
            raise ProviderUnavailable(f"Paystack refused the settlement's transactions: {refused}") from None
        rows = answer["data"] if isinstance(answer["data"], list) else []
        return replace(settlement, lines=[line for line in map(_settlement_line, rows) if line is not None])

    def dispute_status(self, provider_dispute_id: str) -> DisputeFacts:
        """GET /dispute/{id}: where the dispute stands (the worker's check for missed events)."""
        try:
            answer = self._request("GET", f"/dispute/{quote(provider_dispute_id, safe='')}")
        except ProviderRejected as refused:
            raise DisputeCallRefused(f"Paystack refused: {refused}") from None
        data = answer.get("data")
        return dispute_facts(data if isinstance(data, Mapping) else {"id": provider_dispute_id})

    def submit_dispute_evidence(self, provider_dispute_id: str, evidence: Mapping[str, str],
                                idempotency_key: str) -> DisputeFacts:
        """POST /dispute/{id}/evidence. Paystack takes no idempotency key; sending the same
        evidence twice (a worker killed after the call) gives it the same evidence again.
        The dispute then awaits the bank."""
        try:
            self._request("POST", f"/dispute/{quote(provider_dispute_id, safe='')}/evidence",
                          json=paystack_evidence(evidence))
        except ProviderRejected as refused:
            raise DisputeCallRefused(f"Paystack refused: {refused}") from None
        return DisputeFacts(provider_dispute_id, DisputeStatus.UNDER_REVIEW, "awaiting-bank-feedback")

    # Paystack's evidence endpoint takes no files: they go with the resolution alone.
    evidence_takes_files = False
    accept_needs_receipt = True

    def upload_dispute_file(self, provider_dispute_id: str, filename: str, data: bytes, content_type: str,
                            idempotency_key: str) -> str:
        """GET /dispute/{id}/upload_url, then PUT the bytes to its signedUrl; Paystack's fileName
        of the upload (the resolution's uploaded_filename). No idempotency key: a retry after
        the PUT fetches a new URL and uploads again (nothing is resolved twice)."""
        try:
            answer = self._request("GET", f"/dispute/{quote(provider_dispute_id, safe='')}/upload_url")
        except ProviderRejected as refused:
            raise DisputeCallRefused(f"Paystack refused the file {filename}: {refused}") from None
        data_part = answer.get("data") if isinstance(answer.get("data"), Mapping) else {}
        signed_url, uploaded_name = data_part.get("signedUrl"), data_part.get("fileName")
        if not (isinstance(signed_url, str) and signed_url.startswith(("https://", "http://"))
                and isinstance(uploaded_name, str) and uploaded_name):
            raise ProviderUnavailable("Paystack gave no upload URL for the dispute's file")
        try:
            response = self.http.request("PUT", signed_url, body=data, timeouts=self.timeouts.as_tuple(),
                                         headers={"Content-Type": content_type, "User-Agent": USER_AGENT})
        except TargetRefused as refused:
            log.warning("Paystack file upload not sent: %s", refused)
            raise ProviderUnavailable(f"Paystack's upload was not sent: {ADDRESS_REFUSED}") from None
        except CallFailed as error:
            raise ProviderUnavailable(f"Paystack's upload could not be made ({error.kind})") from None
        if not 200 <= response.status < 300:
            if 400 <= response.status < 500:
                raise DisputeCallRefused(f"Paystack refused the file {filename}: HTTP {response.status}")
            raise ProviderUnavailable(f"Paystack's upload answered HTTP {response.status}")
        return uploaded_name

    def accept_dispute(self, provider_dispute_id: str, idempotency_key: str, *, amount_minor: int,
                       receipt: str) -> DisputeFacts:
        """PUT /dispute/{id}/resolve as merchant-accepted, with the refund receipt uploaded
        (uploaded_filename) and the dispute's amount (refund_amount, in the subunit)."""
        try:
            self._request("PUT", f"/dispute/{quote(provider_dispute_id, safe='')}/resolve", json={
                "resolution": "merchant-accepted", "message": "Merchant accepted",
                "refund_amount": amount_minor, "uploaded_filename": receipt})
        except ProviderRejected as refused:
            raise DisputeCallRefused(f"Paystack refused: {refused}") from None
        return DisputeFacts(provider_dispute_id, DisputeStatus.ACCEPTED, "resolved")

    # Requests

    def _request(self, method: str, path: str, *, json: dict | None = None,
                 params: dict | None = None) -> dict:
        """One call; ProviderUnavailable for no answer, 5xx, RETRY_LATER and redirects,
        ProviderRejected for 4xx.

        Paystack's own `message` is kept only from an answer in its documented shape; any other
        answer is told by its status in fixed words, and its body goes to the log alone.
        """
        query = urlencode({name: value for name, value in (params or {}).items() if value is not None})
        headers = self.headers if json is None else {**self.headers, "Content-Type": "application/json"}
        try:
            response = self.http.request(method, self.base_url + path + (f"?{query}" if query else ""),
                                         timeouts=self.timeouts.as_tuple(), headers=headers,
                                         body=None if json is None else _json_bytes(json))
        except TargetRefused as refused:
            log.warning("Paystack %s %s not sent: %s", method, path, refused)
            raise ProviderUnavailable(f"Paystack was not asked: {ADDRESS_REFUSED}") from None
        except CallFailed as error:
            if error.timed_out:
                log.warning("Paystack %s %s: no answer in time (%s)", method, path, error.kind)
                raise ProviderUnavailable(f"Paystack did not answer in time ({error.kind})") from None
            log.warning("Paystack %s %s: %s", method, path, error.kind)
            raise ProviderUnavailable(f"Paystack could not be reached ({error.kind})") from None
        body = _json_object(response.data)
        words = body.get("message") if isinstance(body.get("status"), bool) else None
        shaped = isinstance(words, str) and bool(words)
        logged = redact(words if shaped else response.data[:LOGGED_BODY_CHARS].decode("utf-8", "replace"))
        http_status = response.status
        if retry_later(http_status):
            log.warning("Paystack %s %s: HTTP %s %s", method, path, http_status, logged)
            raise ProviderAnswerError(f"Paystack answered HTTP {http_status}: {words}" if shaped
                                      else answered("Paystack", http_status), http_status)
        if http_status >= 400 or body.get("status") is False:
            log.info("Paystack %s %s refused: HTTP %s %s", method, path, http_status, logged)
            raise ProviderRejected(words if shaped else explanation(http_status), http_status,
                                   body.get("code"))
        if "data" not in body:
            log.warning("Paystack %s %s: HTTP %s without data: %s", method, path, http_status, logged)
            raise ProviderAnswerError(f"Paystack answered HTTP {http_status} without data", http_status)
        return body

    def _opened_before(self, tx: Transaction, refused: ProviderRejected,
                       verify: Callable[[Transaction], Outcome]) -> Outcome:
        """After a refused create: if the reference exists (a repeated create), its state; else Failed."""
        try:
            return verify(tx)
        except ProviderRejected:
            return rejected_outcome(refused)

    def _verify_payment(self, tx: Transaction) -> Outcome:
        answer = self._request("GET", f"/transaction/verify/{quote(tx.tx_no, safe='')}")
        return transaction_outcome(answer["data"], answer.get("message"))

    def _send_transfer(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        """POST /transferrecipient (Paystack returns the existing one for a known account), then /transfer."""
        try:
            recipient = self._recipient(tx, method)
            if isinstance(recipient, Outcome):
                return recipient
            answer = self._request("POST", "/transfer", json={
                "source": "balance", **self._transfer_item(tx, recipient), "currency": tx.currency})
        except ProviderRejected as refused:
            return self._opened_before(tx, refused, self._verify_transfer)
        return transfer_outcome(answer["data"], answer.get("message"))

    max_transfers = BULK_TRANSFERS

    def send_transfers(self, payouts: list[Transaction], method: PaymentMethod) -> dict[str, Outcome]:
        """Several payouts of this account in one POST /transfer/bulk per currency (at most
        BULK_TRANSFERS each), their recipients made first (one per account, as _send_transfer
        makes them); each payout's answer by its txNo, as create() gives it.

        Each transfer keeps the reference create() gives it, so no retry pays twice: a bulk that
        Paystack refuses (a reference it has seen, from a lost answer) is sent again one transfer
        at a time, where a repeated reference is verified. A payout the answer does not list stays
        Pending, not opened, and is sent again the same way. ProviderUnavailable passes up.
        """
        outcomes: dict[str, Outcome] = {}
        ready: dict[str, list[tuple[Transaction, str]]] = {}
        recipients: dict[tuple, str | Outcome | ProviderRejected] = {}
        for tx in payouts:
            details = tx.payment_details
            key = (tx.currency, details.get("holder"), details.get("accountNumber"), details.get("bank"))
            if key not in recipients:
                try:
                    recipients[key] = self._recipient(tx, method)
                except ProviderRejected as refused:
                    recipients[key] = refused
            found = recipients[key]
            if isinstance(found, ProviderRejected):  # as _send_transfer: an earlier call's transfer?
                outcomes[tx.tx_no] = self._opened_before(tx, found, self._verify_transfer)
            elif isinstance(found, Outcome):  # a currency Paystack does not pay out in
                outcomes[tx.tx_no] = found
            else:
                ready.setdefault(tx.currency, []).append((tx, found))
        for currency, listed in ready.items():
            for start in range(0, len(listed), BULK_TRANSFERS):
                outcomes.update(self._bulk(currency, listed[start:start + BULK_TRANSFERS], method))
        return outcomes

    def _bulk(self, currency: str, listed: list[tuple[Transaction, str]],
              method: PaymentMethod) -> dict[str, Outcome]:
        try:
            answer = self._request("POST", "/transfer/bulk", json={
                "currency": currency, "source": "balance",
                "transfers": [self._transfer_item(tx, recipient) for tx, recipient in listed]})
        except ProviderRejected:
            return {tx.tx_no: self._send_transfer(tx, method) for tx, _recipient in listed}
        rows = answer["data"] if isinstance(answer["data"], list) else []
        by_reference = {row.get("reference"): row for row in rows if isinstance(row, Mapping)}
        return {tx.tx_no: transfer_outcome(by_reference[transfer_reference(tx.tx_no)], answer.get("message"))
                if transfer_reference(tx.tx_no) in by_reference
                else Outcome(Status.PENDING, provider_message=BULK_UNLISTED)
                for tx, _recipient in listed}

    def _recipient(self, tx: Transaction, method: PaymentMethod) -> str | Outcome:
        """The recipient code of the payout's account (POST /transferrecipient: Paystack returns
        the existing one for a known account), or the payout's Failed outcome when Paystack does
        not pay out in its currency. ProviderRejected when Paystack refuses the recipient."""
        recipient_type = "mobile_money" if method.account_rule == "msisdn" else RECIPIENT_TYPES.get(tx.currency)
        if recipient_type is None:
            return Outcome(Status.FAILED, provider_message=f"Paystack does not pay out in {tx.currency}",
                           decline_reason="Currency Not Supported")
        details = tx.payment_details
        recipient = self._request("POST", "/transferrecipient", json={
            "type": recipient_type,
            "name": details.get("holder"),
            "account_number": details.get("accountNumber"),
            "bank_code": details.get("bank"),
            "currency": tx.currency,
        })
        return recipient["data"]["recipient_code"]

    @staticmethod
    def _transfer_item(tx: Transaction, recipient: str) -> dict:
        """One transfer as /transfer and /transfer/bulk take it."""
        return {
            "amount": to_minor(tx.amount, tx.currency),
            "recipient": recipient,
            # The transfer's idempotency key: Paystack never sends two transfers with one reference.
            "reference": transfer_reference(tx.tx_no),
            "reason": tx.statement_descriptor or tx.reference,
        }

    def _verify_transfer(self, tx: Transaction) -> Outcome:
        answer = self._request("GET", f"/transfer/verify/{quote(transfer_reference(tx.tx_no), safe='')}")
        return transfer_outcome(answer["data"], answer.get("message"))

    def _refund_status(self, refund: Transaction, original: Transaction | None) -> Outcome:
        if refund.provider_transaction_id:
            answer = self._request("GET", f"/refund/{quote(refund.provider_transaction_id, safe='')}")
            return refund_outcome(answer["data"], answer.get("message"))
        found = self._find_refund(refund, original) if original is not None else None
        return found or Outcome(Status.PENDING, provider_message="Refund not yet submitted to Paystack")

    def _find_refund(self, refund: Transaction, original: Transaction) -> Outcome | None:
        """The Paystack refund whose merchant_note names this refund, if an earlier call created one."""
        answer = self._request("GET", "/refund", params={
            "transaction": self._transaction_id(original), "currency": original.currency, "perPage": 100,
        })
        for row in answer["data"] if isinstance(answer["data"], list) else ():
            if refund.tx_no in str(row.get("merchant_note") or ""):
                return refund_outcome(row, answer.get("message"))
        return None

    def _transaction_id(self, original: Transaction) -> str:
        """Paystack's numeric id of the original (its refund list filters on it, not on the reference)."""
        if original.provider_transaction_id and original.provider_transaction_id.isdigit():
            return original.provider_transaction_id
        answer = self._request("GET", f"/transaction/verify/{quote(original.tx_no, safe='')}")
        return str(answer["data"]["id"])


def parse_webhook(body: bytes, headers: Mapping[str, str], secret_key: str) -> ProviderEvent | IgnoredEvent:
    """Verify x-paystack-signature (hex HMAC-SHA512 of the raw body with the secret key) and read the event.

    charge.success and transfer.* name Paydesk's txNo (the reference). Paystack's refund
    events name only the original (transaction_reference) and the amount: the route asks
    status() for that original's Pending refunds, or matches provider_transaction_id when set.
    """
    signature = header(headers, SIGNATURE_HEADER)
    expected = hmac.new(secret_key.encode(), body, hashlib.sha512).hexdigest()
    # A header that is not ASCII is no hex signature (and compare_digest refuses to compare it).
    if not signature or not signature.isascii() or not hmac.compare_digest(expected, signature.strip().lower()):
        raise WebhookSignatureError("Paystack signature does not match the body")
    try:
        event = json.loads(body)
    except ValueError:
        raise WebhookPayloadError("Paystack event is not JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
        raise WebhookPayloadError("Paystack event has no data object")
    event_type = str(event.get("event"))
    data = event["data"]
    kind = EVENT_OBJECTS.get(event_type)
    if kind is None:
        return IgnoredEvent("paystack", event_type)
    amount = data.get("amount") if isinstance(data.get("amount"), int) else None
    if kind == "transaction":
        return ProviderEvent("paystack", event_type, Kind.PAYMENT, transaction_outcome(data),
                             tx_no=data.get("reference"), provider_transaction_id=_id(data.get("id")),
                             amount_minor=amount, currency=data.get("currency"))
    if kind == "dispute":
        transaction = data.get("transaction") if isinstance(data.get("transaction"), Mapping) else {}
        facts = dispute_facts(data)
        return ProviderEvent("paystack", event_type, Kind.PAYMENT,
                             Outcome(Status.CHARGEBACK, _id(transaction.get("id")), facts.provider_status),
                             tx_no=transaction.get("reference"), dispute=facts)
    if kind == "transfer":
        reference = data.get("reference")
        return ProviderEvent("paystack", event_type, Kind.PAYOUT, transfer_outcome(data),
                             tx_no=reference.upper() if isinstance(reference, str) else None,
                             provider_transaction_id=data.get("transfer_code"),
                             amount_minor=amount, currency=data.get("currency"))
    word = data.get("status") or event_type.removeprefix("refund.")
    return ProviderEvent("paystack", event_type, Kind.REFUND,
                         refund_outcome({**data, "status": word}, f"Refund {word}"),
                         provider_transaction_id=_id(data.get("id")),
                         original_tx_no=data.get("transaction_reference"),
                         amount_minor=amount, currency=data.get("currency"))


def _settlement(row: object) -> FetchedSettlement | None:
    """A GET /settlement row; None when it lacks an id, a known currency or a date."""
    if not isinstance(row, Mapping) or row.get("id") is None or not is_currency(row.get("currency")):
        return None
    settled_on = _day(row.get("settlement_date") or row.get("createdAt"))
    if settled_on is None:
        return None
    fees = _int(row.get("total_fees"))
    net = _int(row.get("total_amount"))
    gross = _int(row.get("total_processed")) or net + fees
    return FetchedSettlement(str(row["id"]), settled_on, row["currency"], gross, fees, net,
                             str(row.get("status") or "unknown"))


def _settlement_line(row: object) -> FetchedLine | None:
    """A transaction of GET /settlement/{id}/transactions as a payment line."""
    if not isinstance(row, Mapping) or row.get("id") is None or not is_currency(row.get("currency")):
        return None
    gross, fee = _int(row.get("amount")), _int(row.get("fees"))
    reference = row.get("reference")
    return FetchedLine(str(row["id"]), LineType.PAYMENT, gross, fee, gross - fee, row["currency"],
                       reference if isinstance(reference, str) and reference else None)


def _day(text: object) -> date | None:
    """The UTC day of Paystack's ISO 8601 timestamp (2026-11-27T00:00:00.000Z)."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).date()
    except ValueError:
        return None


def _int(value: object) -> int:
    """A Paystack amount in subunits; 0 when missing or not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _listed(row: Mapping) -> bool:
    """A bank row worth offering: active, not deleted, transfers supported, with a code and name."""
    return (bool(row.get("code")) and bool(str(row.get("name") or "").strip())
            and row.get("active", True) is not False and not row.get("is_deleted")
            and row.get("supports_transfer", True) is not False)


def _id(value) -> str | None:
    return None if value is None else str(value)


def _json_bytes(value: dict) -> bytes:
    return json.dumps(value, allow_nan=False).encode()


def _json_object(data: bytes) -> dict:
    """The answer's JSON object; {} for anything else."""
    try:
        body = json.loads(data)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
