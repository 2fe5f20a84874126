"""Reading the webhook logs: deliveries and their attempts, and the inbox of received webhooks.

Plain functions over a Connection, always scoped to the caller: its merchant and mode for
deliveries, its merchant for the inbox. For the API and the dashboard alike.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from app.payments.events import EventSeen, event_of_body
from app.payments.model import Caller, Mode
from app.store.scope import scoped_to_merchant, scoped_to_mode
from app.store.tables import inbox_messages, transactions, webhook_attempts, webhook_events


@dataclass(frozen=True)
class Delivery:
    """One webhook event and where its delivery stands."""

    webhook_id: str
    event_type: str
    tx_no: str
    url: str
    state: str  # pending | delivered | failed
    attempts: int  # attempts started so far (a manual resend adds to them)
    last_http_status: int | None
    last_error: str | None
    next_attempt_at: datetime | None  # only while pending
    created_at: datetime
    delivered_at: datetime | None
    payload: str  # the exact JSON body sent


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt of a delivery."""

    attempt_no: int
    started_at: datetime
    duration_ms: int | None
    http_status: int | None
    request_headers: dict
    response_excerpt: str | None
    error: str | None
    manual: bool  # asked for by hand (resend)


@dataclass(frozen=True)
class InboxMessage:
    """One request received at a merchant's inbox."""

    id: int
    received_at: datetime
    webhook_id: str | None
    headers: dict
    body: str
    signature_valid: bool
    mode: Mode | None  # the mode whose secret verified it
    duplicate: bool  # an earlier message of this merchant had the same webhook-id

    @property
    def event(self) -> EventSeen | None:
        """The event name and txNo the body carries, when it is one of Paydesk's webhook bodies."""
        return event_of_body(self.body)


_DELIVERY = select(
    webhook_events.c.id,
    webhook_events.c.webhook_id,
    webhook_events.c.event_type,
    transactions.c.tx_no,
    webhook_events.c.url,
    webhook_events.c.state,
    webhook_events.c.attempts,
    webhook_events.c.last_http_status,
    webhook_events.c.last_error,
    webhook_events.c.next_attempt_at,
    webhook_events.c.created_at,
    webhook_events.c.delivered_at,
    webhook_events.c.payload,
).join(transactions, transactions.c.id == webhook_events.c.transaction_id)


def _delivery(row) -> Delivery:
    return Delivery(
        webhook_id=row.webhook_id,
        event_type=row.event_type,
        tx_no=row.tx_no,
        url=row.url,
        state=row.state,
        attempts=row.attempts,
        last_http_status=row.last_http_status,
        last_error=row.last_error,
        next_attempt_at=row.next_attempt_at if row.state == "pending" else None,
        created_at=row.created_at,
        delivered_at=row.delivered_at,
        payload=row.payload,
    )


# A delivery's states: waiting for its first or next attempt, given up on, or answered 2xx.
DELIVERY_STATES = ("pending", "failed", "delivered")


def list_deliveries(conn: Connection, caller: Caller, *, tx_no: str | None = None,
                    limit: int = 50, offset: int = 0, endpoint_row_id: int | None = None,
                    state: str | None = None) -> list[Delivery]:
    """The caller's webhook events in its mode, newest first (only tx_no's, only those to one
    webhook endpoint, or only those in one of DELIVERY_STATES, when given)."""
    query = _DELIVERY.where(*scoped_to_mode(webhook_events, caller))
    if tx_no is not None:
        query = query.where(transactions.c.tx_no == tx_no)
    if state is not None:
        query = query.where(webhook_events.c.state == state)
        if state != "delivered":  # the condition of the partial index that holds the few such rows
            query = query.where(webhook_events.c.state != "delivered")
    if endpoint_row_id is not None:
        query = query.where(webhook_events.c.endpoint_id == endpoint_row_id)
    query = query.order_by(webhook_events.c.created_at.desc(), webhook_events.c.id.desc())
    return [_delivery(row) for row in conn.execute(query.limit(limit).offset(offset))]


def get_delivery(conn: Connection, caller: Caller, webhook_id: str) -> Delivery | None:
    """One of the caller's webhook events by its webhook-id, or None."""
    row = conn.execute(_DELIVERY.where(*scoped_to_mode(webhook_events, caller),
                                       webhook_events.c.webhook_id == webhook_id)).first()
    return _delivery(row) if row else None


def _attempt(row) -> Attempt:
    return Attempt(
        attempt_no=row.attempt_no,
        started_at=row.started_at,
        duration_ms=row.duration_ms,
        http_status=row.http_status,
        request_headers=json.loads(row.request_headers) if row.request_headers else {},
        response_excerpt=row.response_excerpt,
        error=row.error,
        manual=bool(row.manual),
    )


def attempts_by_webhook(conn: Connection, caller: Caller,
                        webhook_ids: list[str]) -> dict[str, list[Attempt]]:
    """The attempts of each of these events of the caller (oldest first), keyed by webhook-id."""
    found: dict[str, list[Attempt]] = {webhook_id: [] for webhook_id in webhook_ids}
    if not webhook_ids:
        return found
    rows = conn.execute(
        select(webhook_attempts, webhook_events.c.webhook_id)
        .join(webhook_events, webhook_events.c.id == webhook_attempts.c.event_id)
        .where(*scoped_to_mode(webhook_events, caller), webhook_events.c.webhook_id.in_(webhook_ids))
        .order_by(webhook_attempts.c.attempt_no, webhook_attempts.c.id)
    )
    for row in rows:
        found[row.webhook_id].append(_attempt(row))
    return found


def attempts_of(conn: Connection, caller: Caller, webhook_id: str) -> list[Attempt]:
    """The attempts of one of the caller's events, oldest first ([] for an unknown id)."""
    return attempts_by_webhook(conn, caller, [webhook_id])[webhook_id]


def list_inbox(conn: Connection, caller: Caller, *, limit: int = 50,
               offset: int = 0) -> list[InboxMessage]:
    """Webhooks received at the caller's merchant's inbox (both modes), newest first."""
    rows = conn.execute(
        select(inbox_messages)
        .where(*scoped_to_merchant(inbox_messages, caller))
        .order_by(inbox_messages.c.received_at.desc(), inbox_messages.c.id.desc())
        .limit(limit).offset(offset)
    )
    return [
        InboxMessage(
            id=row.id,
            received_at=row.received_at,
            webhook_id=row.webhook_id,
            headers=json.loads(row.headers),
            body=row.body,
            signature_valid=bool(row.signature_valid),
            mode=Mode(row.mode) if row.mode else None,
            duplicate=bool(row.duplicate),
        )
        for row in rows
    ]
