"""The API's own bodies: the bank list and sandbox helper requests, read like the payment requests
but answered in their endpoints' words (the first problem found), and the answers of those
endpoints and of the webhook log."""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, with_config
from pydantic.dataclasses import dataclass
from typing_extensions import TypedDict

from app.payments.formats import LONE_SURROGATE
from app.payments.model import COMMON_DECLINE_REASONS, FieldErrors
from app.payments.schemas import (
    CURRENCY_PATTERN,
    NOT_AN_OBJECT,
    REQUEST,
    RESPONSE,
    Timestamp,
    WebhookPayload,
    check,
    read_body,
    refuse,
    require_object,
    shown_field_name,
)

from .limits import SANDBOX_OUTCOMES, WEBHOOK_STATUS_WORDS

DECLINE_REASON_REFUSAL = ("DeclineReason must be one of the common reasons: "
                          + ", ".join(COMMON_DECLINE_REASONS))

# Text these endpoints take only without any control character.
PRINTABLE = r"[^\u0000-\u001F\u007F]"
# A bank list's words and a sandbox decline reason: longer text names nothing.
MAX_WORD_LENGTH = 100


def _given(value: object) -> object:
    """A bank list field is missing when null or empty (blank is a word the service refuses)."""
    if value is None or value == "":
        refuse("missing")
    return value


def _readable(value: object) -> object:
    """Text with a lone surrogate, which pydantic cannot read, is refused as unprintable."""
    if isinstance(value, str) and LONE_SURROGATE.search(value):
        refuse("unprintable")
    return value


def _not_blank(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        refuse("blank")
    return value


Word = Annotated[str, Field(strict=True, max_length=MAX_WORD_LENGTH),
                 AfterValidator(check("unprintable", str.isprintable))]


@dataclass(frozen=True, config=REQUEST)
class BankListRequest:
    """The method, currency and country whose banks are asked for."""

    payment_method: Annotated[Word, BeforeValidator(_readable), BeforeValidator(_given),
                              Field(json_schema_extra={"minLength": 1, "pattern": f"^{PRINTABLE}+$"})]
    currency: Annotated[Word, BeforeValidator(_readable), BeforeValidator(_given), Field(
        json_schema_extra={"pattern": CURRENCY_PATTERN}, description="An ISO 4217 code.")]
    country: Annotated[Word | None, BeforeValidator(_readable), Field(
        json_schema_extra={"pattern": f"^{PRINTABLE}*$"},
        description="ISO 3166-1 alpha-2, alpha-3 or English name, any case.")] = None


@dataclass(frozen=True, config=REQUEST)
class SandboxOutcomeRequest:
    """The move the sandbox helper makes as the provider would."""

    status: Literal[tuple(sorted(s.value for s in SANDBOX_OUTCOMES))]
    decline_reason: Annotated[Literal[COMMON_DECLINE_REASONS] | None, Field(
        description="For Declined and Failed: one of the interface's common reasons; defaults to "
                    "Declined By Bank and Provider Error.")] = None


# Answers of these endpoints and of the webhook log: plain dicts, declared for the document.

@with_config(RESPONSE)
class Bank(TypedDict):
    code: Annotated[str, Field(description="Send it in payment.bank of a payout.")]
    name: str


@with_config(RESPONSE)
class SandboxReset(TypedDict):
    status: Literal["ok"]
    message: str


@with_config(RESPONSE)
class WebhookAttempt(TypedDict):
    attemptNo: Annotated[int, Field(ge=1)]
    startedAt: Timestamp
    durationMs: int | None
    httpStatus: Annotated[int | None, Field(description="null when no answer came.")]
    error: str | None
    responseExcerpt: Annotated[str | None, Field(description="At most the first 4 KiB of the answer.")]
    manual: Annotated[bool, Field(description="Asked for by a resend.")]
    requestHeaders: Annotated[dict[str, str], Field(
        description="The Standard Webhooks headers sent (webhook-id, ...).")]


@with_config(RESPONSE)
class WebhookEvent(TypedDict):
    webhookId: Annotated[str, Field(description="Sent as webhook-id; stable across retries.")]
    eventType: Annotated[str, Field(description="<kind>.<status>, e.g. refund.captured.")]
    txNo: str
    url: str
    status: Literal[tuple(WEBHOOK_STATUS_WORDS.values())]
    nextAttemptAt: Annotated[str | None, Field(json_schema_extra={"format": "date-time"})]
    lastHttpStatus: int | None
    lastError: str | None
    createdAt: Timestamp
    deliveredAt: Annotated[str | None, Field(json_schema_extra={"format": "date-time"})]
    payload: WebhookPayload
    attempts: Annotated[list[WebhookAttempt], Field(description="Oldest first.")]


API_REQUEST_MODELS = (BankListRequest, SandboxOutcomeRequest)
API_RESPONSE_MODELS = (Bank, SandboxReset, WebhookEvent)


def _label(wire_name: str) -> str:
    """How the bank list's messages name a field: paymentMethod -> Payment method."""
    return re.sub(r"(?<!^)([A-Z])", lambda m: " " + m.group(1).lower(), wire_name).capitalize()


def read_bank_list(body: object) -> BankListRequest | str:
    """The request, or the message of its first problem: an unknown field (by name), a missing
    field, then a field that is not a short printable text, in the order of the fields."""
    if not isinstance(body, dict):
        return NOT_AN_OBJECT
    request, details = read_body(BankListRequest, body)
    unknown = sorted(detail["loc"][0] for detail in details if detail["type"] == "unknown_field")
    if unknown:
        return f"Unknown field {shown_field_name(unknown[0])}"
    missing = [detail for detail in details if detail["type"] == "missing"]
    if missing:
        return f"{_label(missing[0]['loc'][0])} is required"
    if details:
        return f"{_label(details[0]['loc'][0])} must be a string of at most {MAX_WORD_LENGTH} characters"
    return request


def read_sandbox_outcome(body: object) -> SandboxOutcomeRequest:
    """The request; FieldErrors for its unknown fields, or else its first field error."""
    request, details = read_body(SandboxOutcomeRequest, require_object(body))
    unknown = sorted(detail["loc"][0] for detail in details if detail["type"] == "unknown_field")
    if unknown:
        raise FieldErrors({shown_field_name(key): ["Unknown field"] for key in unknown})
    failed = {detail["loc"][0] for detail in details}
    if "status" in failed:
        words = ", ".join(sorted(s.value for s in SANDBOX_OUTCOMES))
        raise FieldErrors.one("Status", f"Status must be one of {words}")
    if "declineReason" in failed:
        raise FieldErrors.one("DeclineReason", DECLINE_REASON_REFUSAL)
    return request
