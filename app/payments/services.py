"""The operations of the interface: plain values in, results out, one unit of work each.

The API and the dashboard both call these, so a rule or a message never differs between them.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from .accounts import AccountNumberError, iban_bank_mismatch, validate_account_number
from .countries import resolve_country
from .events import move_webhook_id
from .model import (
    CANCELLED,
    DECLINE_STATUSES,
    EXPIRED,
    BankListRefused,
    Caller,
    DuplicateReference,
    FieldErrors,
    InvalidMove,
    Kind,
    Mode,
    NotHeld,
    PaymentMethod,
    ReferenceTaken,
    RefundState,
    Status,
    StoredStatus,
    Transaction,
    TransactionNotFound,
    can_move,
    check_cancel,
    check_simulator_may_decide,
    check_refund,
    new_tx_no,
    original_after_refunds,
)
from .provider import (
    Bank,
    BankListError,
    Outcome,
    Provider,
    ProviderDisconnected,
    Providers,
    ProviderUnavailable,
)
from .refundable import RefundArithmetic, refund_state
from .schemas import PAYOUT_ACTION, CreateTransactionRequest, RefundRequest
from .sandbox import install_fixtures

# While one worker asks the provider about a transaction, others skip it this long.
CLAIM_FOR = timedelta(seconds=30)
# A provider's answer to a void (Provider.cancel) that leaves Paydesk to decline the payment: voided
# (Declined, whatever reason the provider gives) or nothing to void (Pending). Other answers say
# where the payment went meanwhile (Captured, say) and are recorded as they are.
VOIDED = (Status.PENDING, Status.DECLINED)
# The longest wait between two questions to a provider that could not answer.
MAX_RETRY_DELAY = timedelta(hours=1)


@dataclass
class Deps:
    """What the services need: units of work, providers, a clock, the expiry window."""

    uow: Callable[..., Any]  # uow(write=True) -> app.store.unit_of_work.UnitOfWork
    providers: Providers
    clock: Callable[[], datetime]
    pending_expiry: timedelta = timedelta(minutes=30)
    # The deployment runs as a demo: the simulator may decide live transactions (DEMO_MODE).
    demo_mode: bool = False


# A hook the caller may pass to run inside the unit of work that creates (or moves) a
# transaction (the API links its Idempotency-Key record to it there).
OnCreated = Callable[[Any, Transaction], None] | None


def get_status(deps: Deps, caller: Caller, tx_no: str) -> Transaction:
    """The stored transaction (no provider call); TransactionNotFound outside the caller's scope."""
    with deps.uow(write=False) as uow:
        return _found(uow.transactions.get(caller, tx_no), tx_no)


def stored_status(deps: Deps, caller: Caller, tx_no: str) -> StoredStatus:
    """get_status's answer as the status response shows it, read alone (its columns only)."""
    with deps.uow(write=False) as uow:
        return _found(uow.transactions.status_of(caller, tx_no), tx_no)


def _found(found, tx_no: str):
    """What a read in the caller's scope found; TransactionNotFound when it found nothing."""
    if found is None:
        raise TransactionNotFound(tx_no)
    return found


