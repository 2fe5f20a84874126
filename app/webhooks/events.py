"""Reading the event log (GET /api/v1/events) and pruning it past its retention.

An event is one change that sent a webhook: its type, its body, its time and its deliveries
(webhook_events rows: the callbackUrl's and each subscribed endpoint's). Plain functions,
always scoped to the caller's merchant and mode.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, exists, or_, select, update

from app.payments.model import Caller
from app.store.scope import scoped_to_mode
from app.store.tables import events, webhook_endpoints, webhook_events

# Events are kept this many days unless EVENT_RETENTION_DAYS says otherwise.
DEFAULT_RETENTION_DAYS = 30
# Events one pruning statement removes at most (a long backlog goes in several).
PRUNE_BATCH = 1000


@dataclass(frozen=True)
class EventFilter:
    """What GET /events narrows to; an empty field narrows nothing."""

    types: tuple[str, ...] = ()
    created_from: datetime | None = None
    created_to: datetime | None = None
    tx_no: str | None = None
    delivery_failed: bool = False


@dataclass(frozen=True)
class EventDelivery:
    """One delivery of an event: to the callbackUrl (endpoint_id None) or to an endpoint."""

    webhook_id: str
    endpoint_id: str | None  # the endpoint's public id
    url: str
    state: str  # pending | delivered | failed
    attempts: int
    last_http_status: int | None
    last_error: str | None
    next_attempt_at: datetime | None
    delivered_at: datetime | None


@dataclass(frozen=True)
class Event:
    """One recorded event and its deliveries."""

    row_id: int
    public_id: str
    type: str
    tx_no: str
    payload: str  # the webhook's exact body
    created_at: datetime
    deliveries: tuple[EventDelivery, ...]


def failed_delivery():
    """A delivery that is not delivered and whose last attempt failed (Failed, or retrying)."""
    d = webhook_events.c
    return or_(d.state == "failed",
               and_(d.state == "pending", or_(d.last_error.is_not(None), d.last_http_status.is_not(None))))


def list_events(conn: Connection, caller: Caller, flt: EventFilter, *, before: int | None,
                limit: int) -> list[Event]:
    """The caller's events, newest first, after the row `before` when given; at most `limit`."""
    e = events.c
    query = select(events).where(*scoped_to_mode(events, caller))
    if before is not None:
        query = query.where(e.id < before)
    if flt.types:
        query = query.where(e.event_type.in_(flt.types))
    if flt.created_from is not None:
        query = query.where(e.created_at >= flt.created_from)
    if flt.created_to is not None:
        query = query.where(e.created_at < flt.created_to)
    if flt.tx_no is not None:
        query = query.where(e.tx_no == flt.tx_no)
    if flt.delivery_failed:
        query = query.where(exists(select(webhook_events.c.id).where(
            webhook_events.c.event_id == e.id, failed_delivery())))
    rows = conn.execute(query.order_by(e.id.desc()).limit(limit)).mappings().all()
    return _with_deliveries(conn, rows)


def get_event(conn: Connection, caller: Caller, public_id: str) -> Event | None:
    """One of the caller's events by its public id; None when it has none such."""
    rows = conn.execute(select(events).where(*scoped_to_mode(events, caller),
                                             events.c.public_id == public_id)).mappings().all()
    found = _with_deliveries(conn, rows)
    return found[0] if found else None


def _with_deliveries(conn: Connection, rows) -> list[Event]:
    """The events of these rows, each with its deliveries (one query for them all)."""
    if not rows:
        return []
    d = webhook_events.c
    deliveries = conn.execute(
        select(d.event_id, d.webhook_id, webhook_endpoints.c.public_id.label("endpoint"), d.url, d.state,
               d.attempts, d.last_http_status, d.last_error, d.next_attempt_at, d.delivered_at)
        .outerjoin(webhook_endpoints, webhook_endpoints.c.id == d.endpoint_id)
        .where(d.event_id.in_([row["id"] for row in rows]))
        .order_by(d.id)
    ).all()
    by_event = defaultdict(list)
    for row in deliveries:
        by_event[row.event_id].append(EventDelivery(
            webhook_id=row.webhook_id, endpoint_id=row.endpoint, url=row.url, state=row.state,
            attempts=row.attempts, last_http_status=row.last_http_status, last_error=row.last_error,
            next_attempt_at=row.next_attempt_at, delivered_at=row.delivered_at))
    return [Event(row_id=row["id"], public_id=row["public_id"], type=row["event_type"], tx_no=row["tx_no"],
                  payload=row["payload"], created_at=row["created_at"],
                  deliveries=tuple(by_event[row["id"]])) for row in rows]


def prune_events(deps, older_than: datetime, batch: int = PRUNE_BATCH) -> int:
    """Remove the events recorded before `older_than` (their deliveries stay in the webhook log,
    no longer naming them); how many."""
    removed = 0
    while True:
        with deps.uow() as uow:
            ids = list(uow.conn.execute(select(events.c.id).where(events.c.created_at < older_than)
                                        .order_by(events.c.id).limit(batch)).scalars())
            if not ids:
                return removed
            uow.conn.execute(update(webhook_events).where(webhook_events.c.event_id.in_(ids))
                             .values(event_id=None))
            uow.conn.execute(delete(events).where(events.c.id.in_(ids)))
            uow.commit()
        removed += len(ids)
        if len(ids) < batch:
            return removed
