"""The audit log as the caller may read it: their merchant's entries of their mode, newest first."""
from __future__ import annotations

from sqlalchemy import Connection, func, or_, select

from app.payments.model import Caller

from .scope import scoped_to_merchant, scoped_to_mode
from .tables import audit_log, transactions

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


def existing_transactions(conn: Connection, caller: Caller, tx_nos: set[str]) -> set[str]:
    """Which of these transaction numbers the caller's merchant has in the caller's mode now."""
    if not tx_nos:
        return set()
    return set(conn.execute(select(transactions.c.tx_no).where(
        *scoped_to_mode(transactions, caller), transactions.c.tx_no.in_(sorted(tx_nos)))).scalars())


def last_entry_id(conn: Connection, caller: Caller, action: str) -> int | None:
    """The id of the caller's mode's latest entry of this action (None if there is none)."""
    return conn.execute(select(func.max(audit_log.c.id)).where(
        *scoped_to_mode(audit_log, caller), audit_log.c.action == action)).scalar_one()
