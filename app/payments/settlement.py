"""Settling with the provider: asking where a Pending transaction stands (or, for a payment with a
cancel outstanding, asking the provider to void it) and recording the answer (status, history,
webhook, a refund's totals on its original), and the workers' claims on the provider calls that
are due."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from . import lookup
from .deps import Deps, OnCreated
from .events import move_webhook_id
from .model import (
    CANCELLED,
    DECLINE_STATUSES,
    Caller,
    InvalidMove,
    Kind,
    Mode,
    NotHeld,
    PaymentMethod,
    Status,
    Transaction,
    can_move,
    cancel_outstanding,
    check_simulator_may_decide,
    original_after_refunds,
)
from .provider import Outcome, ProviderDisconnected, ProviderUnavailable, SendsTransfers
from .voids import as_cancelled

# While one worker asks the provider about a transaction, others skip it this long.
CLAIM_FOR = timedelta(seconds=30)
# The longest wait between two questions to a provider that could not answer.
MAX_RETRY_DELAY = timedelta(hours=1)


@dataclass(frozen=True)
class AsRead:
    """What a provider call needs, as its caller has just read it: the transaction, its original
    (a refund's), its method, and the method's provider account (None: read when the provider is
    looked up). A worker reads a whole batch of calls this way, in one unit of work."""

    tx: Transaction
    original: Transaction | None
    method: PaymentMethod | None
    account: Any = None  # app.store.provider_accounts.ProviderAccount


def settle_with_provider(deps: Deps, tx_id: int, *, source: str, known: AsRead | None = None,
                         gate: Callable[[], AbstractContextManager] = nullcontext) -> Transaction:
    """Ask the provider about a Pending transaction, or to void a payment with a cancel
    outstanding (Pending or Authorized), and record its answer.

    What is asked follows from the transaction's state: a refund never submitted is submitted,
    a transaction never opened at the provider is opened, a payment with a cancel outstanding is
    voided (its answer read by voids.as_cancelled, with a `payment.cancel` audit row), anything
    else is asked where it stands. A payment with a cancel outstanding that its provider never
    saw is declined without asking anybody (decline_unopened).

    `known`: the transaction and what goes with it, when the caller has just read them. `gate()`
    is entered around the provider's call (a worker's circuit breaker for the provider account).
    """
    if known is None:
        with deps.uow(write=False) as uow:
            tx = uow.transactions.get_for_worker(tx_id)
            original = uow.transactions.get_for_worker(tx.original_id) if tx.original_id else None
            known = AsRead(tx, original, uow.methods.of_transaction(tx))
    tx, original, method = known.tx, known.original, known.method
    cancelling = cancel_outstanding(tx)
    if tx.status is not Status.PENDING and not cancelling:
        return tx
    if cancelling and not tx.opened_at_provider:
        return decline_unopened(deps, tx, source=source, gate=gate)
    if method is None:
        return provider_unavailable(deps, tx, ProviderUnavailable(
            f"Payment method {tx.payment_method} is no longer configured"))

    def ask() -> Outcome:
        provider = deps.providers.for_method(method, account=known.account)
        if cancelling:
            return as_cancelled(provider.cancel(tx))
        if tx.kind is Kind.REFUND and tx.provider_transaction_id is None:
            return provider.refund(tx, original, deps.clock())  # never reached the provider: submit it
        if tx.kind is not Kind.REFUND and not tx.opened_at_provider:
            return provider.create(tx, method)  # created, but the provider was never asked
        return provider.status(tx, original, deps.clock())

    return _ask_provider(deps, tx, original, ask, source=source, gate=gate,
                         on_moved=audit_cancel(source) if cancelling else None)


def decline_unopened(deps: Deps, tx: Transaction, *, source: str,
                     gate: Callable[[], AbstractContextManager] = nullcontext) -> Transaction:
    """Decline a payment with a cancel outstanding that was never opened at its provider (its
    create call still due): nobody needs asking, since the provider never saw it.

    Only as tx was read: if it changed meanwhile (a worker's create answer has just opened it),
    it is settled again from what it now is, so an opened payment is always voided first.
    """
    outcome = Outcome(Status.DECLINED, provider_message="Cancelled before the provider was asked",
                      decline_reason=CANCELLED)
    try:
        return apply_outcome(deps, tx.id, outcome, source=source, on_moved=audit_cancel(source),
                             as_read=(tx, None), only_as_read=True)
    except NotHeld:
        return settle_with_provider(deps, tx.id, source=source, gate=gate)


def audit_cancel(actor: str) -> OnCreated:
    """The on_moved hook that writes a cancel's `payment.cancel` audit row, by `actor`, with the
    status the payment moved to (Declined; Captured when it was paid meanwhile)."""

    def audited(uow, moved: Transaction) -> None:
        uow.audit(Caller(moved.merchant_id, moved.mode, actor), "payment.cancel", moved.tx_no,
                  moved.amount, moved.currency, {"status": moved.status.value})

    return audited


def _ask_provider(deps: Deps, tx: Transaction, original: Transaction | None, ask: Callable[[], Outcome],
                  *, source: str, gate: Callable[[], AbstractContextManager] = nullcontext,
                  on_moved: OnCreated = None) -> Transaction:
    """Ask the provider (outside any unit of work) and record its answer on tx and its original
    as the caller read them (apply_outcome's as_read); Pending if it cannot answer.

    While tx has a provider check due (a new refund, a payout, one the worker took up), the
    worker asks the same question again if the answer's commit is lost, so that commit may
    skip the disk flush. Not the answer that opens a payment: it carries the provider's
    payment page, which no second question gives back (Paystack answers a repeated
    initialize with "Duplicate Transaction Reference").
    """
    try:
        with gate():
            outcome = ask()
    except ProviderUnavailable as error:
        return provider_unavailable(deps, tx, error)
    opens_a_payment = tx.kind is Kind.PAYMENT and not tx.opened_at_provider
    return apply_outcome(deps, tx.id, outcome, source=source, as_read=(tx, original), on_moved=on_moved,
                         recoverable=tx.provider_check_at is not None and not opens_a_payment)


def ask_provider_now(deps: Deps, tx: Transaction) -> None:
    """Hand a Pending transaction's question to its provider to the workers, due now (a customer
    back from the provider's page); its answer moves it as any provider answer does."""
    with deps.uow() as uow:
        uow.transactions.ask_provider_now(tx.id, deps.clock())
        uow.commit()


def provider_unavailable(deps: Deps, tx: Transaction, error: ProviderUnavailable) -> Transaction:
    """Keep the transaction as it is (Pending, or a payment with a cancel outstanding) and ask
    again later, later the longer it has waited (a cancel: since it was asked).

    A payment or payout of a disconnected account is not asked again: it waits for expiry.
    A refund is (its amount stays held, and the account may be connected again).
    """
    with deps.uow() as uow:
        current = uow.transactions.get_for_worker(tx.id, for_update=True)
        cancelling = cancel_outstanding(current)
        if current.status is Status.PENDING or cancelling:
            now = deps.clock()
            waiting_since = current.cancel_requested_at if cancelling else current.created_at
            current.provider_message = str(error)[:500]
            if isinstance(error, ProviderDisconnected) and current.kind is not Kind.REFUND:
                current.provider_check_at = None
            else:
                current.provider_check_at = now + retry_delay(now - waiting_since)
            current.updated_at = now
            uow.transactions.save_state(current)
            uow.commit()
        return current


def apply_outcome(deps: Deps, tx_id: int, outcome: Outcome, *, source: str,
                  strict: bool = False, on_moved: OnCreated = None,
                  recoverable: bool = False,
                  as_read: tuple[Transaction, Transaction | None] | None = None,
                  only_as_read: bool = False) -> Transaction:
    """Record a provider's answer: status, history, webhook and, for refunds, the original's
    refund totals and status.

    All of it is one database transaction, with on_moved(uow, tx) when the status moved. A
    move the current status does not allow is ignored (another process already settled it)
    unless strict. `recoverable`: the worker asks the provider again if this commit is lost,
    so it need not wait for the disk (the move is then recorded again, its event under the
    same webhook id).

    `as_read`: the transaction and its original as the caller has just read them, unlocked.
    The answer is then decided on them and written by one statement that first checks that
    neither row has changed since; only when one has are the rows locked, read and decided
    on again (the outcome is the same as without `as_read`). With `only_as_read`, a change
    since the read raises NotHeld instead: the answer held only for the rows as they were.
    """
    if as_read is not None and not strict:
        tx, original = (replace(row) if row is not None else None for row in as_read)
        try:
            with deps.uow() as uow:
                uow.transactions.expect_as_read(tx, original)
                if _record_outcome(deps, uow, tx, original, outcome, source=source, strict=strict,
                                   on_moved=on_moved, recoverable=recoverable):
                    return tx
        except NotHeld:
            if only_as_read:
                raise
            # changed since it was read: decided again below, on the locked rows
        # (An answer that changes nothing is also decided on the locked rows, as it always was.)
    with deps.uow() as uow:
        tx, original = uow.transactions.lock_with_original(tx_id)
        _record_outcome(deps, uow, tx, original, outcome, source=source, strict=strict,
                        on_moved=on_moved, recoverable=recoverable)
        return tx


def _record_outcome(deps: Deps, uow, tx: Transaction, original: Transaction | None, outcome: Outcome,
                    *, source: str, strict: bool, on_moved: OnCreated, recoverable: bool) -> bool:
    """apply_outcome's decision on tx and its original as this unit holds them: the writes, and
    the commit; False when the answer changes nothing (nothing written, nothing committed)."""
    if recoverable:
        uow.relax_durability()  # set with the writes, no statement of its own
    now = deps.clock()
    if outcome.status is tx.status:
        if tx.status is not Status.PENDING:
            return False
        take_provider_answer(tx, outcome)
        if cancel_outstanding(tx):
            tx.provider_check_at = now  # an answer to another question: the void is still owed
        elif tx.kind is not Kind.PAYMENT and tx.provider_check_at is None:
            tx.provider_check_at = now + CLAIM_FOR  # the provider still owes an answer
        tx.updated_at = now
        uow.transactions.save_state(tx)
        uow.commit()
        return True
    if not can_move(tx.kind, tx.status, outcome.status):
        if strict:
            raise InvalidMove(tx.tx_no, tx.status, outcome.status)
        return False
    previous = tx.status
    tx.status = outcome.status
    tx.decline_reason = outcome.decline_reason if outcome.status in DECLINE_STATUSES else None
    take_provider_answer(tx, outcome)
    tx.provider_check_at = None
    tx.updated_at = now
    uow.transactions.save_state(tx)
    uow.record_history(tx, previous, source, outcome.provider_message)
    uow.enqueue_webhook(tx, move_webhook_id(tx))
    if tx.kind is Kind.REFUND:  # a refund moves only from Pending to its final status
        original = uow.transactions.settle_refund(tx, original)
        if tx.status is Status.CAPTURED:
            _settle_original(uow, original, now, source)
    if on_moved:
        on_moved(uow, tx)
    uow.commit()
    return True


def _settle_original(uow, original: Transaction, now: datetime, source: str) -> None:
    """Captured refunds reaching the amount move the original to Refunded; below, it stays Captured.

    `original` is as the refund's settlement left its row (its refund totals included).
    """
    if original.status is Status.CAPTURED and \
            original_after_refunds(original.amount, original.refund_captured,
                                   original.dispute_lost) is Status.REFUNDED:
        original.status = Status.REFUNDED
        original.updated_at = now
        uow.transactions.save_state(original)
        uow.record_history(original, Status.CAPTURED, source, "Refunded in full")


def retry_delay(waited: timedelta) -> timedelta:
    """How long to wait before asking an unreachable provider again: a quarter of the time the
    transaction has waited so far, at least CLAIM_FOR and at most MAX_RETRY_DELAY."""
    return min(max(CLAIM_FOR, waited / 4), MAX_RETRY_DELAY)


def take_provider_answer(tx: Transaction, outcome: Outcome) -> None:
    """Copy the provider's answer onto tx: its ids, its page, its words, when to ask it again."""
    tx.provider_transaction_id = outcome.provider_transaction_id or tx.provider_transaction_id
    tx.provider_redirect_url = outcome.redirect_url or tx.provider_redirect_url
    tx.provider_status = outcome.provider_status
    tx.provider_message = outcome.provider_message
    tx.provider_check_at = outcome.check_again_at


def move_by_provider(deps: Deps, caller: Caller, tx_no: str, status: Status,
                     decline_reason: str | None, source: str) -> Transaction:
    """Move a payment or payout as its provider would (sandbox helper, hosted checkout); a live
    one only in a demo (SimulatedLiveMoney)."""
    tx = lookup.get_status(deps, caller, tx_no)
    if tx.kind is Kind.REFUND:
        raise InvalidMove(tx.tx_no, tx.status, status)
    if tx.mode is Mode.LIVE:  # the sandbox helper's moves need no read of the method
        with deps.uow(write=False) as uow:
            method = uow.methods.of_transaction(tx)
        check_simulator_may_decide(tx.mode, tx.payment_method, method, demo=deps.demo_mode)
    if status in DECLINE_STATUSES and not decline_reason:
        decline_reason = "Declined By Bank" if status is Status.DECLINED else "Provider Error"
    outcome = Outcome(
        status,
        provider_transaction_id=tx.provider_transaction_id,
        provider_status=status.value.upper(),
        provider_message=f"{status.value} by {source}",
        decline_reason=decline_reason,
    )
    return apply_outcome(deps, tx.id, outcome, source=source, strict=True)


def run_due_provider_checks(deps: Deps, limit: int = 100) -> int:
    """Settle Pending transactions whose provider answer is due (async, crashed, payouts), one
    after another, and say how many. The worker makes these calls concurrently instead
    (app/providers/calls.py, the same claim and settle_with_provider); this one-pass form is
    what the tests' workers and the in-memory fakes use."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        due = uow.transactions.due_provider_checks(now, limit)
    settled = 0
    for tx_id in due:
        if claim_provider_calls(deps, [tx_id], now):
            settle_with_provider(deps, tx_id, source="worker")
            settled += 1
    return settled


def claim_provider_calls(deps: Deps, tx_ids: list[int], now: datetime) -> dict[int, Transaction]:
    """Take due provider calls for this worker, for CLAIM_FOR (others skip them meanwhile; if
    this worker dies, another takes them once the claim lapses); the transactions this worker
    took, by id, as they stand (read with the claim).

    The claim does not wait for the disk: a database crash that loses it loses every commit
    after it too (PostgreSQL writes its log in order), the answers to these calls included, so
    the calls are only made again, as after a worker that died holding its claim. An answer
    that must not be lost (a payment's opening) waits for the disk, and the claim with it.
    """
    with deps.uow() as uow:
        uow.relax_durability()
        claimed = uow.transactions.claim_provider_checks(tx_ids, now, now + CLAIM_FOR)
        uow.commit()
    return claimed


# -- payouts of a batch opened together ---------------------------------------------------------

def opens_a_transfer(known: AsRead) -> bool:
    """The call would open a payout at its provider (send its transfer): Pending, never
    opened, no cancel outstanding, its method known."""
    tx = known.tx
    return (tx.kind is Kind.PAYOUT and tx.status is Status.PENDING and not tx.opened_at_provider
            and not cancel_outstanding(tx) and known.method is not None)


def transfer_groups(deps: Deps, calls: list[AsRead],
                    together: Callable[[AsRead], bool]) -> tuple[list[list[AsRead]], list[AsRead]]:
    """The calls that open payouts `together` allows to go together (a batch's), in groups of
    one method whose provider sends transfers together (SendsTransfers), each group at most
    the provider's max_transfers; and the other calls, made one by one."""
    grouped: dict[tuple, list[AsRead]] = {}
    sizes: dict[tuple, int] = {}
    singles = []
    for known in calls:
        if opens_a_transfer(known) and together(known):
            try:
                provider = deps.providers.for_method(known.method, account=known.account)
            except ProviderUnavailable:
                provider = None  # settle_with_provider records why, one by one
            if isinstance(provider, SendsTransfers):
                key = (known.method.method_id, known.method.provider_account_id)
                grouped.setdefault(key, []).append(known)
                sizes[key] = provider.max_transfers
                continue
        singles.append(known)
    groups = []
    for key, members in grouped.items():
        if len(members) == 1:
            singles.extend(members)
            continue
        groups.extend(members[start:start + sizes[key]] for start in range(0, len(members), sizes[key]))
    return groups, singles


def settle_transfers_together(deps: Deps, group: list[AsRead], *, source: str,
                              gate: Callable[[], AbstractContextManager] = nullcontext) -> None:
    """Open a group of payouts (transfer_groups') with one request to their provider
    (send_transfers, inside `gate`), and record each one's answer as settle_with_provider records
    a single create's answer; each stays Pending and due when the provider cannot answer."""
    first = group[0]
    try:
        provider = deps.providers.for_method(first.method, account=first.account)
        with gate():
            outcomes = provider.send_transfers([known.tx for known in group], first.method)
    except ProviderUnavailable as error:
        for known in group:
            provider_unavailable(deps, known.tx, error)
        return
    failed = None
    for known in group:
        try:
            apply_outcome(deps, known.tx.id, outcomes[known.tx.tx_no], source=source,
                          as_read=(known.tx, known.original),
                          recoverable=known.tx.provider_check_at is not None)
        except Exception as error:  # noqa: BLE001 - the others' answers are recorded all the same
            failed = failed or error
    if failed is not None:
        raise failed  # that payout's claim lapses; asked again, its reference keeps it single
