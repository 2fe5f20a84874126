"""Creating a payment or payout: every check before a write, then the Pending transaction and its
provider's answer (in process) or its provider call, due now for a worker."""
from __future__ import annotations

from dataclasses import dataclass

from . import bank_lists, settlement
from .accounts import AccountNumberError, iban_bank_mismatch, validate_account_number
from .deps import Deps, OnCreated
from .model import (
    Caller,
    DuplicateReference,
    FieldErrors,
    Kind,
    PaymentMethod,
    ReferenceTaken,
    Status,
    Transaction,
    check_simulator_may_decide,
    new_tx_no,
)
from .schemas import PAYOUT_ACTION, CreateTransactionRequest


def create_transaction(deps: Deps, caller: Caller, request: CreateTransactionRequest,
                       on_created: OnCreated = None) -> Transaction:
    """Create a payment or payout in Pending; its provider opens it.

    The method and the payout's destination are checked before any write (the bank check reads
    the stored bank list). A provider behind a network is never asked on the request's thread: the
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
        settlement.take_provider_answer(tx, answering_now.create(tx, method))
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
    bank; a reference already used), and nothing written. BankListNotReady while the payout's
    bank list has no stored copy yet (app.payments.bank_lists).

    create_transaction runs it first; the dashboard's payout review runs it alone, so a payout
    confirmed after review meets the same rules. create_transaction skips reading the reference
    (`read_reference=False`): its insert refuses a reference already used, after these same
    checks, which also catches a create running meanwhile.
    """
    with deps.uow(write=False) as uow:
        method = uow.methods.get(caller, request.payment.payment_method)
        existing = uow.transactions.find_by_reference(caller, request.reference) if read_reference else None
    return check_read(deps, caller, request, method, existing)


def check_read(deps: Deps, caller: Caller, request: CreateTransactionRequest,
               method: PaymentMethod | None, existing_tx_no: str | None, *,
               knows_bank=bank_lists.knows_bank) -> CheckedCreate:
    """check_create's checks on what it read: the method (None: not found), the txNo of a
    transaction with the reference (None: unused), and how a bank is looked up in the method's
    list. A batch reads these once for all its rows (app.payments.batches) and checks each row here.
    """
    _check_method(method, request)
    check_simulator_may_decide(caller.mode, method.method_id, method, demo=deps.demo_mode)
    # A payout's bank is checked against its method's list; a payment needs no provider here.
    payment_details = _payout_details(deps, method, request, knows_bank) if method.is_payout else {}
    if existing_tx_no is not None:
        raise DuplicateReference(request.reference, existing_tx_no)
    return CheckedCreate(method, payment_details)


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


def _payout_details(deps: Deps, method: PaymentMethod, request: CreateTransactionRequest,
                    knows_bank=bank_lists.knows_bank) -> dict:
    """Checked destination account of a payout: bank from the method's list, number by its rule."""
    payment = request.payment
    errors: dict[str, list[str]] = {}
    if method.bank_list and not knows_bank(deps, method, request.currency, payment.bank,
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
