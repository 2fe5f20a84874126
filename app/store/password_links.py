"""One-time password links: an admin's reset link, or the invitation of a new user.

Only the SHA-256 of the link's token is kept. A link works once, until it expires, and a new
link for the same user retires the ones before it.
"""
from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import Connection, insert, select, update

from .tables import merchants, password_links, users

RESET = "reset"
INVITE = "invite"
# A reset link is for someone locked out now; an invitation waits for a new colleague to read it.
LIFETIMES = {RESET: timedelta(hours=1), INVITE: timedelta(days=7)}


def hash_link_token(token: str) -> str:
    """Stored form of a link's token (256 random bits, so SHA-256 suffices)."""
    return hashlib.sha256(token.encode()).hexdigest()


def issue_link(conn: Connection, user_id: int, purpose: str, created_by: str, at: datetime) -> str:
    """A new link token for the user (earlier unused links stop working); returns the token."""
    retire_links(conn, user_id, at)
    token = secrets.token_urlsafe(32)
    conn.execute(insert(password_links).values(
        user_id=user_id, token_hash=hash_link_token(token), purpose=purpose, created_by=created_by,
        created_at=at, expires_at=at + LIFETIMES[purpose]))
    return token


def retire_links(conn: Connection, user_id: int, at: datetime) -> None:
    """Make every unused link of the user unusable (a new link, or the password set another way)."""
    conn.execute(update(password_links)
                 .where(password_links.c.user_id == user_id, password_links.c.used_at.is_(None),
                        password_links.c.expires_at > at)
                 .values(expires_at=at))


def usable_link(conn: Connection, token: str, at: datetime):
    """The unused, unexpired link with this token and its (active) user, or None."""
    return conn.execute(
        select(password_links.c.id, password_links.c.purpose, password_links.c.expires_at,
               users.c.id.label("user_id"), users.c.email, users.c.merchant_id,
               merchants.c.name.label("merchant_name"))
        .join(users, users.c.id == password_links.c.user_id)
        .join(merchants, merchants.c.id == users.c.merchant_id)
        .where(password_links.c.token_hash == hash_link_token(token),
               password_links.c.used_at.is_(None), password_links.c.expires_at > at,
               users.c.active.is_(True))
    ).first()


def use_link(conn: Connection, link_id: int, at: datetime) -> bool:
    """Mark the link used; False when it was used (or expired) meanwhile, so only one use wins."""
    return conn.execute(
        update(password_links)
        .where(password_links.c.id == link_id, password_links.c.used_at.is_(None),
               password_links.c.expires_at > at)
        .values(used_at=at)
    ).rowcount == 1