def create_transaction(deps: Deps, caller: Caller, request: CreateTransactionRequest,
                       on_created: OnCreated = None) -> Transaction:
    """Create a payment or payout in Pending; its provider opens it.

    The method and the payout's destination are checked before any write (the bank check may
    ask the provider). A provider behind a network is never asked on the request's thread: the
    Pending transaction is committed with its provider call due now, and a worker makes the
    call (app.providers.calls; the provider's call is idempotent on the txNo). The
    simulator answers in process, so its answer is written with the transaction in one unit.
    """
    # The reference is left to the insert (ReferenceTaken below): reading it first would cost
    # every create a statement to catch the rare duplicate, in the same order of checks.
    checked = check_create(deps, caller, request, read_reference=False)
    method = checked.method
    # Found without I/O: a payment through a provider account reads nothing of the account here.
    answering_now = deps.providers.in_process_provider(method)
    now = deps.clock()
    kind = Kind.PAYOUT if method.is_payout else Kind.PAYMENT
    tx = Transaction(
        merchant_id=caller.merchant_id,
        mode=caller.mode,
        tx_no=new_tx_no(kind),
        kind=kind,
        status=Status.PENDING,
        amount=request.amount,
        currency=request.currency,
        reference=request.reference,
        payment_method=method.method_id,
        created_at=now,
        updated_at=now,
        statement_descriptor=request.statement_descriptor,
        callback_url=request.callback_url,
        billing=_billing_dict(request),
        payment_details=checked.payment_details,
        success_url=request.success_url,
        pending_url=request.pending_url,
        failure_url=request.failure_url,
        udf1=request.user_defined_field1,
        udf2=request.user_defined_field2,
        udf3=request.user_defined_field3,
        created_by=caller.actor,
    )
    if answering_now is not None:
        _take_provider_answer(tx, answering_now.create(tx, method))
    else:
        tx.provider_check_at = now  # handed to the workers: due now, announced at commit
    try:
        with deps.uow() as uow:
            uow.transactions.add(tx)
            uow.record_history(tx, None, caller.actor)
            if kind is Kind.PAYOUT:
                uow.audit(caller, "payout.create", tx.tx_no, tx.amount, tx.currency,
                          {"method": method.method_id})
            if on_created:
                on_created(uow, tx)
            uow.commit()
    except ReferenceTaken:  # from add(), or when the unit's writes are sent
        existing = _existing_reference(deps, caller, request.reference)
        raise DuplicateReference(request.reference, existing) from None
    return tx


@dataclass(frozen=True)
class CheckedCreate:
    """A create request that passed every check before a write: its method and the payout's
    checked destination account ({} for a payment)."""

    method: PaymentMethod
    payment_details: dict


def check_create(deps: Deps, caller: Caller, request: CreateTransactionRequest, *,
                 read_reference: bool = True) -> CheckedCreate:
    """Every check a create makes before it writes (method, currency, country, payout account and
    bank, which may ask the provider; a reference already used), and nothing written.

    create_transaction runs it first; the dashboard's payout review runs it alone, so a payout
    confirmed after review meets the same rules. create_transaction skips reading the reference
    (`read_reference=False`): its insert refuses a reference already used, after these same
    checks, which also catches a create running meanwhile.
    """
    with deps.uow(write=False) as uow:
        method = uow.methods.get(caller, request.payment.payment_method)
        existing = uow.transactions.find_by_reference(caller, request.reference) if read_reference else None
    _check_method(method, request)
    check_simulator_may_decide(caller.mode, method.method_id, method, demo=deps.demo_mode)
    # A payout's bank is checked against its provider's list; a payment needs no provider here.
    payment_details = _payout_details(deps.providers.for_method(method), method, request) \
        if method.is_payout else {}
    if existing is not None:
        raise DuplicateReference(request.reference, existing)
    return CheckedCreate(method, payment_details)


def _ask_provider(deps: Deps, tx: Transaction, original: Transaction | None, ask: Callable[[], Outcome],
                  *, source: str, gate: Callable[[], AbstractContextManager] = nullcontext) -> Transaction:
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
        return _provider_unavailable(deps, tx, error)
    opens_a_payment = tx.kind is Kind.PAYMENT and not tx.opened_at_provider
    return apply_outcome(deps, tx.id, outcome, source=source, as_read=(tx, original),
                         recoverable=tx.provider_check_at is not None and not opens_a_payment)


def _existing_reference(deps: Deps, caller: Caller, reference: str) -> str:
    with deps.uow(write=False) as uow:
        return uow.transactions.find_by_reference(caller, reference)


