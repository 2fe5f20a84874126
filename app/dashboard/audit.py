"""The audit log: every money action and credential change, with who, what, how much, when, where from."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from flask import render_template, request
from flask_login import login_required

from app.auth.users import current_caller
from app.payments.model import TX_NO_PREFIX
from app.store.audit import PAGE_SIZE, audit_entries
from app.util import whole_number
from app.web import deps

from . import dashboard
from .formatting import minor_money

# Targets that are transaction numbers link to the transaction's page.
_TX_NO_STARTS = tuple(f"{prefix}-" for prefix in TX_NO_PREFIX.values())


@dataclass(frozen=True)
class AuditRow:
    """One entry as the audit table shows it."""

    id: int
    at: datetime
    actor: str
    action: str
    target: str
    target_is_transaction: bool
    amount: str
    ip: str
    details: list[tuple[str, str]]


@dashboard.get("/audit")
@login_required
def audit():
    """Newest first, a page at a time by id (keyset)."""
    older_than = whole_number(request.args.get("before", ""), 18)
    with deps().uow(write=False) as uow:
        entries = audit_entries(uow.conn, current_caller(), older_than_id=older_than,
                                limit=PAGE_SIZE + 1)
    more = len(entries) > PAGE_SIZE
    rows = [_row(entry) for entry in entries[:PAGE_SIZE]]
    return render_template("dashboard/audit.html", rows=rows,
                           older=rows[-1].id if more else None, paged=older_than is not None)


def _row(entry) -> AuditRow:
    target = entry.target or ""
    return AuditRow(id=entry.id, at=entry.at, actor=entry.actor, action=entry.action, target=target,
                    target_is_transaction=target.startswith(_TX_NO_STARTS),
                    amount=minor_money(entry.amount_minor, entry.currency), ip=entry.ip or "",
                    details=_detail(entry))


def _detail(entry) -> list[tuple[str, str]]:
    if not entry.detail:
        return []
    try:
        detail = json.loads(entry.detail)
    except ValueError:
        return [("detail", entry.detail)]
    if not isinstance(detail, dict):
        return [("detail", str(detail))]
    return [(str(k), "" if v is None else str(v)) for k, v in detail.items()]
