"""Disputes as Paydesk keeps them: recording what a provider says of one (webhooks, the worker's
answers, the sandbox), and the merchant's answers (evidence, acceptance) committed for a worker
to take to the provider (app.payments.dispute_calls).

Every change of a dispute is one unit of work: the dispute's row and history, its payment's move
(Chargeback when it opens, Captured again when won or when a loss leaves some of it to refund,
app.payments.disputes.payment_status_after), what a loss takes from the refundable amount, and
the merchant webhooks of both, in the same outbox and under the same signing as every other.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from . import notifications
from .deps import Deps
from .dispute_files import DisputeFile, check_file, safe_filename
from .disputes import (
    LOST_STATUSES,
    OPEN_STATUSES,
    Action,
    Dispute,
    DisputeFacts,
    DisputeNotFound,
    DisputeRejected,
    DisputeStatus,
    EVIDENCE_FIELDS,
    can_move,
    check_can_act,
    check_evidence,
    check_can_draft,
    new_dispute_no,
    payment_status_after,
    webhook_payload,
)
from .events import new_webhook_id
from .model import SIMULATOR, Caller, Transaction
from .money import format_amount, from_minor, to_minor
from .refundable import RefundArithmetic

# A Paystack acceptance needs a refund receipt uploaded with it (PUT /dispute/{id}/resolve
# requires uploaded_filename): without a receipt file it is refused with this message.
PAYSTACK_ACCEPT_NEEDS_UPLOAD = ("Paystack accepts a dispute only with a refund receipt: add a file of kind "
                                "receipt (POST /disputes/{id}/files) first")
# How long a sandbox dispute gives the merchant to answer.
SANDBOX_RESPONSE_WINDOW = timedelta(days=7)
# Paystack's evidence endpoint requires these (DisputeEvidence in its OpenAPI document).
PAYSTACK_REQUIRED_EVIDENCE = ("customerName", "customerEmail", "customerPhone", "productDescription")


@dataclass(frozen=True)
class Recorded:
    """What came of a provider's word on a dispute: a word for the provider event log, a detail."""

    result: str  # applied | no change
    detail: str
    dispute: Dispute | None = None


def record_from_provider(deps: Deps, payment: Transaction, provider: str, account_id: int | None,
                         facts: DisputeFacts, *, source: str) -> Recorded:
    """Take a provider's word on a dispute of `payment` (read in its merchant's scope): open the
    record on first news, move it when its status may move, keep its details up to date. A word
    that changes nothing writes nothing (a replayed event)."""
    if facts.status is None:
        return Recorded("no change", f"Dispute {facts.provider_dispute_id} is an inquiry "
                                     f"({facts.provider_status}), not a chargeback")
    now = deps.clock()
    with deps.uow() as uow:
        payment, _ = uow.transactions.lock_with_original(payment.id)
        dispute = uow.disputes.by_provider_id(payment.merchant_id, payment.mode.value, provider,
                                              facts.provider_dispute_id, for_update=True)
        if dispute is None:
            caller = Caller(payment.merchant_id, payment.mode, source)
            draft = draft_evidence(payment, uow.transactions.refunds_of(caller, payment.id),
                                   uow.disputes.delivered_webhooks(payment.id))
            dispute = uow.disputes.insert_dispute(_new_dispute(payment, provider, account_id, facts, draft, now))
            _moved(uow, dispute, None, payment, source, now)
            if dispute.is_open:
                uow.notify(notifications.dispute_opened(dispute))
            uow.commit()
            return Recorded("applied", f"Dispute {dispute.dispute_no} opened: {dispute.status}", dispute)
        previous = dispute.status
        details_changed = _take_details(dispute, facts)
        if facts.status is not previous and can_move(previous, facts.status):
            dispute.status = facts.status
            dispute.updated_at = now
            if dispute.status is not DisputeStatus.NEEDS_RESPONSE:
                dispute.action = None  # nothing is owed to a provider that has moved on
            uow.disputes.save(dispute)
            _moved(uow, dispute, previous, payment, source, now)
            uow.commit()
            return Recorded("applied", f"Dispute {dispute.dispute_no} {previous} -> {dispute.status}", dispute)
        if details_changed:
            dispute.updated_at = now
            uow.disputes.save(dispute)
            uow.commit()
            return Recorded("applied", f"Dispute {dispute.dispute_no} details updated", dispute)
    return Recorded("no change", f"Dispute {dispute.dispute_no} stays {dispute.status} "
                                 f"(event says {facts.status})", dispute)


