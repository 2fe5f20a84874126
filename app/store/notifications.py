"""Notification choices, events and each user's copies: the SQL of app.auth.notifications.

Events are handed out (one copy per user who chose the kind) by one conditional UPDATE that
marks the event: of two workers, one hands it out. A copy is claimed by setting its sent_at in
the unit that reads it, before its mail goes, so a crash after the claim never sends it twice.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, insert, literal, or_, select, true, update

from app.payments.notifications import Delivery, NotificationEvent

from .tables import UtcDateTime, notification_choices, notification_events, notifications, users


@dataclass(frozen=True)
class Choice:
    """A kind a user chose: how it is delivered, and whether sandbox events count."""

    kind: str
    delivery: Delivery
    sandbox: bool


@dataclass(frozen=True)
class Copy:
    """A user's claimed notification, as its mail says it."""

    id: int
    email: str
    mode: str
    subject: str
    body: str
    target: str
    created_at: datetime
    delivery: Delivery


def event_row(event: NotificationEvent, now: datetime) -> dict:
    """The notification_events row of an event (written with the unit's other writes)."""
    return dict(merchant_id=event.merchant_id, mode=event.mode.value, kind=event.kind.key,
                subject=event.subject[:200], body=event.text, target=event.target,
                not_for=event.not_for, created_at=now)


def choices_of(conn: Connection, user_id: int) -> dict[str, Choice]:
    """The kinds the user chose, by key."""
    c = notification_choices.c
    rows = conn.execute(select(c.kind, c.delivery, c.sandbox).where(c.user_id == user_id))
    return {kind: Choice(kind, Delivery(delivery), bool(sandbox)) for kind, delivery, sandbox in rows}


def set_choices(conn: Connection, user_id: int, chosen: Iterable[Choice]) -> None:
    """Replace the user's choices with these."""
    conn.execute(delete(notification_choices).where(notification_choices.c.user_id == user_id))
    rows = [dict(user_id=user_id, kind=choice.kind, delivery=choice.delivery.value, sandbox=choice.sandbox)
            for choice in chosen]
    if rows:
        conn.execute(insert(notification_choices), rows)


def waiting_events(conn: Connection, limit: int = 100) -> list:
    """Events not handed out yet, oldest first."""
    e = notification_events.c
    return conn.execute(select(e.id, e.merchant_id, e.mode, e.kind, e.not_for, e.created_at)
                        .where(e.handed_out_at.is_(None)).order_by(e.id).limit(limit)).all()


def hand_out(conn: Connection, event, roles: frozenset[str] | None, now: datetime) -> int:
    """Give the event one copy per active user of its merchant who chose its kind (and, for a
    sandbox event, sandbox too) and whose role may receive it, in the unit that marks it handed
    out; 0 copies when another worker marked it first. Returns the copies made."""
    e = notification_events.c
    marked = conn.execute(update(notification_events).where(e.id == event.id, e.handed_out_at.is_(None))
                          .values(handed_out_at=now))
    if marked.rowcount != 1:
        return 0
    c, u = notification_choices.c, users.c
    recipients = (
        select(literal(event.id), u.id, c.delivery, literal(now, UtcDateTime()), literal(now, UtcDateTime()))
        .select_from(users.join(notification_choices, and_(c.user_id == u.id, c.kind == event.kind)))
        .where(u.merchant_id == event.merchant_id, u.active == true(),
               or_(literal(event.mode) == "live", c.sandbox == true()))
    )
    if roles is not None:
        recipients = recipients.where(u.role.in_(sorted(roles)))
    if event.not_for:
        recipients = recipients.where(u.email != event.not_for)
    made = conn.execute(insert(notifications).from_select(
        ["event_id", "user_id", "delivery", "created_at", "next_try_at"], recipients)
        .returning(notifications.c.id))
    return len(made.all())


def users_with_due(conn: Connection, now: datetime, digest_cut: datetime, limit: int = 100) -> list[int]:
    """Users with copies due: immediate ones whose try is due, digest ones made before the last
    digest time (digest_cut)."""
    n = notifications.c
    return list(conn.execute(select(n.user_id).where(*_due(now, digest_cut)).distinct().limit(limit)).scalars())


def _due(now: datetime, digest_cut: datetime) -> list:
    n = notifications.c
    return [n.sent_at.is_(None), n.next_try_at <= now,
            or_(n.delivery == Delivery.IMMEDIATE.value, n.created_at < digest_cut)]


def claim_due(conn: Connection, user_id: int, now: datetime, digest_cut: datetime) -> list[Copy]:
    """Mark the user's due copies sent (this unit is their claim) and return them, oldest first;
    none when another worker claimed them first."""
    n, e, u = notifications.c, notification_events.c, users.c
    claimed = conn.execute(update(notifications).where(n.user_id == user_id, *_due(now, digest_cut))
                           .values(sent_at=now, attempts=n.attempts + 1).returning(n.id)).scalars().all()
    if not claimed:
        return []
    rows = conn.execute(
        select(n.id, u.email, e.mode, e.subject, e.body, e.target, e.created_at, n.delivery)
        .select_from(notifications.join(notification_events, e.id == n.event_id).join(users, u.id == n.user_id))
        .where(n.id.in_(claimed)).order_by(e.created_at, n.id))
    return [Copy(*row[:-1], Delivery(row[-1])) for row in rows]


def put_back(conn: Connection, ids: list[int], next_try_at: datetime, error: str) -> None:
    """Copies whose mail was refused: due again at next_try_at."""
    conn.execute(update(notifications).where(notifications.c.id.in_(ids))
                 .values(sent_at=None, next_try_at=next_try_at, error=error[:500]))


def give_up(conn: Connection, ids: list[int], error: str) -> None:
    """Copies refused too often: kept as sent, with the last error."""
    conn.execute(update(notifications).where(notifications.c.id.in_(ids)).values(error=error[:500]))


def attempts_of(conn: Connection, ids: list[int]) -> int:
    """The most tries any of these copies had."""
    n = notifications.c
    return max(conn.execute(select(n.attempts).where(n.id.in_(ids))).scalars(), default=0)
