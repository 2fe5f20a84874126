"""The audit log: every money action, note and credential change, with who, what, how much, when,
where from; filtered by user, action, days and TxNo in the URL, and exported as CSV."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

from flask import abort, render_template, request, url_for
from flask_login import current_user, login_required

from app.auth.users import current_caller
from app.payments.formats import code_in_words, storable_text
from app.payments.model import TX_NO_PREFIX, Mode
from app.payments.money import format_amount, from_minor, is_currency
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
from .formatting import amount_text, display, minor_money
from .transactions import read_day_range

AUDIT_FILTER_ARGS = ("user", "action", "from", "to", "tx_no")
CSV_COLUMNS = ("When (UTC)", "Who", "Action", "Target", "Amount", "Currency", "From (IP)", "Details")

# Targets that are transaction numbers (or the sandbox's test transactions) link to the transaction's page.
_TX_NO_STARTS = tuple(f"{prefix}-" for prefix in TX_NO_PREFIX.values())
SANDBOX_RESET = "sandbox.reset"
REMOVED_BY_RESET = "removed by sandbox reset"
RESET_SINCE = "reset to its starting state since"


# Every action code the code base writes (uow.audit), in words; test_audit_words checks that
# each code written in app/ has its words here.
ACTION_WORDS = {
    "refund.create": "Refund issued",
    "payout.create": "Payout created",
    "payment.cancel": "Payment cancelled",
    "payment.cancel.requested": "Cancel asked of the provider",
    "note.add": "Note added",
    "webhook.resend": "Webhook resent",
    "approval.request": "Approval asked for",
    "approval.approve": "Request approved",
    "approval.reject": "Request rejected",
    "approval.expire": "Request expired unanswered",
    "approval.fail": "Approved request could not be made",
    "approval.threshold": "Approval threshold changed",
    "user.limits": "User's limits changed",
    "sandbox.reset": "Sandbox reset",
    "token.create": "API token created",
    "token.revoke": "API token revoked",
    "webhook_secret.rotate": "Webhook secret rotated",
    "user.create": "User added",
    "user.role": "User's role changed",
    "user.activate": "User reactivated",
    "user.deactivate": "User deactivated",
    "user.password_change": "Password changed",
    "user.password_set": "Password chosen through a link",
    "user.reset_link": "Password reset link made",
    "user.invite_link": "Invitation link made",
    "user.two_factor_enable": "Two-factor sign-in turned on",
    "user.two_factor_reset": "Two-factor sign-in reset",
    "user.recovery_code_use": "Signed in with a recovery code",
    "user.session_end": "Session ended",
    "merchant.two_factor_required": "Two-factor sign-in required of everyone",
    "merchant.two_factor_optional": "Two-factor sign-in made optional",
    "provider.connect": "Provider account connected",
    "provider.update": "Provider account updated",
    "provider.disconnect": "Provider account disconnected",
    "provider.test": "Provider connection tested",
    "recipient.save": "Recipient saved",
    "recipient.archive": "Recipient deleted",
    "recipient.pay": "Recipient paid",
    "dispute.evidence.draft": "Dispute evidence saved as a draft",
    "dispute.evidence.submit": "Dispute evidence submitted",
    "dispute.evidence.file": "Dispute evidence file added",
    "dispute.accept": "Dispute accepted",
    "batch.create": "Batch uploaded",
    "batch.run": "Batch started",
    "batch.cancel": "Batch cancelled",
    "webhook_endpoint.create": "Webhook endpoint added",
    "webhook_endpoint.update": "Webhook endpoint changed",
    "webhook_endpoint.delete": "Webhook endpoint deleted",
    "webhook_endpoint.rotate_secret": "Webhook endpoint's secret rotated",  # nosec B105 # words, not a secret
    "webhook_endpoint.resend_failed": "Failed webhooks resent to an endpoint",
    "webhook_endpoint.check": "Webhook receiver checked",
    "merchant.time_zone": "Merchant's time zone changed",
    "user.display_change": "Own language and time zone changed",
    "user.notifications": "Own e-mail notifications chosen",
}
# Detail keys in words; others are written with their parts spaced ("sessions_ended": "Sessions ended").
DETAIL_LABELS = {"originalTxNo": "Original TxNo", "refundTxNo": "Refund TxNo", "approvalId": "Approval",
                 "requestedBy": "Requested by", "keyHint": "Key", "baseUrl": "Base URL",
                 "webhookSecret": "Webhook secret", "maxRefund": "Largest refund",
                 "maxPayout": "Largest payout", "through": "Through", "approval": "Needs approval"}
# Detail keys whose value names a transaction, a request awaiting approval, a saved recipient.
_TX_NO_DETAILS = {"originalTxNo", "refundTxNo", "payment"}
_USER_ACTIONS = "user."
_DISPUTE_START = "DSP-"


@dashboard.app_template_global("action_words")
def action_words(action: str) -> str:
    """What the action code means, in words (the code itself for one this version does not know)."""
    return ACTION_WORDS.get(action, action)


def detail_label(key: str) -> str:
    """A detail's key as a label: "originalTxNo" -> "Original TxNo", "sessions_ended" -> "Sessions ended"."""
    return DETAIL_LABELS.get(key) or code_in_words(key)


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
    details: list[tuple[str, str, str | None]]  # label, value, where it links (or None)
    target_url: str | None = None  # a dispute's page, a user's entries

    @property
    def words(self) -> str:
        """The action in words."""
        return action_words(self.action)


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
                           problems=problems, actions=sorted(actions, key=action_words),
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
         "; ".join(f"{k}: {v}" for k, v in _detail(entry, people=False)))
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
                    details=[(detail_label(key), value, _detail_url(key, value))
                             for key, value in _detail(entry) if value.strip()],
                    target_url=_target_url(entry.action, target))


