"""Starting and ending dashboard sessions: the server-side row behind each signed-in cookie.

The Flask session (a signed cookie) carries the row's random key; app/auth/users.py checks on
every request that the row is still live, so ending the row signs out every copy of the cookie.
"""
from __future__ import annotations

from datetime import datetime

from flask import current_app, g, request, session
from flask_login import current_user, logout_user

from app.store import user_sessions
from app.store.users import record_login
from app.web import deps

# The Flask session's entry holding the session row's key.
SESSION_KEY = "session_key"


def sessions_started_after(now: datetime) -> datetime:
    """Sessions started before this have expired (PERMANENT_SESSION_LIFETIME after sign-in)."""
    return now - current_app.config["PERMANENT_SESSION_LIFETIME"]


def begin(user_id: int, new_password_hash: str | None = None) -> None:
    """A new session row for the user, and a new cookie carrying its key with nothing from
    before sign-in (the CSRF token is new too); flask-login's login_user comes after."""
    now = deps().clock()
    with deps().uow() as uow:
        record_login(uow.conn, user_id, now, new_password_hash)
        key = user_sessions.start_session(uow.conn, user_id, now, request.remote_addr,
                                          request.user_agent.string)
        uow.commit()
    session.clear()
    g.pop("csrf_token", None)
    session[SESSION_KEY] = key


def end_current(reason: str) -> None:
    """Sign out: end this session's row and forget the cookie's contents."""
    if current_user.is_authenticated:
        with deps().uow() as uow:
            user_sessions.end_session(uow.conn, current_user.id, current_user.session_id,
                                      deps().clock(), reason)
            uow.commit()
    logout_user()
    session.clear()