def _new_dispute(payment: Transaction, provider: str, account_id: int | None, facts: DisputeFacts,
                 draft: dict[str, str], now: datetime) -> Dispute:
    currency = (facts.currency or payment.currency).upper()
    amount = from_minor(facts.amount_minor, currency) if facts.amount_minor is not None else payment.amount
    return Dispute(
        dispute_no=new_dispute_no(), merchant_id=payment.merchant_id, mode=payment.mode.value,
        payment_id=payment.id, payment_tx_no=payment.tx_no, provider=provider,
        provider_account_id=account_id, provider_dispute_id=facts.provider_dispute_id,
        amount=amount, currency=currency, status=facts.status, reason=facts.reason,
        provider_status=facts.provider_status, due_by=facts.due_by,
        evidence=draft, created_at=now, updated_at=now)


def _take_details(dispute: Dispute, facts: DisputeFacts) -> bool:
    """Copy the provider's newer details (deadline, reason, its status word); whether any changed."""
    before = (dispute.due_by, dispute.reason, dispute.provider_status)
    dispute.due_by = facts.due_by or dispute.due_by
    dispute.reason = facts.reason or dispute.reason
    dispute.provider_status = facts.provider_status or dispute.provider_status
    return before != (dispute.due_by, dispute.reason, dispute.provider_status)


def _moved(uow, dispute: Dispute, previous: DisputeStatus | None, payment: Transaction, source: str,
           now: datetime, note: str | None = None) -> None:
    """The writes of a dispute's move to its current status (`payment` locked by the unit): its
    history, what a loss takes from the refundable amount, its payment's move, both webhooks."""
    uow.disputes.add_history(dispute, previous, source, note, now)
    if dispute.status in LOST_STATUSES:
        uow.disputes.take_from_payment(payment.id, to_minor(dispute.amount, dispute.currency))
        payment.dispute_lost += dispute.amount
    left = RefundArithmetic.of_payment(payment, None).remaining
    target = payment_status_after(payment.status, dispute.status, left)
    if target is not None:
        from_status = payment.status
        payment.status = target
        payment.provider_status = dispute.provider_status
        payment.provider_message = _payment_message(dispute)
        payment.updated_at = now
        uow.transactions.save_state(payment)
        uow.record_history(payment, from_status, source, payment.provider_message)
        uow.enqueue_webhook(payment, new_webhook_id())
    uow.disputes.enqueue_webhook(dispute, payment.callback_url, new_webhook_id(), webhook_payload(dispute), now)


def _payment_message(dispute: Dispute) -> str:
    """What a payment's ProviderMessage says after its dispute moved it."""
    if dispute.status in OPEN_STATUSES:
        return f"Dispute {dispute.provider_dispute_id} opened: {dispute.reason or 'no reason given'}"
    return f"Dispute {dispute.provider_dispute_id} {dispute.status}"


def draft_evidence(payment: Transaction, refunds: list[Transaction] = (),
                   delivered: list[tuple[str, datetime]] = ()) -> dict[str, str]:
    """The evidence Paydesk drafts from what it knows when the dispute opens: the customer, the
    amount and dates, the refunds made, the merchant's webhooks it delivered (which show the
    merchant's systems knew of the payment and acted on it). The merchant edits it before sending."""
    billing = payment.billing or {}
    story = [f"Payment {payment.tx_no} (reference {payment.reference}) of "
             f"{format_amount(payment.amount, payment.currency)} {payment.currency}, "
             f"created {payment.created_at:%Y-%m-%d %H:%M} UTC."]
    if payment.statement_descriptor:
        story.append(f"Statement descriptor: {payment.statement_descriptor}.")
    for refund in refunds:
        story.append(f"Refund {refund.tx_no} of {format_amount(refund.amount, refund.currency)} "
                     f"{refund.currency}: {refund.status}, {refund.created_at:%Y-%m-%d}.")
    for event, at in delivered:
        story.append(f"Webhook {event} delivered to the merchant {at:%Y-%m-%d %H:%M} UTC.")
    draft = {"customerName": payment.customer_name or "", "customerEmail": payment.customer_email or "",
             "customerPhone": billing.get("phone") or "", "uncategorizedText": " ".join(story)}
    return {name: value for name, value in draft.items() if value}


