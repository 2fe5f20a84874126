"""What the real connectors share: the guarded session, timeouts, when an HTTP answer means
"ask again later", refusals, and the fixed words that stand for a provider's answer."""
from __future__ import annotations

import re
from dataclasses import dataclass
from http import HTTPStatus

import requests

from app.payments.model import Status
from app.payments.provider import Outcome, ProviderUnavailable
from app.webhooks.guard import AddressGuard, GuardedPool, guarded_session

PROVIDER_ERROR = "Provider Error"

# The setting that lets provider calls reach networks that are not public (local fakes, a proxy).
ALLOWED_NETWORKS_SETTING = "PROVIDER_ALLOWED_NETWORKS"
# Without a configured guard a connector reaches public addresses only.
PUBLIC_ONLY = AddressGuard(ALLOWED_NETWORKS_SETTING)
# Connections kept per provider host: as many as PROVIDER_ACCOUNT_CONCURRENCY lets a worker have
# in flight to one account by default, so its busy moments reuse connections.
POOL_SIZE = 64
ADDRESS_REFUSED = "the base URL's address is not allowed"
# How much of an answer the server log keeps when it is not in the provider's own shape.
LOGGED_BODY_CHARS = 2000

# Fixed words for the answers worth explaining; any other status reads as its standard phrase.
EXPLANATIONS = {
    401: "the secret key was refused",
    403: "the secret key was refused",
    404: "no such address at the provider; check the base URL",
}

# 4xx codes that say nothing about the request itself: a timeout on the provider's side,
# a concurrent request with the same idempotency key, rate limiting. Retried like a 5xx.
RETRY_LATER_CODES = frozenset({408, 409, 429})

# Eight or more digits in a row: an account or card number a provider may echo in its message.
_LONG_NUMBER = re.compile(r"\d{4,}(\d{4})(?!\d)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection and then for each read of the answer."""

    connect: float = 5.0
    read: float = 30.0

    def as_tuple(self) -> tuple[float, float]:
        """The (connect, read) pair requests takes."""
        return (self.connect, self.read)


class ProviderRejected(Exception):
    """The provider refused the request (HTTP 4xx); str() is the provider's own message when it
    answered in its documented shape, else the fixed explanation of the status."""

    def __init__(self, message: str, http_status: int, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        self.code = code


class ProviderAnswerError(ProviderUnavailable):
    """The provider answered with an error that may pass (5xx, RETRY_LATER_CODES) or a redirect."""

    def __init__(self, message: str, http_status: int):
        super().__init__(message)
        self.http_status = http_status


def provider_session(guard: AddressGuard) -> requests.Session:
    """The session a provider's SDK calls through (Stripe's): guarded like webhook deliveries,
    no redirects."""
    return guarded_session(guard, POOL_SIZE)


def provider_pool(guard: AddressGuard) -> GuardedPool:
    """The pools a connector that speaks HTTP itself (Paystack's) calls through: the same guard,
    without requests' session work on each call."""
    return GuardedPool(guard, POOL_SIZE)


def explanation(http_status: int) -> str:
    """A short, fixed explanation of an HTTP status: never words the answer itself carried."""
    if 200 <= http_status < 300:
        return "the answer is not the provider's API"
    if 300 <= http_status < 400:
        return "redirects are not followed"
    if http_status in EXPLANATIONS:
        return EXPLANATIONS[http_status]
    try:
        return HTTPStatus(http_status).phrase
    except ValueError:
        return "an unexpected answer"


def answered(provider: str, http_status: int) -> str:
    """"Paystack answered HTTP 401: the secret key was refused", what a user reads of a failed answer."""
    return f"{provider} answered HTTP {http_status}: {explanation(http_status)}"


def redact(text: str) -> str:
    """Provider words fit for a log line: long digit runs (account numbers) cut to their last 4,
    line breaks and other control characters escaped (an answer cannot forge log lines)."""
    cut = _LONG_NUMBER.sub(lambda match: "****" + match.group(1), text)
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode(), cut)


def retry_later(http_status: int | None) -> bool:
    """True for answers that leave the transaction Pending: 5xx, none at all, RETRY_LATER_CODES
    and redirects (never followed: they say nothing about the request either)."""
    return (http_status is None or http_status >= 500 or http_status in RETRY_LATER_CODES
            or 300 <= http_status < 400)


def rejected_outcome(error: ProviderRejected, provider_transaction_id: str | None = None) -> Outcome:
    """A refused request: Failed with the provider's words and decline reason Provider Error."""
    return Outcome(
        Status.FAILED,
        provider_transaction_id=provider_transaction_id,
        provider_status=f"HTTP {error.http_status}" + (f" {error.code}" if error.code else ""),
        provider_message=error.message[:500],
        decline_reason=PROVIDER_ERROR,
    )
