"""Dashboard users: the reads of sign-in and sessions, and the caller's administration of their merchant's users.

Users belong to a merchant, not to a mode: the caller's scope here is its merchant_id.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, select, update

from app.payments.model import Caller

from .scope import scoped_to_merchant
from .tables import merchants, users

_USER_COLUMNS = (users.c.id, users.c.merchant_id, users.c.email, users.c.role, users.c.active,
                 users.c.password_hash, users.c.created_at, users.c.last_login_at,
                 users.c.totp_secret.is_not(None).label("has_two_factor"),
                 merchants.c.name.label("merchant_name"))
# Stored for a user who has not chosen a password yet (invited): no password verifies against it.
NO_PASSWORD = "!"  # nosec B105 # not a password: a stored value no password verifies against


def user_for_sign_in(conn: Connection, email: str):
    """The user signing in with this e-mail (any case) and their merchant's name, or None."""
    return _user_with_merchant_name(conn, users.c.email == email.strip().lower())


def user_by_id(conn: Connection, user_id: int):
    """The user with this id and their merchant's name, or None."""
    return _user_with_merchant_name(conn, users.c.id == user_id)


def _user_with_merchant_name(conn: Connection, condition):
    return conn.execute(
        select(*_USER_COLUMNS).join(merchants, merchants.c.id == users.c.merchant_id).where(condition)
    ).first()


def record_login(conn: Connection, user_id: int, at: datetime, new_password_hash: str | None) -> None:
    """Note a successful sign-in; store a fresh hash when the hasher's parameters have changed."""
    values = {"last_login_at": at}
    if new_password_hash:
        values["password_hash"] = new_password_hash
    conn.execute(update(users).where(users.c.id == user_id).values(**values))


def set_password_hash(conn: Connection, user_id: int, password_hash: str) -> None:
    """Store the user's new password (its Argon2id hash)."""
    conn.execute(update(users).where(users.c.id == user_id).values(password_hash=password_hash))


def merchant_of_email(conn: Connection, email: str) -> int | None:
    """The merchant whose user signs in with this e-mail (any case), or None: an e-mail signs in
    to one merchant. Never shown to another merchant (settings.add_user answers neutrally)."""
    return conn.execute(
        select(users.c.merchant_id).where(users.c.email == email.strip().lower())
    ).scalar()


def _callers_user(caller: Caller, user_id: int) -> tuple:
    """Conditions selecting the user with this id if the caller's merchant has one."""
    return (users.c.id == user_id, *scoped_to_merchant(users, caller))


def users_of(conn: Connection, caller: Caller) -> list:
    """The merchant's dashboard users, by e-mail."""
    return list(conn.execute(
        select(users.c.id, users.c.email, users.c.role, users.c.active, users.c.created_at,
               users.c.last_login_at, users.c.totp_secret.is_not(None).label("has_two_factor"),
               (users.c.password_hash == NO_PASSWORD).label("invited"))
        .where(*scoped_to_merchant(users, caller)).order_by(users.c.email)
    ))


def user_of(conn: Connection, caller: Caller, user_id: int):
    """One of the merchant's users, or None when the id is not theirs."""
    return conn.execute(
        select(users.c.id, users.c.email, users.c.role, users.c.active,
               users.c.totp_secret.is_not(None).label("has_two_factor"))
        .where(*_callers_user(caller, user_id))
    ).first()


def set_role(conn: Connection, caller: Caller, user_id: int, role: str) -> None:
    """Give one of the merchant's users a new role."""
    conn.execute(update(users).where(*_callers_user(caller, user_id)).values(role=role))


def set_active(conn: Connection, caller: Caller, user_id: int, active: bool) -> None:
    """Let one of the merchant's users sign in again, or stop them (their sessions end at once)."""
    conn.execute(update(users).where(*_callers_user(caller, user_id)).values(active=active))


def active_admins(conn: Connection, caller: Caller) -> int:
    """How many active admins the merchant has (the last one may not be demoted or stopped)."""
    return conn.execute(
        select(func.count()).select_from(users).where(
            *scoped_to_merchant(users, caller), users.c.role == "admin", users.c.active.is_(True))
    ).scalar_one()


def set_display(conn: Connection, user_id: int, locale: str, time_zone: str | None) -> None:
    """The user's locale and own time zone (None: the merchant's)."""
    conn.execute(update(users).where(users.c.id == user_id).values(locale=locale, time_zone=time_zone))