def _check_method(method: PaymentMethod | None, request: CreateTransactionRequest) -> None:
    """The method must exist, take the currency and country, and get the fields its kind needs."""
    if method is None:
        raise FieldErrors.one(
            "Payment.PaymentMethod", f"Payment method {request.payment.payment_method} not found"
        )
    errors: dict[str, list[str]] = {}
    if request.currency not in method.currencies:
        errors["Currency"] = [
            f"Currency {request.currency} is not supported by payment method {method.method_id}"
        ]
    country = request.billing.country
    if country and method.countries and country not in method.countries:
        errors["Billing.Country"] = [
            f"Country {country} is not supported by payment method {method.method_id}"
        ]
    payment = request.payment
    if method.is_payout:
        if request.transaction_action != PAYOUT_ACTION:
            errors["TransactionAction"] = [
                f"TransactionAction must be {PAYOUT_ACTION} for payout method {method.method_id}"
            ]
        if not payment.holder:
            errors["Payment.Holder"] = ["Payment.Holder is required for payouts"]
        if not payment.account_number:
            errors["Payment.AccountNumber"] = ["Payment.AccountNumber is required for payouts"]
        if method.bank_list and not payment.bank:
            errors["Payment.Bank"] = [f"Payment.Bank is required for payment method {method.method_id}"]
        if not method.bank_list and payment.bank:
            errors["Payment.Bank"] = [f"Payment method {method.method_id} does not take a bank"]
    else:
        if request.transaction_action is not None:
            errors["TransactionAction"] = ["TransactionAction applies to payout methods only"]
        for label, value in (("Payment.Bank", payment.bank), ("Payment.Holder", payment.holder),
                             ("Payment.AccountNumber", payment.account_number)):
            if value is not None:
                errors[label] = [f"{label} applies to payout methods only"]
    if errors:
        raise FieldErrors(errors)


def _payout_details(provider: Provider, method: PaymentMethod, request: CreateTransactionRequest) -> dict:
    """Checked destination account of a payout: bank from the method's list, number by its rule."""
    payment = request.payment
    errors: dict[str, list[str]] = {}
    if method.bank_list and not provider.knows_bank(method, request.currency, payment.bank,
                                                    request.billing.country):
        errors["Payment.Bank"] = [
            f"Bank {payment.bank} is not in the bank list of payment method {method.method_id}"
        ]
    account = payment.account_number
    if method.account_rule:
        try:
            account = validate_account_number(method.account_rule, account, payment.bank,
                                              request.currency)
        except AccountNumberError as error:
            errors["Payment.AccountNumber"] = [str(error)]
        else:
            mismatch = (iban_bank_mismatch(account, payment.bank)
                        if method.account_rule == "iban" and payment.bank else None)
            if mismatch and "Payment.Bank" not in errors:
                errors["Payment.Bank"] = [mismatch]
    if errors:
        raise FieldErrors(errors)
    return {"bank": payment.bank, "holder": payment.holder, "accountNumber": account}


def _billing_dict(request: CreateTransactionRequest) -> dict:
    billing = request.billing
    data = {
        "firstName": billing.first_name,
        "lastName": billing.last_name,
        "email": billing.email,
        "customerReference": billing.customer_reference,
    }
    if billing.country:
        data["country"] = billing.country
    return data


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


def settle_in_process(deps: Deps, new_refund: Transaction, original: Transaction,
                      method: PaymentMethod | None) -> Transaction:
    """A committed Pending refund settled at once when its provider answers in process (the
    simulator), its answer recorded as a worker records any provider's; as it is otherwise: a
    worker submits it (its provider call is due now)."""
    if _answering_in_process(deps, method) is None:
        return new_refund
    return settle_with_provider(deps, new_refund.id, source="provider",
                                known=(new_refund, original, method))


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
    uow.transactions.add(new_refund)
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


def settle_with_provider(deps: Deps, tx_id: int, *, source: str,
                         known: tuple[Transaction, Transaction | None, PaymentMethod | None] | None = None,
                         gate: Callable[[], AbstractContextManager] = nullcontext) -> Transaction:
    """Ask the provider where a Pending transaction stands and record its answer.

    `known` is (transaction, original, method) when the caller has just read them. `gate()` is
    entered around the provider's call (a worker's circuit breaker for the provider account).
    """
    if known is None:
        with deps.uow(write=False) as uow:
            tx = uow.transactions.get_for_worker(tx_id)
            original = uow.transactions.get_for_worker(tx.original_id) if tx.original_id else None
            method = uow.methods.of_transaction(tx)
    else:
        tx, original, method = known
    if tx.status is not Status.PENDING:
        return tx
    if method is None:
        return _provider_unavailable(deps, tx, ProviderUnavailable(
            f"Payment method {tx.payment_method} is no longer configured"))

    def ask() -> Outcome:
        provider = deps.providers.for_method(method)
        if tx.kind is Kind.REFUND and tx.provider_transaction_id is None:
            return provider.refund(tx, original, deps.clock())  # never reached the provider: submit it
        if tx.kind is not Kind.REFUND and not tx.opened_at_provider:
            return provider.create(tx, method)  # created, but the provider was never asked
        return provider.status(tx, original, deps.clock())

    return _ask_provider(deps, tx, original, ask, source=source, gate=gate)


