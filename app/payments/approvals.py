"""Four eyes: dashboard refunds and payouts above the merchant's threshold wait for a second user.

The rules (who may decide, what needs approval, a user's limits) are plain functions here; the
operations take the Deps (app.payments.deps) like the others of app.payments, and call
app.payments.refunds and app.payments.create to make the refund or payout once approved.

A refund request holds its amount on the payment's row (`refund_held`) from the moment it is
recorded: the refund reservation counts it, so requests and refunds together never pass the
payment's amount. Approval moves the hold into the reserved total and writes the Pending
refund in the same database transaction as the request's move to approved; rejection and
expiry give the hold back in the one that moves it to rejected or expired. The API does not
go through here: its tokens are machine credentials, with no second person to ask.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from .model import Caller, Mode, PaymentError, Transaction, TransactionNotFound
from .money import format_amount, to_minor
from .schemas import CreateTransactionRequest, RefundRequest, parse_create, parse_refund
from . import create, notifications, refunds
from .deps import Deps

# A request nobody decided in this time expires (the worker releases what it held).
APPROVAL_WINDOW = timedelta(hours=24)


class ApprovalKind(StrEnum):
    """What a request would make once approved."""

    REFUND = "refund"
    PAYOUT = "payout"
    # A batch's valid rows (app.payments.batches), approved once for the whole batch.
    PAYOUT_BATCH = "payouts"
    REFUND_BATCH = "refunds"

    @property
    def permission(self) -> str:
        """The dashboard permission (app.auth.users.PERMISSIONS) needed to approve one."""
        return "refund" if self in (ApprovalKind.REFUND, ApprovalKind.REFUND_BATCH) else "create_payout"

    @property
    def is_batch(self) -> bool:
        return self in (ApprovalKind.PAYOUT_BATCH, ApprovalKind.REFUND_BATCH)


class ApprovalState(StrEnum):
    """A request is awaiting until approved, rejected or expired; failed when approved but the
    refund could no longer be made (the payment moved on meanwhile)."""

    AWAITING = "awaiting"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    FAILED = "failed"


@dataclass(frozen=True)
class ApprovalRequest:
    """A refund or payout awaiting (or past) a second user's decision."""

    id: int
    merchant_id: int
    mode: Mode
    kind: ApprovalKind
    state: ApprovalState
    amount: Decimal
    currency: str
    original_id: int | None
    original_tx_no: str | None
    body: dict  # the refund or create request's body as the dashboard built it
    requested_by: str
    requested_at: datetime
    expires_at: datetime
    decided_by: str | None = None
    decided_at: datetime | None = None
    result_tx_no: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class UserLimits:
    """The largest refund and payout a user may make or approve in a currency (None: no limit)."""

    currency: str
    max_refund: Decimal | None
    max_payout: Decimal | None


class ApprovalRefused(PaymentError):
    """An approval or rejection the request's state, or who asks, does not allow."""


class LimitExceeded(PaymentError):
    """A refund or payout above the user's own limit."""


class AlreadyRequested(PaymentError):
    """The store already has a request made by this form (a second submit of it)."""


def needs_approval(threshold: Decimal | None, amount: Decimal) -> bool:
    """Above the merchant's threshold in the currency (none set: never)."""
    return threshold is not None and amount > threshold


def check_limit(limits: UserLimits, kind: ApprovalKind, amount: Decimal) -> None:
    """Refuse an amount above the user's limit for refunds or payouts in its currency."""
    refund = kind in (ApprovalKind.REFUND, ApprovalKind.REFUND_BATCH)
    limit = limits.max_refund if refund else limits.max_payout
    if limit is not None and amount > limit:
        currency = limits.currency
        raise LimitExceeded(
            f"Your {'refund' if refund else 'payout'} limit is {format_amount(limit, currency)} {currency}: "
            f"{format_amount(amount, currency)} {currency} is above it. Ask an admin to raise it, "
            f"or a colleague whose limit allows it.")


def check_decider(request: ApprovalRequest, actor: str, *, approving: bool) -> None:
    """Only an awaiting request is decided, and never approved by the user who asked for it."""
    if request.state is not ApprovalState.AWAITING:
        raise ApprovalRefused(f"This request is already {request.state.value}.")
    if approving and request.requested_by == actor:
        raise ApprovalRefused("You asked for this one: another user must approve it.")


def _get(deps: Deps, caller: Caller, approval_id: int) -> ApprovalRequest:
    with deps.uow(write=False) as uow:
        request = uow.approvals.get(caller, approval_id)
    if request is None:
        raise TransactionNotFound(f"approval {approval_id}")
    return request


