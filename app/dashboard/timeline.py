"""One timeline per payment: its status changes, its refunds and their moves, the webhooks to every
destination with their attempts, notes, approvals, provider events and disputes, newest first,
each with when, what happened, who or what did it, and links."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from flask import url_for
from flask_login import current_user

from app.payments.approvals import ApprovalRequest, ApprovalState
from app.payments.model import Caller, Kind, Transaction
from app.store import timeline as store

from .formatting import code_words, money, money_of_minor

# Of entries at the same moment, which happened first (a status change, then the webhook it made).
_ORDER = {"status": 0, "refund": 0, "approval": 1, "note": 2, "provider": 3, "dispute": 4, "webhook": 5}
LABELS = {"status": "Status", "refund": "Refund", "approval": "Approval", "note": "Note",
          "provider": "Provider", "dispute": "Dispute", "webhook": "Webhook"}
WEBHOOK_STATES = {"delivered": "Delivered", "pending": "Waiting to be delivered", "failed": "Failed"}
APPROVAL_DECISIONS = {ApprovalState.APPROVED: "approved", ApprovalState.REJECTED: "rejected",
                      ApprovalState.EXPIRED: "expired unanswered",
                      ApprovalState.FAILED: "approved, but the refund could not be made"}


@dataclass(frozen=True)
class Attempt:
    """One delivery attempt of a webhook, as the timeline shows it."""

    at: datetime
    number: int
    http_status: int | None
    duration_ms: int | None
    error: str | None
    manual: bool


@dataclass(frozen=True)
class Entry:
    """One thing that happened: when, what (a sentence), who or what did it, and where to read on."""

    at: datetime
    kind: str  # a key of LABELS
    what: str
    who: str
    links: tuple[tuple[str, str], ...] = ()
    from_status: str | None = None
    to_status: str | None = None
    body: str | None = None  # a note's text
    attempts: tuple[Attempt, ...] = field(default=())

    @property
    def label(self) -> str:
        """The kind in a word, for the entry's tag."""
        return LABELS[self.kind]

    @property
    def key(self) -> tuple:
        """The entry's place, oldest first."""
        return (self.at, _ORDER[self.kind])


def who_of(source: str) -> str:
    """A history source in words: "user:ada@example.com" is the user; api, worker, ... stay."""
    if source.startswith("user:"):
        return source.removeprefix("user:")
    return {"api": "API", "checkout": "Hosted checkout", "worker": "Paydesk worker",
            "sandbox": "Sandbox test helper"}.get(source, source)


def build_timeline(conn, caller: Caller, tx: Transaction, refunds: list[Transaction],
                   approvals: list[ApprovalRequest], notes: list) -> list[Entry]:
    """The transaction's timeline, newest first, in one query per kind of record (refunds
    included: their moves, webhooks and provider events come with the payment's)."""
    by_id = {tx.id: tx, **{r.id: r for r in refunds}}
    entries: list[Entry] = []
    for change in store.status_changes_of(conn, caller, by_id):
        entries.append(_status_entry(tx, by_id[change.transaction_id], change))
    events, attempts = store.webhooks_of(conn, caller, by_id)
    entries += [_webhook_entry(event, attempts[event.id]) for event in events]
    entries += [_provider_entry(event) for event in
                store.provider_events_of(conn, caller, [t.tx_no for t in by_id.values()])]
    if tx.kind is Kind.PAYMENT:
        entries += [_dispute_entry(move) for move in store.dispute_moves_of(conn, caller, tx.id)]
    for approval in approvals:
        entries += _approval_entries(approval)
    entries += [Entry(note.created_at, "note", "Note added", note.author, body=note.body) for note in notes]
    return sorted(entries, key=lambda entry: entry.key, reverse=True)


def _tx_link(tx_no: str) -> tuple[str, str]:
    return (tx_no, url_for("dashboard.transaction", tx_no=tx_no))


def _status_entry(payment: Transaction, moved: Transaction, change) -> Entry:
    note = f" ({change.note})" if change.note else ""
    if moved.id == payment.id:
        what = (f"{payment.kind.value.title()} created" if change.from_status is None
                else "Status changed") + note
        return Entry(change.at, "status", what, who_of(change.source),
                     from_status=change.from_status, to_status=change.to_status)
    amount = money(moved.amount, moved.currency)
    what = (f"Refund {moved.tx_no} of {amount} issued" if change.from_status is None
            else f"Refund {moved.tx_no} of {amount}") + note
    if change.from_status is None and moved.udf1:
        what += f": {moved.udf1}"
    return Entry(change.at, "refund", what, who_of(change.source), (_tx_link(moved.tx_no),),
                 from_status=change.from_status, to_status=change.to_status)


def _webhook_entry(event, attempts: list) -> Entry:
    count = event.attempts
    tried = f" after {count} {'attempt' if count == 1 else 'attempts'}" if count else ""
    what = f"{event.event_type} to {event.url}: {WEBHOOK_STATES.get(event.state, event.state)}{tried}"
    link = ("Delivery and resend", url_for("dashboard.transaction", tx_no=event.tx_no,
                                           _anchor=f"delivery-{event.webhook_id}"))
    return Entry(event.created_at, "webhook", what, "Paydesk", (link,), attempts=tuple(
        Attempt(a.started_at, a.attempt_no, a.http_status, a.duration_ms, a.error, bool(a.manual))
        for a in reversed(attempts)))


def _provider_entry(event) -> Entry:
    what = f"{event.event_type or 'Event'} about {event.tx_no}: {event.result}"
    if event.detail:
        what += f" ({event.detail})"
    if not event.signature_valid:
        what += ", signature not valid"
    return Entry(event.received_at, "provider", what, event.provider.title(),
                 (("Provider events", url_for("dashboard.provider_events")),))


def _dispute_entry(move) -> Entry:
    what = f"Dispute {move.dispute_no} of {money_of_minor(move.amount_minor, move.currency)}"
    if move.from_status is None:
        what += " opened" + (f": {code_words(move.reason)}" if move.reason else "")
    if move.note:
        what += f" ({move.note})"
    links = ((move.dispute_no, url_for("dashboard.dispute", dispute_no=move.dispute_no)),) \
        if current_user.can("answer_disputes") else ()
    return Entry(move.at, "dispute", what, who_of(move.source), links,
                 from_status=move.from_status, to_status=move.to_status)


def _approval_entries(approval: ApprovalRequest) -> list[Entry]:
    amount = money(approval.amount, approval.currency)
    links = (("Approvals", url_for("dashboard.approvals_list")),) if current_user.can("approve") else ()
    found = [Entry(approval.requested_at, "approval", f"Refund of {amount} asked for, to be approved by a second user",
                   approval.requested_by, links)]
    decision = APPROVAL_DECISIONS.get(approval.state)
    if decision and approval.decided_at:
        result = (_tx_link(approval.result_tx_no),) if approval.result_tx_no else ()
        what = f"Refund of {amount} {decision}" + (f": {approval.note}" if approval.note else "")
        found.append(Entry(approval.decided_at, "approval", what, approval.decided_by or "Paydesk worker",
                           result + links))
    return found
