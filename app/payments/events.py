"""The webhook body of a transaction event, as the interface shows it for refunds."""
from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from .disputes import DisputeStatus
from .formats import iso_utc
from .model import Kind, Status, Transaction, can_move
from .money import quantize
from .schemas import WebhookPayload


def event_type(tx: Transaction) -> str:
    """Event name, e.g. refund.captured or payment.declined."""
    return _event_name(tx.kind.value, Status(tx.status).value)


@dataclass(frozen=True)
class EventSeen:
    """What a webhook body says it is about (for a log of received bodies)."""

    type: str
    tx_no: str


def event_of_body(body: str) -> EventSeen | None:
    """The event name and txNo of a webhook body event_payload() wrote; None for any other text."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind, status, tx_no = data.get("transactionType"), data.get("status"), data.get("txNo")
    if not all(isinstance(word, str) and 0 < len(word) <= 40 for word in (kind, status, tx_no)):
        return None
    return EventSeen(_event_name(kind, status), tx_no)


def _event_name(kind: str, status: str) -> str:
    return f"{kind.lower()}.{status.lower()}"


# Webhook ids are msg_ and 24 hex digits; text longer than this cannot name an event.
MAX_WEBHOOK_ID_LENGTH = 64
# Event ids are evt_ and 24 hex digits.
MAX_EVENT_ID_LENGTH = 40
# Every event type an endpoint may name: <kind>.<status> of transactions, dispute.<status>.
EVENT_TYPES: tuple[str, ...] = (
    *(_event_name(kind.value, status.value) for kind in Kind for status in Status),
    *(f"dispute.{status.value}" for status in DisputeStatus),
)


def _reached(kind: Kind, status: Status) -> bool:
    """A transaction of this kind can move to this status from some other (model.can_move)."""
    return any(can_move(kind, current, status) for current in Status)


# The types a webhook can be sent with: a move the rules allow (a payment never moves to Pending,
# a refund never to Chargeback), and every dispute status. What the dashboard offers; the API
# still takes any of EVENT_TYPES, so an endpoint made with one of the others keeps working.
SENT_EVENT_TYPES: tuple[str, ...] = (
    *(_event_name(kind.value, status.value) for kind in Kind for status in Status if _reached(kind, status)),
    *(f"dispute.{status.value}" for status in DisputeStatus),
)


def new_event_id() -> str:
    """The public id of a new event."""
    return "evt_" + secrets.token_hex(12)


def endpoint_webhook_id(webhook_id: str, endpoint_public_id: str) -> str:
    """The webhook-id of an event's delivery to one endpoint: stable (a fan-out made twice finds
    the first), and its own, so each delivery is resent and logged on its own."""
    return "msg_" + hashlib.sha256(f"{webhook_id}:{endpoint_public_id}".encode()).hexdigest()[:24]


def new_webhook_id() -> str:
    """A unique, stable id for one event (sent as webhook-id on every attempt)."""
    return "msg_" + secrets.token_hex(12)


def move_webhook_id(tx: Transaction) -> str:
    """The id of the event of tx's move to its current status: the same whenever that move is
    recorded. A settlement commit that a database crash lost (app.store's relax_durability) is
    recorded again when the worker asks the provider again, and its event then reaches the
    receiver under the id it may have seen already, so it is deduplicated, not doubled.

    No two events share an id: a transaction reaches each status at most once (its moves go
    one way), and its number, id and creation time tell it from any other.
    """
    identity = ":".join((str(tx.merchant_id), tx.mode.value, str(tx.id), tx.tx_no,
                         tx.created_at.isoformat(), tx.status.value))
    return "msg_" + hashlib.sha256(identity.encode()).hexdigest()[:24]


def event_payload(tx: Transaction) -> WebhookPayload:
    """The body: the refund fields of the interface; payments and payouts use the same shape."""
    return {
        "txNo": tx.tx_no,
        "status": tx.status.value,
        "amount": quantize(tx.amount, tx.currency),
        "currency": tx.currency,
        "transactionType": tx.kind.transaction_type,
        "originalTxNo": tx.original_tx_no,
        "providerTransactionId": tx.provider_transaction_id,
        "providerStatus": tx.provider_status,
        "providerMessage": tx.provider_message,
        "createdAt": iso_utc(tx.created_at),
    }