def request_refund(deps: Deps, caller: Caller, request: RefundRequest, form_key: str) -> ApprovalRequest:
    """Record a refund awaiting approval and hold its amount on the payment, or refuse it by the
    refund rules (what other requests hold counts); a second submit of the same form gets the
    first request back."""
    now = deps.clock()
    try:
        with deps.uow() as uow:
            existing = uow.approvals.by_form_key(caller, form_key)
            if existing is not None:
                return existing
            original = refunds.reserve_refund_or_refuse(uow, caller, request,
                                                        uow.transactions.hold_refund)
            body = {"txNo": request.tx_no, "amount": str(request.amount), "reason": request.reason,
                    "description": request.description}
            approval = uow.approvals.add(caller, ApprovalKind.REFUND, request.amount, original.currency,
                                         original.id, body, form_key, now, now + APPROVAL_WINDOW)
            uow.audit(caller, "approval.request", original.tx_no, request.amount, original.currency,
                      {"kind": "refund", "approvalId": approval.id, "reason": request.reason})
            uow.notify(notifications.approval_waiting(approval))
            uow.commit()
            return approval
    except AlreadyRequested:
        with deps.uow(write=False) as uow:
            return uow.approvals.by_form_key(caller, form_key)


def request_payout(deps: Deps, caller: Caller, request: CreateTransactionRequest, body: dict,
                   form_key: str) -> ApprovalRequest:
    """Check a payout as its create would, then record it awaiting approval (nothing is held:
    a payout takes nothing from a payment)."""
    create.check_create(deps, caller, request)
    now = deps.clock()
    try:
        with deps.uow() as uow:
            existing = uow.approvals.by_form_key(caller, form_key)
            if existing is not None:
                return existing
            approval = uow.approvals.add(caller, ApprovalKind.PAYOUT, request.amount, request.currency,
                                         None, body, form_key, now, now + APPROVAL_WINDOW)
            uow.audit(caller, "approval.request", request.reference, request.amount, request.currency,
                      {"kind": "payout", "approvalId": approval.id})
            uow.notify(notifications.approval_waiting(approval))
            uow.commit()
            return approval
    except AlreadyRequested:
        with deps.uow(write=False) as uow:
            return uow.approvals.by_form_key(caller, form_key)


def approve(deps: Deps, caller: Caller, approval_id: int) -> Transaction | ApprovalRequest:
    """Approve another user's awaiting request and make its refund or payout, exactly once.

    The request moves to approved in the database transaction that writes the Pending refund
    (or the payout): of two approvals at once, the second finds it approved and is refused.
    The provider is asked after that commit, as for any refund or payout. A batch's request
    moves its batch to running in the same database transaction (the approved request is
    returned: a worker makes the batch's rows).
    """
    approval = _get(deps, caller, approval_id)
    check_decider(approval, caller.actor, approving=True)
    if approval.kind.is_batch:
        return _approve_batch(deps, caller, approval)
    if approval.kind is ApprovalKind.PAYOUT:
        return _approve_payout(deps, caller, approval)
    return _approve_refund(deps, caller, approval)


class _PaymentMovedOn(Exception):
    """The payment is no longer Captured: the approved refund cannot be made."""


def _approve_refund(deps: Deps, caller: Caller, approval: ApprovalRequest) -> Transaction:
    request = parse_refund({**approval.body, "amount": approval.amount})
    now = deps.clock()
    try:
        with deps.uow() as uow:
            original = uow.transactions.get_by_id(caller, approval.original_id)
            new_refund = refunds.pending_refund(replace(caller, actor=approval.requested_by), request,
                                             original, now)
            if not uow.approvals.decide(caller, approval.id, ApprovalState.APPROVED, now,
                                        result_tx_no=new_refund.tx_no):
                raise ApprovalRefused(_decided_meanwhile(deps, caller, approval.id))
            original = uow.transactions.reserve_held_refund(
                approval.original_id, to_minor(approval.amount, approval.currency))
            if original is None:
                raise _PaymentMovedOn()
            method = uow.methods.of_transaction(original)
            uow.audit(caller, "approval.approve", original.tx_no, approval.amount, approval.currency,
                      {"kind": "refund", "approvalId": approval.id, "requestedBy": approval.requested_by,
                       "refundTxNo": new_refund.tx_no})
            refunds.write_refund(uow, caller, request, new_refund, None)
    except _PaymentMovedOn:
        _fail(deps, caller, approval, "The payment is no longer Captured; the held amount is released.")
        raise ApprovalRefused("The payment is no longer Captured: the refund cannot be made, and the "
                              "request is closed as failed.") from None
    return refunds.settle_in_process(deps, new_refund, original, method)


