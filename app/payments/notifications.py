"""E-mail notifications: the kinds a user may choose (one table), and what each event says.

An event is recorded in the unit of work that causes it (app.store.unit_of_work `notify`); the
worker hands it to the users who chose its kind, and e-mails them at once or in a daily digest
(app.auth.notifications). A kind added here (and recorded where its event happens) appears on
the Account page with no other change.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from .formats import code_in_words
from .model import Kind, Mode, Transaction
from .money import format_amount

if TYPE_CHECKING:  # approvals and disputes record these events: imported for the annotations only
    from .approvals import ApprovalRequest
    from .disputes import Dispute


class Delivery(StrEnum):
    """When a chosen notification is e-mailed."""

    IMMEDIATE = "immediate"
    DIGEST = "digest"  # bundled once a day (NOTIFICATION_DIGEST_HOUR, UTC)


@dataclass(frozen=True)
class NotificationKind:
    """A kind of notification a user may choose on the Account page."""

    key: str
    label: str
    hint: str
    # The dashboard permission (app.auth.users.PERMISSIONS) needed to receive it; None: every role.
    permission: str | None = None


APPROVAL_WAITING = NotificationKind(
    "approval_waiting", "An approval waits for me",
    "A refund or payout above the threshold that you may approve was requested by someone else.",
    "approve")
MONEY_FAILED = NotificationKind(
    "money_failed", "A refund or payout failed",
    "The provider declined or failed a refund or payout: the customer or recipient is still owed.")
WEBHOOK_FAILING = NotificationKind(
    "webhook_failing", "Webhook delivery keeps failing",
    "A webhook to a callbackUrl has failed all its attempts: the merchant's system missed an update.")
DISPUTE_OPENED = NotificationKind(
    "dispute_opened", "A customer disputed a payment",
    "A chargeback was opened: answer it with evidence, or accept it, before its deadline.",
    "answer_disputes")
DISPUTE_DUE = NotificationKind(
    "dispute_due", "A dispute's deadline is near",
    "A dispute still needs a response and its deadline is less than two days away.",
    "answer_disputes")
KINDS: tuple[NotificationKind, ...] = (APPROVAL_WAITING, MONEY_FAILED, DISPUTE_OPENED, DISPUTE_DUE,
                                       WEBHOOK_FAILING)
KINDS_BY_KEY = {kind.key: kind for kind in KINDS}


@dataclass(frozen=True)
class NotificationEvent:
    """Something to tell the users who chose its kind: the mail's subject and text, and the
    dashboard page it names (a path below the mode's prefix: "approvals", "transactions/T1")."""

    merchant_id: int
    mode: Mode
    kind: NotificationKind
    subject: str
    text: str
    target: str
    not_for: str | None = None  # the user whose own action it is (never told of it)


def _mode_note(mode: Mode) -> str:
    return "[Sandbox] " if mode is Mode.SANDBOX else ""


def _money(amount, currency: str) -> str:
    """An amount as a mail writes it: 70.00 EUR."""
    return f"{format_amount(amount, currency)} {currency}"


def approval_waiting(approval: ApprovalRequest) -> NotificationEvent:
    """A refund or payout request awaits a second user (not its requester)."""
    amount = _money(approval.amount, approval.currency)
    what = (f"a refund of {amount} of payment {approval.original_tx_no}"
            if approval.original_tx_no else f"a payout of {amount}")
    return NotificationEvent(
        approval.merchant_id, approval.mode, APPROVAL_WAITING,
        f"{_mode_note(approval.mode)}Approval waits: {approval.kind.value} of {amount}",
        f"{approval.requested_by} asked for {what}. It waits for another user's approval and "
        f"expires if nobody decides by {approval.expires_at:%Y-%m-%d %H:%M} UTC.",
        "approvals", not_for=approval.requested_by)


def money_failed(tx: Transaction) -> NotificationEvent:
    """A refund or payout moved to Failed or Declined."""
    amount = _money(tx.amount, tx.currency)
    kind = "Refund" if tx.kind is Kind.REFUND else "Payout"
    of = f" of payment {tx.original_tx_no}" if tx.original_tx_no else ""
    reason = f" ({tx.decline_reason})" if tx.decline_reason else ""
    return NotificationEvent(
        tx.merchant_id, tx.mode, MONEY_FAILED,
        f"{_mode_note(tx.mode)}{kind} {tx.status.value.lower()}: {amount}",
        f"{kind} {tx.tx_no}{of} of {amount} is {tx.status.value}{reason}. "
        f"Reference {tx.reference}.",
        f"transactions/{tx.tx_no}")


def dispute_opened(dispute: Dispute) -> NotificationEvent:
    """A provider opened a dispute of a payment: someone must answer it before its deadline."""
    amount = _money(dispute.amount, dispute.currency)
    reason = f" ({code_in_words(dispute.reason)})" if dispute.reason else ""
    deadline = (f"by {dispute.due_by:%Y-%m-%d %H:%M} UTC" if dispute.due_by
                else "before the provider's deadline (none given)")
    return _about_dispute(
        dispute, DISPUTE_OPENED,
        f"Dispute opened: {amount}" + (f", answer by {dispute.due_by:%Y-%m-%d}" if dispute.due_by else ""),
        f"The customer disputed payment {dispute.payment_tx_no} of {amount}{reason}. Answer with "
        f"evidence, or accept it, {deadline}.")


def dispute_due(dispute: Dispute) -> NotificationEvent:
    """A dispute still needs a response close to its deadline (app.payments.dispute_reminders)."""
    amount = _money(dispute.amount, dispute.currency)
    return _about_dispute(
        dispute, DISPUTE_DUE, f"Dispute due {dispute.due_by:%Y-%m-%d}: {amount} unanswered",
        f"Dispute {dispute.dispute_no} of payment {dispute.payment_tx_no} ({amount}) still needs a "
        f"response by {dispute.due_by:%Y-%m-%d %H:%M} UTC. Without one the provider decides for the "
        f"customer: answer with evidence, or accept it.")


def _about_dispute(dispute: Dispute, kind: NotificationKind, subject: str, text: str) -> NotificationEvent:
    """An event naming a dispute's page; its subject kept to one line of a mail's header."""
    mode = Mode(dispute.mode)
    return NotificationEvent(dispute.merchant_id, mode, kind, f"{_mode_note(mode)}{subject}", text,
                             f"disputes/{dispute.dispute_no}")


def webhook_failing(merchant_id: int, mode: Mode, tx_no: str, url: str, attempts: int) -> NotificationEvent:
    """A webhook event to a callbackUrl failed its last attempt."""
    return NotificationEvent(
        merchant_id, mode, WEBHOOK_FAILING,
        f"{_mode_note(mode)}Webhook delivery failed: {tx_no}",
        f"The webhook of {tx_no} to {url} failed all {attempts} attempts. Check the endpoint, "
        f"then resend it from the Webhooks page.",
        f"transactions/{tx_no}")