def get(deps: Deps, caller: Caller, dispute_no: str) -> Dispute:
    """The caller's dispute; DisputeNotFound for one of another merchant or mode, as for an unknown one."""
    with deps.uow(write=False) as uow:
        dispute = uow.disputes.by_number(caller, dispute_no)
    if dispute is None:
        raise DisputeNotFound(dispute_no)
    return dispute


def save_evidence(deps: Deps, caller: Caller, dispute_no: str, fields: dict[str, str], *,
                  submit: bool) -> Dispute:
    """Keep the evidence fields given (over the draft; an empty one removes it) and, with
    `submit`, owe the provider their submission: a worker sends them. The simulator answers in
    process: a sandbox dispute is under review at once."""
    unknown = sorted(set(fields) - set(EVIDENCE_FIELDS))
    if unknown:  # the API checks the body first; the dashboard's form has only these
        raise ValueError(f"unknown evidence fields {unknown}")
    check_evidence(fields)
    now = deps.clock()
    with deps.uow() as uow:
        dispute = _locked(uow, caller, dispute_no)
        if submit:
            check_can_act(dispute, Action.SUBMIT_EVIDENCE)
        else:
            check_can_draft(dispute)
        evidence = {**dispute.evidence, **fields}
        dispute.evidence = {name: value for name, value in evidence.items() if value}
        if submit and dispute.provider == "paystack":
            missing = [name for name in PAYSTACK_REQUIRED_EVIDENCE if not dispute.evidence.get(name)]
            if missing:
                raise DisputeRejected(f"Paystack needs {', '.join(missing)} in the evidence")
        dispute.updated_at = now
        uow.audit(caller, "dispute.evidence.submit" if submit else "dispute.evidence.draft",
                  dispute.dispute_no, dispute.amount, dispute.currency,
                  {"fields": sorted(fields), "payment": dispute.payment_tx_no})
        if submit:
            _owe(dispute, Action.SUBMIT_EVIDENCE, caller.actor, now)
        _finish_or_save(uow, dispute, now)
        uow.commit()
    return dispute


def add_file(deps: Deps, caller: Caller, dispute_no: str, kind: str, filename: str | None,
             data: bytes) -> DisputeFile:
    """Keep a file for the dispute's evidence (in place of its file of the same kind) while the
    evidence is a draft; a worker uploads it to the provider when the evidence is submitted.
    FieldErrors for a file Paydesk does not take (nothing is kept then)."""
    content_type = check_file(kind, data)
    now = deps.clock()
    with deps.uow() as uow:
        dispute = _locked(uow, caller, dispute_no)
        check_can_draft(dispute)
        kept = uow.disputes.replace_file(dispute.id, kind, safe_filename(filename), content_type, data,
                                         hashlib.sha256(data).hexdigest(), caller.actor, now)
        uow.audit(caller, "dispute.evidence.file", dispute.dispute_no, dispute.amount, dispute.currency,
                  {"kind": kind, "size": kept.size, "sha256": kept.sha256, "payment": dispute.payment_tx_no})
        uow.commit()
    return kept


def files(deps: Deps, dispute: Dispute) -> list[DisputeFile]:
    """The dispute's evidence files (without their bytes)."""
    with deps.uow(write=False) as uow:
        return uow.disputes.files(dispute.id)


def accept(deps: Deps, caller: Caller, dispute_no: str) -> Dispute:
    """Owe the provider the dispute's acceptance (a worker sends it): the merchant gives up its
    amount. The simulator answers in process: a sandbox dispute is accepted at once."""
    now = deps.clock()
    with deps.uow() as uow:
        dispute = _locked(uow, caller, dispute_no)
        check_can_act(dispute, Action.ACCEPT)
        if dispute.provider == "paystack" and not any(f.kind == "receipt" for f in uow.disputes.files(dispute.id)):
            raise DisputeRejected(PAYSTACK_ACCEPT_NEEDS_UPLOAD)
        uow.audit(caller, "dispute.accept", dispute.dispute_no, dispute.amount, dispute.currency,
                  {"payment": dispute.payment_tx_no})
        _owe(dispute, Action.ACCEPT, caller.actor, now)
        _finish_or_save(uow, dispute, now)
        uow.commit()
    return dispute


