"""What the real connectors share: timeouts, when an HTTP answer means "ask again later", refusals."""
from __future__ import annotations

import re
from dataclasses import dataclass

from app.payments.model import Status
from app.payments.provider import Outcome

PROVIDER_ERROR = "Provider Error"

# 4xx codes that say nothing about the request itself: a timeout on the provider's side,
# a concurrent request with the same idempotency key, rate limiting. Retried like a 5xx.
RETRY_LATER_CODES = frozenset({408, 409, 429})

# Eight or more digits in a row: an account or card number a provider may echo in its message.
_LONG_NUMBER = re.compile(r"\d{4,}(\d{4})(?!\d)")


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection and then for each read of the answer."""

    connect: float = 5.0
    read: float = 30.0

    def as_tuple(self) -> tuple[float, float]:
        """The (connect, read) pair requests takes."""
        return (self.connect, self.read)


class ProviderRejected(Exception):
    """The provider refused the request (HTTP 4xx); str() is the provider's own message."""

    def __init__(self, message: str, http_status: int, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        self.code = code


def redact(text: str) -> str:
    """Provider words fit for a log line: long digit runs (account numbers) cut to their last 4."""
    return _LONG_NUMBER.sub(lambda match: "****" + match.group(1), text)


def retry_later(http_status: int | None) -> bool:
    """True for answers that leave the transaction Pending: 5xx, none at all, and RETRY_LATER_CODES."""
    return http_status is None or http_status >= 500 or http_status in RETRY_LATER_CODES


def rejected_outcome(error: ProviderRejected, provider_transaction_id: str | None = None) -> Outcome:
    """A refused request: Failed with the provider's words and decline reason Provider Error."""
    return Outcome(
        Status.FAILED,
        provider_transaction_id=provider_transaction_id,
        provider_status=f"HTTP {error.http_status}" + (f" {error.code}" if error.code else ""),
        provider_message=error.message[:500],
        decline_reason=PROVIDER_ERROR,
    )