def ask_provider_now(deps: Deps, tx: Transaction) -> None:
    """Hand a Pending transaction's question to its provider to the workers, due now (a customer
    back from the provider's page); its answer moves it as any provider answer does."""
    with deps.uow() as uow:
        uow.transactions.ask_provider_now(tx.id, deps.clock())
        uow.commit()


def _provider_unavailable(deps: Deps, tx: Transaction, error: ProviderUnavailable) -> Transaction:
    """Keep the transaction Pending and ask again later, later the longer it has waited.

    A payment or payout of a disconnected account is not asked again: it waits for expiry.
    A refund is (its amount stays held, and the account may be connected again).
    """
    with deps.uow() as uow:
        current = uow.transactions.get_for_worker(tx.id, for_update=True)
        if current.status is Status.PENDING:
            now = deps.clock()
            current.provider_message = str(error)[:500]
            if isinstance(error, ProviderDisconnected) and current.kind is not Kind.REFUND:
                current.provider_check_at = None
            else:
                current.provider_check_at = now + retry_delay(now - current.created_at)
            current.updated_at = now
            uow.transactions.save_state(current)
            uow.commit()
        return current


def apply_outcome(deps: Deps, tx_id: int, outcome: Outcome, *, source: str,
                  strict: bool = False, on_moved: OnCreated = None,
                  recoverable: bool = False,
                  as_read: tuple[Transaction, Transaction | None] | None = None) -> Transaction:
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
    on again (the outcome is the same as without `as_read`).
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
            pass  # changed since it was read: decided again below, on the locked rows
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
        _take_provider_answer(tx, outcome)
        if tx.kind is not Kind.PAYMENT and tx.provider_check_at is None:
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
    _take_provider_answer(tx, outcome)
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
            original_after_refunds(original.amount, original.refund_captured) is Status.REFUNDED:
        original.status = Status.REFUNDED
        original.updated_at = now
        uow.transactions.save_state(original)
        uow.record_history(original, Status.CAPTURED, source, "Refunded in full")


def retry_delay(waited: timedelta) -> timedelta:
    """How long to wait before asking an unreachable provider again: a quarter of the time the
    transaction has waited so far, at least CLAIM_FOR and at most MAX_RETRY_DELAY."""
    return min(max(CLAIM_FOR, waited / 4), MAX_RETRY_DELAY)


def _take_provider_answer(tx: Transaction, outcome: Outcome) -> None:
    tx.provider_transaction_id = outcome.provider_transaction_id or tx.provider_transaction_id
    tx.provider_redirect_url = outcome.redirect_url or tx.provider_redirect_url
    tx.provider_status = outcome.provider_status
    tx.provider_message = outcome.provider_message
    tx.provider_check_at = outcome.check_again_at


def move_by_provider(deps: Deps, caller: Caller, tx_no: str, status: Status,
                     decline_reason: str | None, source: str) -> Transaction:
    """Move a payment or payout as its provider would (sandbox helper, hosted checkout); a live
    one only in a demo (SimulatedLiveMoney)."""
    tx = get_status(deps, caller, tx_no)
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


def claim_provider_calls(deps: Deps, tx_ids: list[int], now: datetime) -> set[int]:
    """Take due provider calls for this worker, for CLAIM_FOR (others skip them meanwhile; if
    this worker dies, another takes them once the claim lapses); the ids this worker took."""
    with deps.uow() as uow:
        claimed = uow.transactions.claim_provider_checks(tx_ids, now, now + CLAIM_FOR)
        uow.commit()
    return claimed