def _approve_payout(deps: Deps, caller: Caller, approval: ApprovalRequest) -> Transaction:
    request = parse_create({**approval.body, "amount": approval.amount})

    def claimed(uow, payout: Transaction) -> None:
        """In the payout's own unit: the request moves to approved, or nothing is written."""
        now = deps.clock()
        if not uow.approvals.decide(caller, approval.id, ApprovalState.APPROVED, now,
                                    result_tx_no=payout.tx_no):
            raise ApprovalRefused(_decided_meanwhile(deps, caller, approval.id))
        uow.audit(caller, "approval.approve", payout.tx_no, approval.amount, approval.currency,
                  {"kind": "payout", "approvalId": approval.id, "requestedBy": approval.requested_by})

    return create.create_transaction(deps, caller, request, on_created=claimed)


def _approve_batch(deps: Deps, caller: Caller, approval: ApprovalRequest) -> ApprovalRequest:
    now = deps.clock()
    with deps.uow() as uow:
        if not uow.approvals.decide(caller, approval.id, ApprovalState.APPROVED, now):
            raise ApprovalRefused(_decided_meanwhile(deps, caller, approval.id))
        if not uow.batches.start_approved(caller, approval.id, caller.actor, now):
            raise ApprovalRefused("The batch of this request is no longer awaiting approval.")
        uow.audit(caller, "approval.approve", approval.body.get("batch"), approval.amount, approval.currency,
                  {"kind": approval.kind.value, "approvalId": approval.id,
                   "requestedBy": approval.requested_by, "totals": approval.body.get("totals")})
        uow.commit()
    return _get(deps, caller, approval.id)


def _decided_meanwhile(deps: Deps, caller: Caller, approval_id: int) -> str:
    """Why a request could not be decided: someone decided it first, or it expired."""
    current = _get(deps, caller, approval_id)
    if current.state is ApprovalState.AWAITING:
        return "This request has expired."
    return f"This request is already {current.state.value}."


def _fail(deps: Deps, caller: Caller, approval: ApprovalRequest, note: str) -> None:
    """Close a request whose refund cannot be made: released hold, state failed, audited."""
    now = deps.clock()
    with deps.uow() as uow:
        if uow.approvals.decide(caller, approval.id, ApprovalState.FAILED, now, note=note):
            uow.transactions.release_held_refund(approval.original_id,
                                                 to_minor(approval.amount, approval.currency))
            uow.audit(caller, "approval.fail", approval.original_tx_no, approval.amount,
                      approval.currency, {"kind": approval.kind.value, "approvalId": approval.id})
        uow.commit()


def reject(deps: Deps, caller: Caller, approval_id: int, note: str | None = None) -> ApprovalRequest:
    """Reject an awaiting request (its requester may withdraw it this way); a refund request's
    held amount is released in the same database transaction."""
    approval = _get(deps, caller, approval_id)
    check_decider(approval, caller.actor, approving=False)
    now = deps.clock()
    with deps.uow() as uow:
        if not uow.approvals.decide(caller, approval.id, ApprovalState.REJECTED, now, note=note):
            raise ApprovalRefused(_decided_meanwhile(deps, caller, approval.id))
        if approval.kind is ApprovalKind.REFUND:
            uow.transactions.release_held_refund(approval.original_id,
                                                 to_minor(approval.amount, approval.currency))
        if approval.kind.is_batch:
            uow.batches.cancel_awaiting(approval.id, now)
        uow.audit(caller, "approval.reject", _target(approval),
                  approval.amount, approval.currency,
                  {"kind": approval.kind.value, "approvalId": approval.id, "note": note})
        uow.commit()
    return _get(deps, caller, approval_id)


def expire_approvals(deps: Deps, limit: int = 100) -> int:
    """Worker: awaiting requests past APPROVAL_WINDOW expire and give back what they held."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        due = uow.approvals.due_for_expiry_for_worker(now, limit)
    expired = 0
    for approval_id in due:
        with deps.uow() as uow:
            approval = uow.approvals.expire_for_worker(approval_id, now)
            if approval is None:
                continue  # decided meanwhile
            if approval.kind is ApprovalKind.REFUND:
                uow.transactions.release_held_refund(approval.original_id,
                                                     to_minor(approval.amount, approval.currency))
            if approval.kind.is_batch:
                uow.batches.cancel_awaiting(approval.id, now)
            uow.audit(Caller(approval.merchant_id, approval.mode, "worker"), "approval.expire",
                      _target(approval), approval.amount,
                      approval.currency, {"kind": approval.kind.value, "approvalId": approval.id})
            uow.commit()
            expired += 1
    return expired



def _target(approval: ApprovalRequest) -> str | None:
    """What an approval's audit row names: the payment refunded, the payout's reference, the batch."""
    return approval.original_tx_no or approval.body.get("reference") or approval.body.get("batch")
