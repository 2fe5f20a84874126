"""The audit log as the caller may read it: their merchant's entries of their mode, newest first,
narrowed by user, action, days and transaction."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from sqlalchemy import Connection, func, or_, select

from app.payments.model import Caller

from .listing import escape_like, start_of_day
from .scope import scoped_to_merchant, scoped_to_mode
from .tables import audit_log, transactions

PAGE_SIZE = 50
EXPORT_BATCH = 1000


@dataclass(frozen=True)
class AuditFilter:
    """What the audit log is narrowed to; an empty filter selects everything."""

    actor: str = ""  # any part of the user's e-mail or the API token's name, any case
    action: str = ""  # one action, e.g. refund.create
    date_from: date | None = None
    date_to: date | None = None  # inclusive
    time_zone: str = "UTC"  # the IANA zone whose calendar days date_from and date_to are
    tx_no: str = ""  # entries about this transaction: its own, and its refunds' (originalTxNo)

    def conditions(self) -> list:
        """SQL conditions for the filter (audit_entries adds the caller's merchant and mode)."""
        found = []
        if self.actor.strip():
            found.append(audit_log.c.actor.ilike("%" + escape_like(self.actor.strip()) + "%",
                                                 escape="\\"))
        if self.action:
            found.append(audit_log.c.action == self.action)
        if self.date_from:
            found.append(audit_log.c.at >= start_of_day(self.date_from, self.time_zone))
        if self.date_to:
            found.append(audit_log.c.at < start_of_day(self.date_to + timedelta(days=1), self.time_zone))
        tx_no = self.tx_no.strip().upper()
        if tx_no:
            # A refund's entry names its payment in its detail, as uow.audit wrote it (json.dumps).
            original = json.dumps({"originalTxNo": tx_no})[1:-1]
            found.append(or_(audit_log.c.target == tx_no,
                             audit_log.c.detail.like("%" + escape_like(original) + "%", escape="\\")))
        return found


def _query(caller: Caller, flt: AuditFilter):
    return select(audit_log).where(
        *scoped_to_merchant(audit_log, caller),
        or_(audit_log.c.mode == caller.mode.value, audit_log.c.mode.is_(None)),
        *flt.conditions(),
    )


def audit_entries(conn: Connection, caller: Caller, flt: AuditFilter = AuditFilter(), *,
                  older_than_id: int | None = None, limit: int = PAGE_SIZE) -> list:
    """The merchant's audit log for this mode (and mode-less entries such as user changes),
    newest first, a page at a time by id (keyset)."""
    query = _query(caller, flt)
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


def export_entries(uow_factory, caller: Caller, flt: AuditFilter) -> Iterator:
    """Every entry the filter selects, newest first, read in keyset batches (one short read each)."""
    older_than = None
    while True:
        with uow_factory(write=False) as uow:
            batch = audit_entries(uow.conn, caller, flt, older_than_id=older_than, limit=EXPORT_BATCH)
        yield from batch
        if len(batch) < EXPORT_BATCH:
            return
        older_than = batch[-1].id


def actions_used(conn: Connection, caller: Caller) -> list[str]:
    """The actions the merchant's audit log holds, for the action filter's choices."""
    query = select(audit_log.c.action).where(*scoped_to_merchant(audit_log, caller)).distinct()
    return sorted(conn.execute(query).scalars())
