"""The API's shape, declared once: the request and response models that both validate and describe.

Requests are pydantic dataclasses, which the services take as they are. A body is read by its
wire names only, strictly (no text becomes a number or a number text), and every field error is
reported at once; MESSAGES words pydantic's errors as the interface does. Amounts stay Decimal:
JSON numbers arrive parsed exactly, and no model turns them into floats.
The OpenAPI document (app/api/openapi.py) takes its component schemas from these models.
"""
from __future__ import annotations

import dataclasses
import functools
import typing
from decimal import Decimal
from typing import Annotated, Literal
from urllib.parse import urlsplit

from email_validator import EmailNotValidError, validate_email
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    with_config,
)
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType, TypedDict

from .formats import LONE_SURROGATE, storable_text
from .model import MAX_TX_NO_LENGTH, FieldErrors, Kind, Status
from .money import MAX_AMOUNT, decimal_places, is_currency, minor_digits, parse_decimal

# The most minor digits any ISO 4217 currency has (CLF, UYW): the finest amount
# field validation can accept before the currency is known.
MAX_MINOR_DIGITS = 4
MAX_URL_LENGTH = 2048
# The only transaction action there is: payouts send it, card payments none.
PAYOUT_ACTION = "PAYMENT"
# The statuses a refund can have after the provider's immediate answer.
REFUND_STATUSES = (Status.PENDING, Status.CAPTURED, Status.FAILED, Status.DECLINED)

# How the interface words each error a request model can raise; {name} is the field's
# PascalCase dotted name (Billing.Email), the rest comes from the error's context.
MESSAGES = {
    "missing": "{name} is required",
    "unknown_field": "Unknown field",
    "string_type": "{name} must be a string",
    "string_too_long": "{name} must be at most {max_length} characters",
    "control_characters": "{name} must not contain control characters",
    "http_url": "{name} must be an http or https URL",
    "number": "{name} must be a number",
    "greater_than": "{name} must be greater than {gt}",
    "less_than_equal": "{name} must be at most {le}",
    "decimal_places": "{name} has too many decimal places",
    "decimals_of_currency": "{name} has more decimal places than {currency} allows ({digits})",
    "currency": "{name} must be an ISO 4217 currency code, e.g. EUR",
    "email": "{name} must be a valid e-mail address",
    "country": "{name} must be an ISO 3166-1 alpha-2 code, e.g. NG",
    "dataclass_type": "{name} must be an object",
}

# Text the server stores: no control characters but tab, newline and carriage return.
STORABLE = r"[^\u0000-\u0008\u000B\u000C\u000E-\u001F]"


def non_blank(allowed: str) -> str:
    """A pattern: only `allowed` characters, at least one of them not white space."""
    return f"^{allowed}*[^\\s\\u0000-\\u001F\\u007F]{allowed}*$"


def refuse(error_type: str) -> typing.NoReturn:
    """Fail validation with an error of this type (MESSAGES words those of the payment requests)."""
    raise PydanticCustomError(error_type, error_type)


