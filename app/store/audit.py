"""The audit log as the caller may read it: their merchant's entries of their mode, newest first."""
from __future__ import annotations

from sqlalchemy import Connection, or_, select

from app.payments.model import Caller

from .scope import scoped_to_merchant
from .tables import audit_log

PAGE_SIZE = 50


def audit_entries(conn: Connection, caller: Caller, *, older_than_id: int | None = None,
                  limit: int = PAGE_SIZE) -> list:
    """The merchant's audit log for this mode (and mode-less entries such as user changes), newest first."""
    query = select(audit_log).where(
        *scoped_to_merchant(audit_log, caller),
        or_(audit_log.c.mode == caller.mode.value, audit_log.c.mode.is_(None)),
    )
    if older_than_id is not None:
        query = query.where(audit_log.c.id < older_than_id)
    return list(conn.execute(query.order_by(audit_log.c.id.desc()).limit(limit)))
