"""The outbox's side of delivery: claiming due events for an attempt, and recording what the attempt gave.

An event is claimed in a short database transaction (PostgreSQL: FOR UPDATE SKIP
LOCKED, so several workers never take the same one; SQLite: the write lock
serialises the conditional UPDATE). Claiming counts the attempt and leases the
event: its next_attempt_at moves past the longest possible delivery, so an event
whose worker dies mid-delivery becomes due again when the lease ends instead of
being lost. The attempt's result is written in a second short transaction that
only moves the event on if the lease is still this worker's.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert, select, update

from app.payments.model import Mode
from app.payments.notifications import webhook_failing
from app.store.merchants import active_webhook_secrets
from app.store.tables import webhook_attempts, webhook_events

from . import endpoints
from .settings import DeliverySettings, retry_delay


@dataclass(frozen=True)
class ClaimedEvent:
    """One event taken by this worker for one attempt."""

    event_id: int
    merchant_id: int
    mode: Mode
    webhook_id: str
    url: str
    payload: str
    attempt_no: int
    schedule_position: int  # 1 for the first attempt of the current retry schedule
    manual: bool
    lease_until: datetime
    secrets: list[str] = field(repr=False)


@dataclass(frozen=True)
class AttemptResult:
    """What one HTTP attempt gave."""

    started_at: datetime
    duration_ms: int
    request_headers: dict
    http_status: int | None = None
    response_excerpt: str | None = None
    error: str | None = None
    delivered: bool = False
    stop_retrying: bool = False  # 410, or a target that can never be delivered to


def claim_due(deps, settings: DeliverySettings, limit: int,
              in_flight: Counter | None = None, merchant_id: int | None = None) -> list[ClaimedEvent]:
    """Claim up to `limit` due events, oldest due first, sharing fairly between merchants
    (only those of `merchant_id` when given)."""
    if limit <= 0:
        return []
    now = deps.clock()
    lease_until = now + settings.lease
    in_flight = in_flight or Counter()
    # Merchants already at their share are left out of the query, so that a long
    # backlog of one merchant cannot fill the candidate window and hide the others.
    at_share = [m for m, running in in_flight.items() if running >= settings.per_merchant]
    e = webhook_events.c
    candidates = (
        select(e.id, e.merchant_id, e.mode, e.webhook_id, e.url, e.payload, e.attempts,
               e.schedule_offset, e.next_attempt_manual, e.endpoint_id)
        .where(e.state == "pending", e.next_attempt_at <= now, e.merchant_id.not_in(at_share))
        .order_by(e.next_attempt_at, e.id)
        .limit(limit * 4)
        .with_for_update(skip_locked=True)
    )
    if merchant_id is not None:
        candidates = candidates.where(e.merchant_id == merchant_id)
    with deps.uow() as uow:
        # Delivery bookkeeping may skip the disk flush: a commit a database crash loses only
        # sends the event again, under the same webhook-id (receivers deduplicate on it), and
        # waiting for the flush costs about a third of delivery throughput.
        uow.relax_durability()
        chosen = _fair_share(uow.conn.execute(candidates).all(), limit, in_flight,
                             settings.per_merchant)
        if not chosen:
            return []
        # Conditional, so that without row locks (SQLite) an event is still taken only once.
        taken = set(uow.conn.execute(
            update(webhook_events)
            .where(e.id.in_([row.id for row in chosen]), e.state == "pending",
                   e.next_attempt_at <= now)
            .values(attempts=e.attempts + 1, next_attempt_at=lease_until, next_attempt_manual=False)
            .returning(e.id)
        ).scalars())
        # A callbackUrl's delivery is signed with its merchant's secrets, an endpoint's with its own.
        secrets = {key: active_webhook_secrets(uow, key[0], Mode(key[1]), now)
                   for key in {(row.merchant_id, row.mode) for row in chosen
                               if row.id in taken and row.endpoint_id is None}}
        endpoint_secrets = endpoints.active_secrets(
            uow.conn, uow.box, {row.endpoint_id for row in chosen if row.id in taken and row.endpoint_id}, now)
        uow.commit()
    return [
        ClaimedEvent(
            event_id=row.id, merchant_id=row.merchant_id, mode=Mode(row.mode),
            webhook_id=row.webhook_id, url=row.url, payload=row.payload,
            attempt_no=row.attempts + 1,
            schedule_position=row.attempts + 1 - row.schedule_offset,
            manual=bool(row.next_attempt_manual), lease_until=lease_until,
            secrets=(endpoint_secrets[row.endpoint_id] if row.endpoint_id
                     else secrets[(row.merchant_id, row.mode)]))
        for row in chosen if row.id in taken
    ]


def _fair_share(rows, limit: int, in_flight: Counter, per_merchant: int) -> list:
    """The rows to take: in due order, no merchant above its share of concurrent deliveries."""
    taken_per_merchant = Counter(in_flight)
    chosen = []
    for row in rows:
        if len(chosen) == limit:
            break
        if taken_per_merchant[row.merchant_id] < per_merchant:
            taken_per_merchant[row.merchant_id] += 1
            chosen.append(row)
    return chosen


def record_attempt(deps, event: ClaimedEvent, result: AttemptResult) -> None:
    """Log the attempt and move the event on: delivered, failed, or due again per the schedule."""
    now = deps.clock()
    error = result.error[:500] if result.error else None
    values = {"last_http_status": result.http_status, "last_error": error}
    if result.delivered:
        values.update(state="delivered", delivered_at=now, next_attempt_at=None)
    else:
        delay = None if result.stop_retrying else retry_delay(event.schedule_position)
        if delay is None:
            values.update(state="failed", next_attempt_at=None)
        else:
            values.update(next_attempt_at=now + delay)
    e = webhook_events.c
    with deps.uow() as uow:
        uow.relax_durability()  # as in claim_due: a lost commit only sends the event again
        uow.conn.execute(insert(webhook_attempts).values(
            event_id=event.event_id,
            attempt_no=event.attempt_no,
            started_at=result.started_at,
            duration_ms=result.duration_ms,
            http_status=result.http_status,
            request_headers=json.dumps(result.request_headers),
            response_excerpt=result.response_excerpt,
            error=error,
            manual=event.manual,
        ))
        # Only while the lease is still ours: after it ran out, or after a resend,
        # the event belongs to the newer attempt and this one is only logged.
        moved = uow.conn.execute(
            update(webhook_events)
            .where(e.id == event.event_id, e.state == "pending", e.attempts == event.attempt_no,
                   e.next_attempt_at == event.lease_until)
            .values(**values)
        )
        if values.get("state") == "failed" and moved.rowcount == 1:  # given up: tell who chose to know
            tx_no = json.loads(event.payload).get("txNo", "")
            uow.notify(webhook_failing(event.merchant_id, event.mode, tx_no, event.url, event.attempt_no))
        uow.commit()