def _read_as_text(max_length: int, *, required: bool):
    """What comes before pydantic's own string checks: blank text is missing (an error when the
    field is required), and text with a lone surrogate (pydantic cannot read it) is refused here
    as the string checks would: too long first, else unstorable."""
    def read(value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                refuse("missing")
            return None
        if isinstance(value, str) and LONE_SURROGATE.search(value):
            if len(value) > max_length:
                raise PydanticCustomError("string_too_long", "string_too_long", {"max_length": max_length})
            refuse("control_characters")
        return value
    return read


def _present(value: object) -> object:
    if value is None:
        refuse("missing")
    return value


def check(error_type: str, is_valid):
    """An after-validator: the value as it is when is_valid(value), else an error of error_type."""
    def checked(value):
        if not is_valid(value):
            refuse(error_type)
        return value
    return checked


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in value


def _is_email(value: str) -> bool:
    try:
        validate_email(value, check_deliverability=False)
    except EmailNotValidError:
        return False
    return True


def _is_alpha2(value: str) -> bool:
    return len(value) == 2 and value.isalpha() and value.isupper()


_storable = check("control_characters", storable_text)
_http_url = check("http_url", _is_http_url)
_email = check("email", _is_email)
_alpha2 = check("country", _is_alpha2)
_iso_currency = check("currency", is_currency)


def _exact_number(value: object) -> Decimal:
    if value is None:
        refuse("missing")
    amount = parse_decimal(value)
    if amount is None:
        refuse("number")
    return amount


def _minor_digits_at_most_any_currency(amount: Decimal) -> Decimal:
    if decimal_places(amount) > MAX_MINOR_DIGITS:
        refuse("decimal_places")
    return amount


def text(max_length: int, *checks, **schema):
    """A required text field: blank is missing; at most max_length storable characters."""
    return Annotated[
        str,
        Field(strict=True, max_length=max_length,
              json_schema_extra={"minLength": 1, "pattern": non_blank(STORABLE), **schema}),
        BeforeValidator(_read_as_text(max_length, required=True)),
        AfterValidator(_storable),
        *(AfterValidator(check) for check in checks),
    ]


def optional_text(max_length: int, *checks, **schema):
    """An optional text field: null, blank or missing is None; else as text()."""
    return Annotated[
        Annotated[str, Field(strict=True, max_length=max_length), AfterValidator(_storable),
                  *(AfterValidator(check) for check in checks)] | None,
        BeforeValidator(_read_as_text(max_length, required=False)),
        Field(json_schema_extra={"pattern": f"^{STORABLE}*$", **schema}),
    ]


def _url_schema() -> dict:
    return {"format": "uri", "pattern": r"^https?://[^\s\u0000-\u001F]+$", "description": "An http or https URL."}


Url = text(MAX_URL_LENGTH, _http_url, **_url_schema())
OptionalUrl = optional_text(MAX_URL_LENGTH, _http_url, **_url_schema())

Amount = TypeAliasType("Amount", Annotated[
    Decimal,
    Field(strict=True, gt=0, le=MAX_AMOUNT, description=(
        f"A JSON number, read exactly (never through binary floating point), with no more decimals "
        f"than the currency has (EUR 2, JPY 0, KWD 3; never more than {MAX_MINOR_DIGITS}). "
        f"Answers write it with exactly the currency's decimals.")),
    BeforeValidator(_exact_number),
    AfterValidator(_minor_digits_at_most_any_currency),
])
CURRENCY_CODE_LENGTH = 3
CURRENCY_PATTERN = "^[A-Z]{3}$"
Currency = TypeAliasType("Currency", Annotated[
    str,
    Field(strict=True, max_length=CURRENCY_CODE_LENGTH, json_schema_extra={"pattern": CURRENCY_PATTERN},
          description="An ISO 4217 code; a request's must be one its payment method takes."),
    BeforeValidator(_read_as_text(CURRENCY_CODE_LENGTH, required=True)),
    AfterValidator(_storable),
    AfterValidator(_iso_currency),
])

# Request bodies: read by their camelCase wire names only, nothing else allowed in them.
REQUEST = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                     extra="forbid")


@dataclass(frozen=True, config=REQUEST)
class Billing:
    """The customer of a transaction."""

    first_name: text(100)
    last_name: text(100)
    email: text(254, _email, format="email")
    customer_reference: text(100, description="The merchant's own customer identifier.")
    country: optional_text(2, _alpha2, pattern="^[A-Z]{2}$",
                           description="ISO 3166-1 alpha-2; must be a country of the method.") = None


@dataclass(frozen=True, config=REQUEST)
class Payment:
    """The payment block: method, and for payouts the destination account."""

    payment_method: text(64, description="An id from GET /payment-methods.")
    bank: optional_text(20, description=(
        "Payouts of methods with a bank list (required there): a code from POST /transactions/banks. "
        "An IBAN method (sepa-payout) may leave it out: the payout goes to the IBAN's own bank "
        "(its BIC), unless the registry does not know the IBAN's bank code.")) = None
    holder: optional_text(140, description="Payouts (required there): the account holder.") = None
    account_number: optional_text(64, description=(
        "Payouts (required there): the destination account, checked by the method's rule "
        "(IBAN, NUBAN, MSISDN).")) = None


@dataclass(frozen=True, kw_only=True, config=REQUEST)
class CreateTransactionRequest:
    """A create-transaction request."""

    amount: Amount
    currency: Currency
    reference: text(100, description="Unique per merchant and mode.")
    statement_descriptor: text(22)
    callback_url: Url
    transaction_action: Annotated[optional_text(20), WithJsonSchema({
        "enum": [PAYOUT_ACTION, None],
        "description": f"{PAYOUT_ACTION} for payout methods (required there); card methods take none."})] = None
    success_url: OptionalUrl = None
    pending_url: OptionalUrl = None
    failure_url: OptionalUrl = None
    user_defined_field1: optional_text(255) = None
    user_defined_field2: optional_text(255) = None
    user_defined_field3: optional_text(255) = None
    billing: Annotated[Billing, BeforeValidator(_present)]
    payment: Annotated[Payment, BeforeValidator(_present)]


