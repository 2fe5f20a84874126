"""Disputes (chargebacks) as records of their own: statuses, allowed moves, what a dispute does to
its payment and to what is left to refund, the evidence a merchant may send, and domain errors.

The rules, written once (docs/api.md, "Disputes", says the same in words):

- A dispute opens `needs_response` (or `under_review` when the provider says so); its payment
  moves Captured -> Chargeback.
- `needs_response` -> `under_review` (evidence submitted), `won`, `lost` or `accepted` (the merchant
  accepted it); `under_review` -> `needs_response` (the provider asks again), `won` or `lost`.
  `won`, `lost` and `accepted` are final; a provider's word that would leave them is ignored
  (a dispute Paydesk accepted is `lost` at Stripe: it stays `accepted`).
- Won: the money came back; the payment moves Chargeback -> Captured.
- Lost or accepted: the dispute's amount went back to the customer and is no longer
  refundable. Remaining refundable = original - Pending and Captured refunds - the amounts of
  lost and accepted disputes (app.payments.refundable, and the refund guard in SQL). If some
  of the payment is left to refund, it moves Chargeback -> Captured (its rest can be refunded);
  otherwise it stays Chargeback.
- Evidence and acceptance are for a dispute that `needs_response` only, one action at a time;
  neither calls the provider on the request's thread (a worker does: app.payments.dispute_calls).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum

from .formats import iso_utc
from .model import FieldErrors, PaymentError, Status
from .money import quantize


class DisputeStatus(StrEnum):
    """A dispute's status, as the API writes it."""

    NEEDS_RESPONSE = "needs_response"
    UNDER_REVIEW = "under_review"
    WON = "won"
    LOST = "lost"
    ACCEPTED = "accepted"


OPEN_STATUSES = frozenset({DisputeStatus.NEEDS_RESPONSE, DisputeStatus.UNDER_REVIEW})
# The dispute's amount went back to the customer: it is no longer refundable.
LOST_STATUSES = frozenset({DisputeStatus.LOST, DisputeStatus.ACCEPTED})

DISPUTE_MOVES: dict[DisputeStatus, frozenset[DisputeStatus]] = {
    DisputeStatus.NEEDS_RESPONSE: frozenset({DisputeStatus.UNDER_REVIEW, DisputeStatus.WON,
                                             DisputeStatus.LOST, DisputeStatus.ACCEPTED}),
    DisputeStatus.UNDER_REVIEW: frozenset({DisputeStatus.NEEDS_RESPONSE, DisputeStatus.WON,
                                           DisputeStatus.LOST}),
}


def can_move(current: DisputeStatus, target: DisputeStatus) -> bool:
    """Whether a dispute may move from current to target."""
    return target in DISPUTE_MOVES.get(current, frozenset())


class Action(StrEnum):
    """What Paydesk owes the provider for a dispute, made by a worker."""

    SUBMIT_EVIDENCE = "submit_evidence"
    ACCEPT = "accept"

    @property
    def words(self) -> str:
        """What is being sent, as a sentence names it: "evidence", "acceptance"."""
        return "evidence" if self is Action.SUBMIT_EVIDENCE else "acceptance"


# The evidence text fields the API and the dashboard take (camelCase on the wire), with what
# each is for. Each connector maps them onto its provider's own fields.
EVIDENCE_FIELDS: dict[str, str] = {
    "customerName": "The customer's name",
    "customerEmail": "The customer's e-mail address",
    "customerPhone": "The customer's phone number (Paystack requires one)",
    "productDescription": "What was sold, and how it was delivered",
    "serviceDate": "When it was delivered or the service given (YYYY-MM-DD)",
    "shippingAddress": "Where it was delivered",
    "refundPolicy": "The refund policy the customer was shown",
    "uncategorizedText": "Anything else: the payment's story as Paydesk drafts it",
}
MAX_EVIDENCE_TEXT = 5000  # characters per field (Stripe's limit for text evidence is 20,000)


def check_evidence(fields: dict[str, str]) -> None:
    """Refuse evidence a provider cannot take: serviceDate must be a date, YYYY-MM-DD."""
    service_date = fields.get("serviceDate")
    if service_date:
        try:
            date.fromisoformat(service_date)
            well_formed = len(service_date) == 10
        except ValueError:
            well_formed = False
        if not well_formed:
            raise FieldErrors.one("ServiceDate", "ServiceDate must be a date, YYYY-MM-DD")


