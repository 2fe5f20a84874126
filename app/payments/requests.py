"""Field validation of the request bodies: plain dicts in, typed requests or FieldErrors out."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlsplit

from email_validator import EmailNotValidError, validate_email

from .formats import LONE_SURROGATE, storable_text
from .model import FieldErrors
from .money import MAX_AMOUNT, decimal_places, is_currency, minor_digits, parse_decimal

# The most minor digits any ISO 4217 currency has (CLF, UYW): the finest amount
# field validation can accept before the currency is known.
MAX_MINOR_DIGITS = 4


@dataclass(frozen=True)
class Billing:
    """The customer of a transaction."""

    first_name: str
    last_name: str
    email: str
    customer_reference: str
    country: str | None = None


@dataclass(frozen=True)
class PaymentDetails:
    """The payment block: method, and for payouts the destination account."""

    payment_method: str
    bank: str | None = None
    holder: str | None = None
    account_number: str | None = None


@dataclass(frozen=True)
class CreateRequest:
    """A validated create-transaction request."""

    amount: Decimal
    currency: str
    reference: str
    statement_descriptor: str
    callback_url: str
    billing: Billing
    payment: PaymentDetails
    transaction_action: str | None = None
    success_url: str | None = None
    pending_url: str | None = None
    failure_url: str | None = None
    user_defined_fields: tuple[str | None, str | None, str | None] = (None, None, None)


@dataclass(frozen=True)
class RefundRequest:
    """A validated refund request."""

    tx_no: str
    amount: Decimal
    reason: str | None = None
    description: str | None = None


class _Fields:
    """Collects field errors while reading a JSON object, so all are reported at once."""

    def __init__(self, body: dict, prefix: str = ""):
        self.body = body
        self.prefix = prefix
        self.errors: dict[str, list[str]] = {}

    def name(self, key: str) -> str:
        return self.prefix + key[:1].upper() + key[1:]

    def fail(self, key: str, message: str) -> None:
        self.errors.setdefault(self.name(key), []).append(message)

    def reject_unknown(self, allowed: set[str]) -> None:
        for key in self.body:
            if key not in allowed:
                self.errors.setdefault(self.name(shown_field_name(key)), []).append("Unknown field")

    def string(self, key: str, *, required: bool, max_length: int) -> str | None:
        value = self.body.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self.fail(key, f"{self.name(key)} is required")
            return None
        if not isinstance(value, str):
            self.fail(key, f"{self.name(key)} must be a string")
            return None
        if len(value) > max_length:
            self.fail(key, f"{self.name(key)} must be at most {max_length} characters")
            return None
        if not storable_text(value):
            self.fail(key, f"{self.name(key)} must not contain control characters")
            return None
        return value

    def url(self, key: str, *, required: bool) -> str | None:
        value = self.string(key, required=required, max_length=2048)
        if value is not None and not _is_http_url(value):
            self.fail(key, f"{self.name(key)} must be an http or https URL")
            return None
        return value

    def amount(self, key: str = "amount") -> Decimal | None:
        raw = self.body.get(key)
        label = self.name(key)
        if raw is None:
            self.fail(key, f"{label} is required")
            return None
        amount = parse_decimal(raw)
        if amount is None:
            self.fail(key, f"{label} must be a number")
            return None
        if amount <= 0:
            self.fail(key, f"{label} must be greater than 0")
            return None
        if amount > MAX_AMOUNT:
            self.fail(key, f"{label} must be at most {MAX_AMOUNT}")
            return None
        if decimal_places(amount) > MAX_MINOR_DIGITS:
            self.fail(key, f"{label} has too many decimal places")
            return None
        return amount

    def nested(self, key: str, *, required: bool) -> "_Fields | None":
        value = self.body.get(key)
        if value is None:
            if required:
                self.fail(key, f"{self.name(key)} is required")
            return None
        if not isinstance(value, dict):
            self.fail(key, f"{self.name(key)} must be an object")
            return None
        return _Fields(value, prefix=self.name(key) + ".")

    def merge(self, inner: "_Fields | None") -> None:
        if inner is not None:
            for key, messages in inner.errors.items():
                self.errors.setdefault(key, []).extend(messages)

    def raise_if_any(self) -> None:
        if self.errors:
            raise FieldErrors(self.errors)


MAX_SHOWN_NAME_LENGTH = 64


def shown_field_name(key: str) -> str:
    """A client's field name as an error may echo it: cut to 64 characters (marked "…"), and
    each lone surrogate shown as U+FFFD, the replacement character, so the answer can be encoded."""
    if len(key) > MAX_SHOWN_NAME_LENGTH:
        key = key[:MAX_SHOWN_NAME_LENGTH] + "…"
    return LONE_SURROGATE.sub("\ufffd", key)


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in value


def require_object(body: object) -> dict:
    """The body must be a JSON object."""
    if not isinstance(body, dict):
        raise FieldErrors.one("Body", "Request body must be a JSON object")
    return body


CREATE_FIELDS = {
    "amount", "currency", "reference", "statementDescriptor", "callbackUrl", "billing", "payment",
    "transactionAction", "successUrl", "pendingUrl", "failureUrl",
    "userDefinedField1", "userDefinedField2", "userDefinedField3",
}
BILLING_FIELDS = {"firstName", "lastName", "email", "customerReference", "country"}
PAYMENT_FIELDS = {"paymentMethod", "bank", "holder", "accountNumber"}
REFUND_FIELDS = {"txNo", "amount", "reason", "description"}


def parse_create(body: object) -> CreateRequest:
    """Validate a create request body; every field error is reported at once."""
    fields = _Fields(require_object(body))
    fields.reject_unknown(CREATE_FIELDS)
    amount = fields.amount()
    currency = fields.string("currency", required=True, max_length=3)
    if currency is not None and not is_currency(currency):
        fields.fail("currency", "Currency must be an ISO 4217 currency code, e.g. EUR")
        currency = None
    if amount is not None and currency is not None:
        if decimal_places(amount) > minor_digits(currency):
            fields.fail("amount", f"Amount has more decimal places than {currency} allows "
                                  f"({minor_digits(currency)})")
    reference = fields.string("reference", required=True, max_length=100)
    descriptor = fields.string("statementDescriptor", required=True, max_length=22)
    callback_url = fields.url("callbackUrl", required=True)
    action = fields.string("transactionAction", required=False, max_length=20)
    success_url = fields.url("successUrl", required=False)
    pending_url = fields.url("pendingUrl", required=False)
    failure_url = fields.url("failureUrl", required=False)
    udfs = tuple(
        fields.string(f"userDefinedField{i}", required=False, max_length=255) for i in (1, 2, 3)
    )

    billing_fields = fields.nested("billing", required=True)
    billing = None
    if billing_fields is not None:
        billing_fields.reject_unknown(BILLING_FIELDS)
        first = billing_fields.string("firstName", required=True, max_length=100)
        last = billing_fields.string("lastName", required=True, max_length=100)
        email = billing_fields.string("email", required=True, max_length=254)
        if email is not None:
            try:
                validate_email(email, check_deliverability=False)
            except EmailNotValidError:
                billing_fields.fail("email", "Billing.Email must be a valid e-mail address")
        customer_ref = billing_fields.string("customerReference", required=True, max_length=100)
        country = billing_fields.string("country", required=False, max_length=2)
        if country is not None and not (len(country) == 2 and country.isalpha() and country.isupper()):
            billing_fields.fail("country", "Billing.Country must be an ISO 3166-1 alpha-2 code, e.g. NG")
        if not billing_fields.errors:
            billing = Billing(first, last, email, customer_ref, country)
        fields.merge(billing_fields)

    payment_fields = fields.nested("payment", required=True)
    payment = None
    if payment_fields is not None:
        payment_fields.reject_unknown(PAYMENT_FIELDS)
        method = payment_fields.string("paymentMethod", required=True, max_length=64)
        bank = payment_fields.string("bank", required=False, max_length=20)
        holder = payment_fields.string("holder", required=False, max_length=140)
        account = payment_fields.string("accountNumber", required=False, max_length=64)
        if not payment_fields.errors:
            payment = PaymentDetails(method, bank, holder, account)
        fields.merge(payment_fields)

    fields.raise_if_any()
    return CreateRequest(
        amount=amount,
        currency=currency,
        reference=reference,
        statement_descriptor=descriptor,
        callback_url=callback_url,
        billing=billing,
        payment=payment,
        transaction_action=action,
        success_url=success_url,
        pending_url=pending_url,
        failure_url=failure_url,
        user_defined_fields=udfs,
    )


def parse_refund(body: object) -> RefundRequest:
    """Validate a refund request body (rule 3, amount > 0, is checked here)."""
    fields = _Fields(require_object(body))
    fields.reject_unknown(REFUND_FIELDS)
    tx_no = fields.string("txNo", required=True, max_length=100)
    amount = fields.amount()
    reason = fields.string("reason", required=False, max_length=255)
    description = fields.string("description", required=False, max_length=1000)
    fields.raise_if_any()
    return RefundRequest(tx_no, amount, reason, description)