@dataclass(frozen=True, config=REQUEST)
class RefundRequest:
    """A refund request."""

    tx_no: text(MAX_TX_NO_LENGTH, description="The captured payment to refund.")
    amount: Amount
    reason: optional_text(255, description="Stored in UserDefinedField1 of the refund.") = None
    description: optional_text(1000, description="Stored in UserDefinedField2 of the refund.") = None


# Responses: plain dicts the server builds (no cost per answer), declared with the interface's
# names so their schema comes from here too.
RESPONSE = ConfigDict(extra="forbid")
TxNo = Annotated[str, Field(description="Transaction number (PAY-..., POU-..., RFD-..., SBX-...).")]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"}, description="ISO 8601, UTC, with Z.")]
Informational = Annotated[str | None, Field(description="Informational.")]
StatusWord = Literal[tuple(s.value for s in Status)]


@with_config(RESPONSE)
class CreateTransactionResponse(TypedDict):
    transactionId: TxNo
    reference: str
    currency: Currency
    amount: Amount
    status: Literal["PENDING"]
    message: str
    checkoutUrl: Annotated[str, Field(json_schema_extra={"format": "uri"}, description="The hosted checkout page.")]


@with_config(RESPONSE)
class TransactionStatus(TypedDict):
    TransactionId: TxNo
    Status: Annotated[StatusWord, Field(description="The authoritative state: base business logic on it.")]
    Amount: Amount
    Currency: Currency
    Reference: str
    DeclineReason: Annotated[str | None, Field(description="Set when Status is Declined or Failed.")]
    CreatedAt: Timestamp
    ProviderTransactionId: str | None
    ProviderStatus: Informational
    ProviderMessage: Informational
    SuccessUrl: str | None
    PendingUrl: str | None
    FailureUrl: str | None
    UserDefinedField1: str | None
    UserDefinedField2: str | None
    UserDefinedField3: str | None


@with_config(RESPONSE)
class RefundResponse(TypedDict):
    refundTxNo: TxNo
    originalTxNo: TxNo
    amount: Amount
    currency: Currency
    status: Annotated[Literal[tuple(s.value for s in REFUND_STATUSES)], Field(
        description="After the provider's immediate answer; a Pending refund finishes later.")]
    message: str
    providerRefundId: str | None
    createdAt: Timestamp


@with_config(RESPONSE)
class PaymentMethod(TypedDict):
    id: str
    name: str
    kind: Literal["card", "payout"]
    currencies: list[Currency]
    countries: Annotated[list[Annotated[str, Field(json_schema_extra={"pattern": "^[A-Z]{2}$"})]], Field(
        description="Alpha-2 codes; empty means any country.")]
    bankList: bool
    partialRefunds: bool


@with_config(RESPONSE)
class WebhookPayload(TypedDict):
    """The exact JSON body delivered to callbackUrl."""

    txNo: str
    status: StatusWord
    amount: Amount
    currency: Currency
    transactionType: Literal[tuple(k.transaction_type for k in Kind)]
    originalTxNo: Annotated[str | None, Field(description="The refunded payment; null for payments and payouts.")]
    providerTransactionId: str | None
    providerStatus: str | None
    providerMessage: str | None
    createdAt: Timestamp


REQUEST_MODELS = (CreateTransactionRequest, RefundRequest)


@functools.cache
def max_length(field: str) -> int:
    """The most characters a request field takes, the field named as in the OpenAPI document
    ("RefundRequest.reason"): for the dashboard's inputs, so they hold what the API holds."""
    model_name, wire_name = field.split(".")
    model = {model.__name__: model for model in (*REQUEST_MODELS, Billing, Payment)}[model_name]
    schema = TypeAdapter(model).json_schema()["properties"][wire_name]
    return next(branch["maxLength"] for branch in (schema, *schema.get("anyOf", ())) if "maxLength" in branch)
RESPONSE_MODELS = (CreateTransactionResponse, TransactionStatus, RefundResponse, PaymentMethod, WebhookPayload)


# Reading a request body

@functools.cache
def _wire_names(model) -> tuple[str, ...]:
    return tuple(to_camel(field.name) for field in dataclasses.fields(model))