def new_dispute_no() -> str:
    """A fresh, unguessable dispute number, e.g. DSP-9F2C41D07A3B5E68."""
    return f"DSP-{secrets.token_hex(8).upper()}"


@dataclass(frozen=True)
class DisputeFacts:
    """What a provider says of a dispute (a webhook, or its answer to a worker's question)."""

    provider_dispute_id: str
    status: DisputeStatus | None  # None: a word Paydesk does not act on (an inquiry)
    provider_status: str | None
    amount_minor: int | None = None
    currency: str | None = None
    reason: str | None = None
    due_by: datetime | None = None


@dataclass
class Dispute:
    """A dispute as stored."""

    dispute_no: str
    merchant_id: int
    mode: str
    payment_id: int
    provider: str
    provider_dispute_id: str
    amount: Decimal
    currency: str
    status: DisputeStatus
    created_at: datetime
    updated_at: datetime
    id: int | None = None
    payment_tx_no: str | None = None
    provider_account_id: int | None = None
    reason: str | None = None
    provider_status: str | None = None
    due_by: datetime | None = None
    evidence: dict[str, str] = field(default_factory=dict)
    evidence_submitted_at: datetime | None = None
    evidence_submitted_by: str | None = None
    action: Action | None = None
    action_by: str | None = None
    action_due_at: datetime | None = None
    action_attempts: int = 0
    action_error: str | None = None

    @property
    def is_open(self) -> bool:
        """Still to be decided (needs_response or under_review)."""
        return self.status in OPEN_STATUSES


class DisputeNotFound(PaymentError):
    """No dispute with this id for this merchant and mode (HTTP 404)."""

    def __init__(self, dispute_no: str):
        super().__init__(f"Dispute {dispute_no} not found")


class DisputeRejected(PaymentError):
    """An action the dispute's state does not allow (HTTP 409 {error})."""


class DisputeCallRefused(PaymentError):
    """The provider refused a dispute's evidence or acceptance; str() says why (its own words)."""


def check_can_act(dispute: Dispute, action: Action) -> None:
    """Refuse evidence or acceptance unless the dispute needs a response and nothing is owed yet."""
    words = "send evidence for" if action is Action.SUBMIT_EVIDENCE else "accept"
    if dispute.status is not DisputeStatus.NEEDS_RESPONSE:
        raise DisputeRejected(f"Cannot {words} dispute {dispute.dispute_no}: its status is {dispute.status}")
    if dispute.action is not None:
        raise DisputeRejected(f"Cannot {words} dispute {dispute.dispute_no}: "
                              f"its {dispute.action.words} is still being sent to the provider")


def check_can_draft(dispute: Dispute) -> None:
    """Refuse a change of the evidence draft once the dispute is past answering."""
    if dispute.status is not DisputeStatus.NEEDS_RESPONSE or dispute.action is not None:
        check_can_act(dispute, Action.SUBMIT_EVIDENCE)


def payment_status_after(payment_status: Status, dispute_status: DisputeStatus,
                         left_to_refund: Decimal) -> Status | None:
    """The status a dispute's new status gives its payment, or None for no move.

    `left_to_refund`: what the payment would still have to refund once the dispute's status is
    taken into account (original - active refunds - lost and accepted disputes)."""
    if dispute_status in OPEN_STATUSES:
        return Status.CHARGEBACK if payment_status is Status.CAPTURED else None
    if payment_status is not Status.CHARGEBACK:
        return None
    if dispute_status is DisputeStatus.WON or left_to_refund > 0:
        return Status.CAPTURED
    return None


def webhook_payload(dispute: Dispute) -> dict:
    """The merchant webhook's body for a dispute's change: the transaction webhook's fields
    (txNo is the dispute's number, originalTxNo its payment's), transactionType Dispute, and the
    dispute's reason and deadline."""
    return {
        "txNo": dispute.dispute_no,
        "status": dispute.status.value,
        "amount": quantize(dispute.amount, dispute.currency),
        "currency": dispute.currency,
        "transactionType": "Dispute",
        "originalTxNo": dispute.payment_tx_no,
        "providerTransactionId": dispute.provider_dispute_id,
        "providerStatus": dispute.provider_status,
        "providerMessage": dispute.reason,
        "dueBy": iso_utc(dispute.due_by),
        "evidenceSubmittedAt": iso_utc(dispute.evidence_submitted_at),
        "createdAt": iso_utc(dispute.created_at),
    }
