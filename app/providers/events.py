"""Inbound provider webhooks: what a verified event says happened, and why one is refused."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.payments.disputes import DisputeFacts
from app.payments.model import Kind
from app.payments.provider import Outcome


class InvalidWebhook(Exception):
    """A webhook that must not be acted on (answer 400); str() says why, without secrets."""


class WebhookSignatureError(InvalidWebhook):
    """The signature is missing, does not match the body, or (Stripe) is older than the tolerance."""


class WebhookPayloadError(InvalidWebhook):
    """A correctly signed body that is not the JSON event the provider documents."""


@dataclass(frozen=True)
class ProviderEvent:
    """A verified event about one transaction and the Outcome it reports.

    The transaction is named by `tx_no` when the event carries Paydesk's number (our
    reference or metadata); otherwise by `provider_transaction_id`, or for Paystack
    refunds by `original_tx_no` with the amount (see each connector's parse_webhook). A dispute
    event also carries what it says of the dispute (`dispute`); its transaction is the payment.
    """

    provider: str
    event_type: str
    kind: Kind
    outcome: Outcome
    tx_no: str | None = None
    provider_transaction_id: str | None = None
    original_tx_no: str | None = None
    amount_minor: int | None = None
    currency: str | None = None
    event_id: str | None = None
    dispute: DisputeFacts | None = None


@dataclass(frozen=True)
class IgnoredEvent:
    """A verified event Paydesk does not act on: answer 200 and log it."""

    provider: str
    event_type: str
    event_id: str | None = None


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A request header by name in any case, from werkzeug Headers or a plain dict."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    return value