@functools.cache
def _nested_models(model) -> dict[str, type]:
    hints = typing.get_type_hints(model)
    return {to_camel(name): hint for name, hint in hints.items() if dataclasses.is_dataclass(hint)}


def _known_fields(model, body: dict, loc: tuple, details: list[dict]) -> dict:
    """The body without the fields the model does not have, each of them an error detail.

    Found here, not by pydantic, which cannot read a name with a lone surrogate at all.
    """
    names, nested = _wire_names(model), _nested_models(model)
    kept = {}
    for key, value in body.items():
        if key not in names:
            details.append({"type": "unknown_field", "loc": (*loc, key)})
        elif key in nested and isinstance(value, dict):
            kept[key] = _known_fields(nested[key], value, (*loc, key), details)
        else:
            kept[key] = value
    return kept


def _report_position(model, loc: tuple) -> tuple:
    """Where an error stands in the answer: at each level unknown fields first, then the
    fields in the order the model declares them."""
    position = []
    for part in loc:
        names = _wire_names(model)
        if part not in names:
            position.append((0, 0))
            break
        position.append((1, names.index(part)))
        model = _nested_models(model).get(part)
    return tuple(position)


def _field_name(loc: tuple, unknown: bool) -> str:
    parts = [str(part) for part in loc]
    if unknown:
        parts[-1] = shown_field_name(parts[-1])
    return ".".join(part[:1].upper() + part[1:] for part in parts)


def field_errors(details: list[dict], model) -> dict[str, list[str]]:
    """Pydantic's error details as the interface writes them, {"Billing.Email": ["..."]}, in its
    order: at each level unknown fields first, then the fields as the model declares them."""
    found = []
    for detail in details:
        unknown = detail["type"] == "unknown_field"
        found.append((_report_position(model, detail["loc"]), _field_name(detail["loc"], unknown), detail))
    errors: dict[str, list[str]] = {}
    for _position, name, detail in sorted(found, key=lambda item: item[0]):
        message = MESSAGES[detail["type"]].format(name=name, **detail.get("ctx", {}))
        errors.setdefault(name, []).append(message)
    return errors


MAX_SHOWN_NAME_LENGTH = 64


def shown_field_name(key: str) -> str:
    """A client's field name as an error may echo it: cut to 64 characters (marked "…"), and
    each lone surrogate shown as U+FFFD, the replacement character, so the answer can be encoded."""
    if len(key) > MAX_SHOWN_NAME_LENGTH:
        key = key[:MAX_SHOWN_NAME_LENGTH] + "…"
    return LONE_SURROGATE.sub("\ufffd", key)


NOT_AN_OBJECT = "Request body must be a JSON object"


def require_object(body: object) -> dict:
    """The body must be a JSON object."""
    if not isinstance(body, dict):
        raise FieldErrors.one("Body", NOT_AN_OBJECT)
    return body


@functools.cache
def _reader(model) -> TypeAdapter:
    return TypeAdapter(model)


def read_body(model, body: dict):
    """The body as the model and no error details, or None and the error details."""
    details: list[dict] = []
    known = _known_fields(model, body, (), details)
    try:
        request = _reader(model).validate_python(known, by_alias=True, by_name=False)
    except ValidationError as error:
        return None, details + error.errors(include_url=False, include_input=False)
    return (None, details) if details else (request, details)


def parse_create(body: object) -> CreateTransactionRequest:
    """Validate a create request body; every field error is reported at once."""
    request, details = read_body(CreateTransactionRequest, require_object(body))
    failed = {detail["loc"] for detail in details}
    if ("amount",) not in failed and ("currency",) not in failed:
        # Both are valid: the currency's minor digits bound the amount's decimals.
        amount, currency = (request.amount, request.currency) if request else (
            parse_decimal(body["amount"]), body["currency"])
        if decimal_places(amount) > minor_digits(currency):
            details.append({"type": "decimals_of_currency", "loc": ("amount",),
                            "ctx": {"currency": currency, "digits": minor_digits(currency)}})
    if details:
        raise FieldErrors(field_errors(details, CreateTransactionRequest))
    return request


def parse_refund(body: object) -> RefundRequest:
    """Validate a refund request body (rule 3, amount > 0, is checked here)."""
    request, details = read_body(RefundRequest, require_object(body))
    if details:
        raise FieldErrors(field_errors(details, RefundRequest))
    return request
