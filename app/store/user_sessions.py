"""Server-side dashboard sessions: one row per sign-in, looked up by the cookie's key on every request.

The cookie holds a random key; the database holds only its SHA-256, so a copy of the table
signs no one in. A session is live while ended_at is NULL and it is younger than its lifetime.
"""
from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import Connection, insert, select, update

from .tables import merchants, user_sessions, users

# last_seen_at is written at most this often (not on every request).
LAST_SEEN_EVERY = timedelta(minutes=1)
USER_AGENT_LENGTH = 300


def hash_session_key(key: str) -> str:
    """Stored form of a session key (256 random bits, so SHA-256 suffices)."""
    return hashlib.sha256(key.encode()).hexdigest()


def start_session(conn: Connection, user_id: int, at: datetime, ip: str | None,
                  user_agent: str | None) -> str:
    """A new live session of the user; returns the key the cookie is to carry."""
    key = secrets.token_urlsafe(32)
    # Whatever a client sends as its User-Agent: only printable text is kept (PostgreSQL refuses NUL).
    shown_agent = "".join(ch for ch in (user_agent or "") if ch.isprintable())[:USER_AGENT_LENGTH]
    conn.execute(insert(user_sessions).values(
        user_id=user_id, key_hash=hash_session_key(key), created_at=at, last_seen_at=at,
        ip=ip, user_agent=shown_agent or None))
    return key


def live_session_user(conn: Connection, key: str, started_after: datetime):
    """The session with this key and its user (with the merchant's name, two-factor rule and
    time zone, and the user's own time zone and locale),
    or None when the session has ended, is too old, or its user is deactivated."""
    return conn.execute(
        select(user_sessions.c.id.label("session_id"), user_sessions.c.last_seen_at,
               users.c.id, users.c.merchant_id, users.c.email, users.c.role, users.c.active,
               (users.c.totp_secret.is_not(None)).label("has_two_factor"),
               merchants.c.name.label("merchant_name"), merchants.c.require_two_factor,
               users.c.locale, users.c.time_zone.label("own_time_zone"),
               merchants.c.time_zone.label("merchant_time_zone"))
        .join(users, users.c.id == user_sessions.c.user_id)
        .join(merchants, merchants.c.id == users.c.merchant_id)
        .where(user_sessions.c.key_hash == hash_session_key(key), user_sessions.c.ended_at.is_(None),
               user_sessions.c.created_at > started_after, users.c.active.is_(True))
    ).first()


def note_seen(conn: Connection, session_id: int, at: datetime) -> None:
    """Record that the session made a request now."""
    conn.execute(update(user_sessions).where(user_sessions.c.id == session_id).values(last_seen_at=at))


def sessions_of(conn: Connection, user_id: int, started_after: datetime) -> list:
    """The user's live sessions, newest first."""
    return list(conn.execute(
        select(user_sessions.c.id, user_sessions.c.created_at, user_sessions.c.last_seen_at,
               user_sessions.c.ip, user_sessions.c.user_agent)
        .where(user_sessions.c.user_id == user_id, user_sessions.c.ended_at.is_(None),
               user_sessions.c.created_at > started_after)
        .order_by(user_sessions.c.id.desc())
    ))


def end_session(conn: Connection, user_id: int, session_id: int, at: datetime, reason: str) -> bool:
    """End one live session of the user; False when it is not theirs or has ended already."""
    return conn.execute(
        update(user_sessions)
        .where(user_sessions.c.id == session_id, user_sessions.c.user_id == user_id,
               user_sessions.c.ended_at.is_(None))
        .values(ended_at=at, end_reason=reason)
    ).rowcount == 1


def end_sessions_of(conn: Connection, user_id: int, at: datetime, reason: str,
                    keep_session_id: int | None = None) -> int:
    """End every live session of the user (but keep_session_id); returns how many ended."""
    query = update(user_sessions).where(user_sessions.c.user_id == user_id,
                                        user_sessions.c.ended_at.is_(None))
    if keep_session_id is not None:
        query = query.where(user_sessions.c.id != keep_session_id)
    return conn.execute(query.values(ended_at=at, end_reason=reason)).rowcount
