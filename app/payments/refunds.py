"""Making a refund: the refund guard takes its amount on the payment, or the refund rules say
why not; then the Pending refund, settled at once when its provider answers in process."""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from . import settlement
from .deps import Deps, OnCreated
from .model import (
    Caller,
    Kind,
    NotHeld,
    PaymentMethod,
    RefundState,
    Status,
    Transaction,
    check_refund,
    new_tx_no,
)
from .provider import Provider, ProviderUnavailable
from .refundable import RefundArithmetic, refund_state
from .schemas import RefundRequest
from .tokens import LimitKind, take_from_daily_limit


def refund(deps: Deps, caller: Caller, request: RefundRequest,
           on_created: OnCreated = None) -> Transaction:
    """Take the refund's amount on the original's row with the refund guard and commit it as a
    Pending refund; or raise the rule that refuses it, with the interface's message.

    One unit, and nothing read before it: the guard's conditional update goes first with the
    Pending refund's writes (one statement on PostgreSQL), and the refund takes what it needs of
    its payment from the row the guard returns. When the guard refuses, nothing is written and
    the rules decide on the payment's locked row (refuse_or_reserve_on_locked_row). No provider is
    asked on the request's thread before the commit: the refund's provider call is due now, for
    a worker; a provider that answers in process (the simulator) is asked after the commit and
    its answer recorded as any provider's (settle_in_process).
    """
    now = deps.clock()
    if caller.grant is not None and caller.grant.limits_any(LimitKind.REFUND):
        new_refund, original = _refund_within_token_limit(deps, caller, request, on_created, now)
        with deps.uow(write=False) as uow:
            method = uow.methods.of_transaction(original)
        return settle_in_process(deps, new_refund, original, method)
    try:
        with deps.uow() as uow:
            original = uow.transactions.reserve_refund_with_writes(caller, request.tx_no, request.amount)
            new_refund = pending_refund(caller, request, original, now)
            write_refund(uow, caller, request, new_refund, on_created)
    except NotHeld:
        with deps.uow() as uow:
            original = refuse_or_reserve_on_locked_row(uow, caller, request, uow.transactions.reserve_refund)
            new_refund = pending_refund(caller, request, original, now)
            write_refund(uow, caller, request, new_refund, on_created)
    with deps.uow(write=False) as uow:
        method = uow.methods.of_transaction(original)
    return settle_in_process(deps, new_refund, original, method)


def _refund_within_token_limit(deps: Deps, caller: Caller, request: RefundRequest,
                               on_created: OnCreated, now: datetime) -> tuple[Transaction, Transaction]:
    """A refund by a token with a daily refund limit: the refund guard runs at once (the limit
    is per currency, the payment's), then the amount is taken from the token's limit, then the
    Pending refund is written, all in one unit: a refusal of the limit rolls back the guard's
    reservation too, and concurrent refunds are counted one after the other on the limit's row.
    Tokens without such a limit keep refund()'s one-statement path."""
    with deps.uow() as uow:
        original = reserve_refund_or_refuse(uow, caller, request, uow.transactions.reserve_refund)
        take_from_daily_limit(uow, caller, LimitKind.REFUND, request.amount, original.currency, now)
        new_refund = pending_refund(caller, request, original, now)
        write_refund(uow, caller, request, new_refund, on_created)
    return new_refund, original


def settle_in_process(deps: Deps, new_refund: Transaction, original: Transaction,
                      method: PaymentMethod | None) -> Transaction:
    """A committed Pending refund settled at once when its provider answers in process (the
    simulator), its answer recorded as a worker records any provider's; as it is otherwise: a
    worker submits it (its provider call is due now, and the workers are told: Deps.hand_over)."""
    if _answering_in_process(deps, method) is None:
        if deps.hand_over is not None:
            deps.hand_over(new_refund)
        return new_refund
    return settlement.settle_with_provider(deps, new_refund.id, source="provider",
                                known=settlement.AsRead(new_refund, original, method))


def _answering_in_process(deps: Deps, method: PaymentMethod | None) -> Provider | None:
    """The method's provider when it answers in process (the simulator); None otherwise, and
    when it cannot be used now (the Pending refund then waits for it, as with any provider)."""
    if method is None:
        return None
    try:
        return deps.providers.in_process_provider(method)
    except ProviderUnavailable:
        return None


def pending_refund(caller: Caller, request: RefundRequest, original: Transaction,
                now: datetime) -> Transaction:
    """The Pending refund of the request, before it is stored."""
    return Transaction(
        merchant_id=caller.merchant_id,
        mode=caller.mode,
        tx_no=new_tx_no(Kind.REFUND),
        kind=Kind.REFUND,
        status=Status.PENDING,
        amount=request.amount,
        currency=original.currency,
        reference=original.reference,
        payment_method=original.payment_method,
        created_at=now,
        updated_at=now,
        callback_url=original.callback_url,
        original_id=original.id,
        original_tx_no=original.tx_no,
        udf1=request.reason,
        udf2=request.description,
        created_by=caller.actor,
        provider_check_at=now,  # due for a worker, unless the simulator's answer settles it first
    )


def write_refund(uow, caller: Caller, request: RefundRequest, new_refund: Transaction,
                 on_created: OnCreated) -> None:
    """Commit the Pending refund with its history and audit row (and on_created's writes)."""
    # Not announced to the workers with the commit: settle_in_process hands it over when its
    # provider does not answer in process (the simulator's answer needs no worker).
    uow.transactions.add(new_refund, announce=False)
    uow.record_history(new_refund, None, caller.actor)
    uow.audit(caller, "refund.create", new_refund.tx_no, new_refund.amount, new_refund.currency,
              {"originalTxNo": new_refund.original_tx_no, "reason": request.reason})
    if on_created:
        on_created(uow, new_refund)
    uow.commit()


def reserve_refund_or_refuse(uow, caller: Caller, request: RefundRequest,
                             reserve: Callable[[Caller, str, Any], Transaction | None]) -> Transaction:
    """Take the refund's amount on the original's row and return the original; or raise the
    rule that refuses it, with the interface's message, in the interface's order.

    `reserve` runs the store's refund guard at once (hold_refund, for a request awaiting
    approval; a refund sends it with its writes instead, see refund()). It checks every rule at
    once; only when it refuses is the original read, under a lock, for check_refund to say which
    rule failed.
    """
    original = reserve(caller, request.tx_no, request.amount)
    if original is not None:
        return original
    return refuse_or_reserve_on_locked_row(uow, caller, request, reserve)


def refuse_or_reserve_on_locked_row(uow, caller: Caller, request: RefundRequest,
                                    reserve: Callable[[Caller, str, Any], Transaction | None]) -> Transaction:
    """After the refund guard refused: lock the original's row and raise the rule that refuses
    the refund there (check_refund, the interface's order and messages). When none does, the
    payment changed since in a way that allows it (a refund of it settled as Failed or
    Declined, a request awaiting approval let go of its hold): `reserve` takes it now, on the
    locked row, and the original is returned."""
    original = uow.transactions.get(caller, request.tx_no, for_update=True)
    method = uow.methods.of_transaction(original) if original else None
    check_refund(_refund_state(original, method), request.tx_no, request.amount)
    original = reserve(caller, request.tx_no, request.amount)
    if original is None:
        raise RuntimeError(f"the store refused a refund of {request.tx_no} that the rules allow")
    return original


def _refund_state(original: Transaction | None, method: PaymentMethod | None) -> RefundState | None:
    """The refund rules' view of the original: its refund totals as its row keeps them."""
    if original is None:
        return None
    return refund_state(original, RefundArithmetic.of_payment(original, method))