def expire_pending(deps: Deps, limit: int = 100) -> int:
    """Worker: Pending payments and payouts past the window become Declined, Transaction Expired.

    The provider is asked to void each first: one the customer paid meanwhile is recorded
    as the provider says, and one the provider cannot be asked about now waits for the worker.
    """
    now = deps.clock()
    with deps.uow(write=False) as uow:
        ids = uow.transactions.expired_pending(now - deps.pending_expiry, limit)
    for tx_id in ids:
        with deps.uow(write=False) as uow:
            tx = uow.transactions.get_for_worker(tx_id)
            method = uow.methods.of_transaction(tx)
        try:
            answer = deps.providers.for_method(method).cancel(tx) if method else None
        except ProviderDisconnected:
            answer = None  # it can never be asked again: expire it like the others
        except ProviderUnavailable as error:
            _provider_unavailable(deps, tx, error)
            continue
        if answer is None or answer.status in VOIDED:
            answer = Outcome(Status.DECLINED, tx.provider_transaction_id, "EXPIRED",
                             "Transaction expired before completion", decline_reason=EXPIRED)
        apply_outcome(deps, tx_id, answer, source="worker")
    return len(ids)


def cancel_transaction(deps: Deps, caller: Caller, tx_no: str, on_moved: OnCreated = None) -> Transaction:
    """Void a Pending or Authorized payment at its provider, then Declined, Payment Cancelled By User.

    A payment the provider reports as paid meanwhile is recorded as such and the cancel
    refused with its new status; one the provider cannot be asked about stays as it is.
    """
    tx = get_status(deps, caller, tx_no)
    check_cancel(tx)
    with deps.uow(write=False) as uow:
        method = uow.methods.of_transaction(tx)
    if method is None:
        raise ProviderUnavailable(f"Payment method {tx.payment_method} is no longer configured")
    answer = deps.providers.for_method(method).cancel(tx)
    if answer.status in VOIDED:
        answer = replace(answer, status=Status.DECLINED, decline_reason=CANCELLED,
                         provider_message=answer.provider_message or "Cancelled by the merchant")

    def audited(uow, moved: Transaction) -> None:
        uow.audit(caller, "payment.cancel", moved.tx_no, moved.amount, moved.currency,
                  {"status": moved.status.value})
        if on_moved:
            on_moved(uow, moved)

    tx = apply_outcome(deps, tx.id, answer, source=caller.actor, on_moved=audited)
    if tx.status is not Status.DECLINED:
        check_cancel(tx)  # paid meanwhile: refused, naming the status the provider gave
    return tx


def reset_sandbox(deps: Deps, caller: Caller) -> None:
    """Restore the test transactions of the caller's merchant's sandbox to their starting states."""
    sandbox = replace(caller, mode=Mode.SANDBOX)
    with deps.uow() as uow:
        install_fixtures(uow, sandbox, uow.merchants.default_callback_url(sandbox), deps.clock())
        uow.audit(sandbox, "sandbox.reset")
        uow.commit()


def list_banks(deps: Deps, caller: Caller, payment_method: str, currency: str,
               country: str | None) -> list[Bank]:
    """The banks of a payout method for a currency (and country); BankListRefused when it cannot."""
    with deps.uow(write=False) as uow:
        method = uow.methods.get(caller, payment_method)
    if method is None:
        raise BankListRefused("Payment method not found. Please check your payment method from request")
    if not method.bank_list:
        raise BankListRefused(f"Payment method {method.method_id} does not support bank lists")
    if currency not in method.currencies:
        raise BankListRefused(
            f"Currency {currency} is not supported by payment method {method.method_id}")
    alpha2 = None
    if country is not None:
        try:
            alpha2 = resolve_country(country)
        except BankListError as error:
            raise BankListRefused(error.message) from None
        if method.countries and alpha2 not in method.countries:
            raise BankListRefused(
                f"Country {alpha2} is not supported by payment method {method.method_id}")
    try:
        return deps.providers.for_method(method).banks(method, currency, alpha2)
    except BankListError as error:
        raise BankListRefused(error.message) from None
    except ProviderUnavailable:
        raise
    except Exception as error:  # whatever a provider's code raises: it failed to give the list
        raise ProviderUnavailable(f"bank list of {method.method_id} failed: {error!r}") from error
