"""The audit log: every money action, note and credential change, with who, what, how much, when,
where from; filtered by user, action, days and TxNo in the URL, and exported as CSV."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from flask import abort, render_template, request
from flask_login import login_required

from app.auth.users import current_caller
from app.payments.formats import storable_text
from app.payments.model import TX_NO_PREFIX, Mode
from app.payments.money import format_amount, from_minor
from app.payments.sandbox import FIXTURE_TX_NOS
from app.store.audit import (
    PAGE_SIZE,
    AuditFilter,
    actions_used,
    audit_entries,
    existing_transactions,
    export_entries,
    last_entry_id,
)
from app.util import whole_number
from app.web import deps

from . import dashboard
from .csv_export import csv_download
from .csv_export import utc_cell
from .formatting import display, minor_money
from .transactions import read_day_range

AUDIT_FILTER_ARGS = ("user", "action", "from", "to", "tx_no")
CSV_COLUMNS = ("When (UTC)", "Who", "Action", "Target", "Amount", "Currency", "From (IP)", "Details")

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
    """Newest first, a page at a time by id (keyset), narrowed by the filters in the URL."""
    flt, problems = read_audit_filter(request.args)
    older_than = whole_number(request.args.get("before", ""), 18)
    caller = current_caller()
    with deps().uow(write=False) as uow:
        entries = audit_entries(uow.conn, caller, flt, older_than_id=older_than, limit=PAGE_SIZE + 1)
        actions = actions_used(uow.conn, caller)
        reset_notes = _sandbox_reset_notes(uow.conn, caller, entries[:PAGE_SIZE])
    more = len(entries) > PAGE_SIZE
    rows = [_row(entry, reset_notes.get(entry.id)) for entry in entries[:PAGE_SIZE]]
    if flt.action and flt.action not in actions:
        actions = sorted([*actions, flt.action])
    return render_template("dashboard/audit.html", rows=rows, args=audit_filter_args(request.args),
                           problems=problems, actions=actions,
                           older=rows[-1].id if more else None, paged=older_than is not None)


@dashboard.get("/audit/export.csv")
@login_required
def export_audit():
    """Every entry the filters select, as CSV, streamed in batches (no size limit)."""
    flt, problems = read_audit_filter(request.args)
    if problems:
        abort(400)
    caller = current_caller()
    rows = (
        (utc_cell(entry.at), entry.actor, entry.action, entry.target or "",
         _minor_amount(entry.amount_minor, entry.currency), entry.currency or "", entry.ip or "",
         "; ".join(f"{k}: {v}" for k, v in _detail(entry)))
        for entry in export_entries(deps().uow, caller, flt)
    )
    filename = f"paydesk-{caller.mode.value}-audit-{deps().clock():%Y%m%d-%H%M%S}.csv"
    return csv_download(filename, CSV_COLUMNS, rows)


def read_audit_filter(args) -> tuple[AuditFilter, list[str]]:
    """The audit filter from the query string, and what could not be understood in it."""
    problems = []
    date_from, date_to = read_day_range(args, problems)
    texts = {}
    for name, label, limit in (("user", "User", 254), ("action", "Action", 50), ("tx_no", "TxNo", 100)):
        text = args.get(name, "").strip()[:limit]
        if not storable_text(text):
            problems.append(f"{label} must not contain control characters")
            text = ""
        texts[name] = text
    return AuditFilter(actor=texts["user"], action=texts["action"], date_from=date_from,
                       date_to=date_to, tx_no=texts["tx_no"], time_zone=display().zone), problems


def audit_filter_args(args) -> dict:
    """The filter's query-string values that are set, for links that keep the filter."""
    return {name: args[name] for name in AUDIT_FILTER_ARGS if args.get(name)}


def _minor_amount(amount_minor: int | None, currency: str | None) -> str:
    if amount_minor is None or not currency:
        return ""
    return format_amount(from_minor(amount_minor, currency), currency)


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