def _locked(uow, caller: Caller, dispute_no: str) -> Dispute:
    dispute = uow.disputes.by_number(caller, dispute_no, for_update=True)
    if dispute is None:
        raise DisputeNotFound(dispute_no)
    return dispute


def _owe(dispute: Dispute, action: Action, actor: str, now: datetime) -> None:
    dispute.action, dispute.action_by, dispute.action_due_at = action, actor, now
    dispute.action_attempts, dispute.action_error = 0, None


def _finish_or_save(uow, dispute: Dispute, now: datetime) -> None:
    """Save the dispute; a simulator's dispute has its action answered at once, in this unit."""
    if dispute.action is None or dispute.provider != SIMULATOR:
        uow.disputes.save(dispute)
        return
    answer = DisputeStatus.UNDER_REVIEW if dispute.action is Action.SUBMIT_EVIDENCE else DisputeStatus.ACCEPTED
    record_action_done(uow, dispute, answer, answer.value, source="sandbox", now=now)


def record_action_done(uow, dispute: Dispute, status: DisputeStatus | None, provider_status: str | None,
                       *, source: str, now: datetime) -> None:
    """The provider took the dispute's action: clear it, note submitted evidence, and move the
    dispute to the status the answer gives (an acceptance: accepted), with what goes with it."""
    action = dispute.action
    dispute.action, dispute.action_due_at, dispute.action_error = None, None, None
    if action is Action.SUBMIT_EVIDENCE:
        dispute.evidence_submitted_at, dispute.evidence_submitted_by = now, dispute.action_by
    if action is Action.ACCEPT:
        status = DisputeStatus.ACCEPTED
    dispute.provider_status = provider_status or dispute.provider_status
    dispute.updated_at = now
    previous = dispute.status
    moved = status is not None and status is not previous and can_move(previous, status)
    if moved:
        dispute.status = status
    uow.disputes.save(dispute)
    note = "Evidence submitted" if action is Action.SUBMIT_EVIDENCE else "Accepted by the merchant"
    if moved:
        payment, _ = uow.transactions.lock_with_original(dispute.payment_id)
        _moved(uow, dispute, previous, payment, source, now, note)
    else:
        uow.disputes.add_history(dispute, previous, source, note, now)


def sandbox_outcome(deps: Deps, caller: Caller, dispute_no: str, outcome: DisputeStatus) -> Dispute:
    """Close a sandbox dispute as the card network would (won or lost), with its webhooks."""
    now = deps.clock()
    with deps.uow() as uow:
        dispute = _locked(uow, caller, dispute_no)
        if not can_move(dispute.status, outcome):
            raise DisputeRejected(f"Dispute {dispute.dispute_no} cannot move from {dispute.status} to {outcome}")
        payment, _ = uow.transactions.lock_with_original(dispute.payment_id)
        previous = dispute.status
        dispute.status, dispute.provider_status, dispute.updated_at = outcome, outcome.value, now
        dispute.action = None
        uow.disputes.save(dispute)
        _moved(uow, dispute, previous, payment, "sandbox", now)
        uow.commit()
    return dispute


def open_in_sandbox(deps: Deps, payment: Transaction) -> Recorded:
    """The sandbox helper's Chargeback: the simulator opens a dispute of the whole payment, due
    in 7 days (its move to Chargeback goes with it)."""
    facts = DisputeFacts(provider_dispute_id=f"sim_{payment.tx_no}", status=DisputeStatus.NEEDS_RESPONSE,
                         provider_status=DisputeStatus.NEEDS_RESPONSE.value,
                         amount_minor=to_minor(payment.amount, payment.currency), currency=payment.currency,
                         reason="fraudulent", due_by=deps.clock() + SANDBOX_RESPONSE_WINDOW)
    return record_from_provider(deps, payment, SIMULATOR, None, facts, source="sandbox")
