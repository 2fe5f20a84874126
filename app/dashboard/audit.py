"""The audit log: every money action and credential change, with who, what, how much, when, where from."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from flask import render_template, request
from flask_login import login_required

from app.auth.users import current_caller
from app.payments.model import TX_NO_PREFIX, Mode
from app.payments.sandbox import FIXTURE_TX_NOS
from app.store.audit import PAGE_SIZE, audit_entries, existing_transactions, last_entry_id
from app.util import whole_number
from app.web import deps

from . import dashboard
from .formatting import minor_money

# Targets that are transaction numbers (or the sandbox's test transactions) link to the transaction's page.
_TX_NO_STARTS = tuple(f"{prefix}-" for prefix in TX_NO_PREFIX.values())
SANDBOX_RESET = "sandbox.reset"
REMOVED_BY_RESET = "removed by sandbox reset"
RESET_SINCE = "reset to its starting state since"


@dataclass(frozen=True)
class AuditRow:
    """One entry as the audit table shows it."""

    id: int
    at: datetime
    actor: str
    action: str
    target: str
    target_link: bool  # a transaction number whose transaction is there to open
    target_note: str | None  # what a sandbox reset did to it since
    amount: str
    ip: str
    details: list[tuple[str, str]]


@dashboard.get("/audit")
@login_required
def audit():
    """Newest first, a page at a time by id (keyset)."""
    older_than = whole_number(request.args.get("before", ""), 18)
    caller = current_caller()
    with deps().uow(write=False) as uow:
        entries = audit_entries(uow.conn, caller, older_than_id=older_than, limit=PAGE_SIZE + 1)
        reset_notes = _sandbox_reset_notes(uow.conn, caller, entries[:PAGE_SIZE])
    more = len(entries) > PAGE_SIZE
    rows = [_row(entry, reset_notes.get(entry.id)) for entry in entries[:PAGE_SIZE]]
    return render_template("dashboard/audit.html", rows=rows,
                           older=rows[-1].id if more else None, paged=older_than is not None)


def _is_transaction(target: str | None) -> bool:
    return (target or "").startswith(_TX_NO_STARTS) or target in FIXTURE_TX_NOS


def _sandbox_reset_notes(conn, caller, entries) -> dict[int, str]:
    """Entry id -> what a sandbox reset did to the transaction the entry names. A reset is the
    only thing that removes transactions: it deletes the test transactions (SBX-...) with their
    refunds and installs them afresh, so a missing one was removed by it, and a test transaction
    named before the latest reset is not the one its page shows now."""
    if caller.mode is not Mode.SANDBOX:
        return {}
    named = {entry.id: entry.target for entry in entries if _is_transaction(entry.target)}
    existing = existing_transactions(conn, caller, set(named.values()))
    last_reset = last_entry_id(conn, caller, SANDBOX_RESET) or 0
    notes = {}
    for entry_id, tx_no in named.items():
        if tx_no not in existing:
            notes[entry_id] = REMOVED_BY_RESET
        elif tx_no in FIXTURE_TX_NOS and entry_id < last_reset:
            notes[entry_id] = RESET_SINCE
    return notes


def _row(entry, reset_note: str | None) -> AuditRow:
    target = entry.target or ""
    return AuditRow(id=entry.id, at=entry.at, actor=entry.actor, action=entry.action, target=target,
                    target_link=_is_transaction(target) and reset_note != REMOVED_BY_RESET,
                    target_note=reset_note,
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