def _target_url(action: str, target: str) -> str | None:
    """Where a target other than a transaction links: a dispute's page (to those who answer
    disputes), a user's own entries."""
    if target.startswith(_DISPUTE_START) and current_user.can("answer_disputes"):
        return url_for("dashboard.dispute", dispute_no=target)
    if action.startswith(_USER_ACTIONS) and "@" in target:
        return url_for("dashboard.audit", user=target)
    return None


def _detail_url(key: str, value: str) -> str | None:
    """Where a detail links: a transaction it names, the approvals list, the saved recipients."""
    if key in _TX_NO_DETAILS and _is_transaction(value):
        return url_for("dashboard.transaction", tx_no=value)
    if key == "approvalId" and current_user.can("approve"):
        return url_for("dashboard.approvals_list")
    if key == "recipient" and current_user.can("create_payout"):
        return url_for("dashboard.recipients_list")
    return None


def _detail(entry, people: bool = True) -> list[tuple[str, str]]:
    """The entry's details as (key, value in words); people=False (the CSV file) writes amounts as
    the API does (27000.50 NGN), not in the reader's locale."""
    if not entry.detail:
        return []
    try:
        detail = json.loads(entry.detail)
    except ValueError:
        return [("detail", entry.detail)]
    if not isinstance(detail, dict):
        return [("detail", str(detail))]
    return [(str(k), _detail_value(v, people)) for k, v in detail.items()]


def _detail_value(value: object, people: bool) -> str:
    """A detail's JSON value in words: yes or no, amounts by currency as amounts ({"NGN":
    "27000.50"} -> 27,000.50 NGN), lists and other objects as their parts; never Python's repr."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if value and all(is_currency(code) and isinstance(amount, str) for code, amount in value.items()):
            return ", ".join(_amount_words(amount, code, people) for code, amount in value.items())
        return ", ".join(f"{detail_label(str(k))}: {_detail_value(v, people)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_detail_value(item, people) for item in value)
    return str(value)


def _amount_words(amount: str, currency: str, people: bool) -> str:
    """An amount the API wrote, with its currency: in the reader's locale for people."""
    if people:
        try:
            return f"{amount_text(Decimal(amount), currency)} {currency}"
        except (InvalidOperation, ValueError):
            pass  # not an amount after all: shown as written
    return f"{amount} {currency}"
