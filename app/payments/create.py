"""Creating a payment or payout: every check before a write, then the Pending transaction and its
provider's answer (in process) or its provider call, due now for a worker."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import bank_lists, settlement
from .accounts import AccountNumberError, iban_bank, iban_bank_mismatch, validate_account_number
from .deps import Deps, OnCreated
from .formats import storable_text
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
from .schemas import PAYOUT_ACTION, CreateTransactionRequest, parse_create
from .tokens import LimitKind, require_scope, take_from_daily_limit


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
    # The API lets a token with either scope in (app.auth.scopes); the method says which it needs.
    require_scope(caller.grant, "payouts" if kind is Kind.PAYOUT else "payments")
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
            if kind is Kind.PAYOUT:
                take_from_daily_limit(uow, caller, LimitKind.PAYOUT, tx.amount, tx.currency, now)
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


# How a bank code is looked up in a method's list: bank_lists.knows_bank(deps, method, currency,
# code, country), or a batch's reader that remembers its answers (app.payments.batches).
KnowsBank = Callable[[Deps, PaymentMethod, str, str, "str | None"], bool]


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
    checks, which also catches a create running meanwhile. The method's and the payout account's
    field errors are raised together, in one FieldErrors.
    """
    with deps.uow(write=False) as uow:
        method = uow.methods.get(caller, request.payment.payment_method)
        existing = uow.transactions.find_by_reference(caller, request.reference) if read_reference else None
    return check_read(deps, caller, request, method, existing)


def check_read(deps: Deps, caller: Caller, request: CreateTransactionRequest,
               method: PaymentMethod | None, existing_tx_no: str | None, *,
               knows_bank: KnowsBank = bank_lists.knows_bank) -> CheckedCreate:
    """check_create's checks on what it read: the method (None: not found), the txNo of a
    transaction with the reference (None: unused), and how a bank is looked up in the method's
    list. A batch reads these once for all its rows (app.payments.batches) and checks each row here.
    """
    payment_details = _checked_parts(deps, caller, method, CreateParts.of(request), {}, knows_bank)
    if existing_tx_no is not None:
        raise DuplicateReference(request.reference, existing_tx_no)
    return CheckedCreate(method, payment_details)


def check_create_body(deps: Deps, caller: Caller,
                      body: dict) -> tuple[CreateTransactionRequest, CheckedCreate]:
    """A create body read and checked as the API's create would, with every field error at once.

    The API reads a body first and stops at its field errors (parse_create); a form wants all of
    them in one pass, so when the body has field errors, the method and payout-account checks
    still run on the fields that were read well, and their errors for the other fields are added
    (a field keeps the body's own errors). Raises what check_create raises.
    """
    try:
        request = parse_create(body)
    except FieldErrors as refused:
        parts = CreateParts.of_body(body)
        if parts.payment_method is not None:
            with deps.uow(write=False) as uow:
                method = uow.methods.get(caller, parts.payment_method)
            try:
                _checked_parts(deps, caller, method, parts, refused.errors)
            except FieldErrors as more:
                raise FieldErrors(more.errors) from None
        raise
    return request, check_create(deps, caller, request)


@dataclass(frozen=True)
class CreateParts:
    """What the method and payout-account checks read of a create request."""

    payment_method: str | None
    currency: str | None
    country: str | None
    transaction_action: str | None
    bank: str | None
    holder: str | None
    account_number: str | None

    @classmethod
    def of(cls, request: CreateTransactionRequest) -> CreateParts:
        """The parts of a request read well."""
        payment = request.payment
        return cls(payment.payment_method, request.currency, request.billing.country,
                   request.transaction_action, payment.bank, payment.holder, payment.account_number)

    @classmethod
    def of_body(cls, body: object) -> CreateParts:
        """The parts of a body that failed to read: its text values, the others missing."""
        body = body if isinstance(body, dict) else {}
        billing = body.get("billing") if isinstance(body.get("billing"), dict) else {}
        payment = body.get("payment") if isinstance(body.get("payment"), dict) else {}

        def text(value: object) -> str | None:  # what cannot be stored is refused by its own error
            return value.strip() or None if isinstance(value, str) and storable_text(value) else None

        return cls(text(payment.get("paymentMethod")), text(body.get("currency")),
                   text(billing.get("country")), text(body.get("transactionAction")),
                   text(payment.get("bank")), text(payment.get("holder")),
                   text(payment.get("accountNumber")))


def _checked_parts(deps: Deps, caller: Caller, method: PaymentMethod | None, parts: CreateParts,
                   errors: dict[str, list[str]], knows_bank: KnowsBank = bank_lists.knows_bank) -> dict:
    """The method's and the payout account's checks, their errors added to `errors` (a field
    already in error keeps its own), all raised at once; the payout's checked account otherwise."""
    errors = {name: list(messages) for name, messages in errors.items()}

    def add(found: dict[str, list[str]]) -> None:
        for name, messages in found.items():
            errors.setdefault(name, messages)

    if method is None:
        add({"Payment.PaymentMethod": [f"Payment method {parts.payment_method} not found"]})
        raise FieldErrors(errors)
    add(_check_method(method, parts))
    check_simulator_may_decide(caller.mode, method.method_id, method, demo=deps.demo_mode)
    payment_details: dict = {}
    if method.is_payout:
        # A payout's bank is checked against its method's list; a payment needs no provider here.
        payment_details, found = _payout_details(deps, method, parts, set(errors), knows_bank)
        add(found)
    if errors:
        raise FieldErrors(errors)
    return payment_details


def _existing_reference(deps: Deps, caller: Caller, reference: str) -> str:
    with deps.uow(write=False) as uow:
        return uow.transactions.find_by_reference(caller, reference)


def bank_from_account(method: PaymentMethod) -> bool:
    """Whether a payout of the method may leave out its bank: an IBAN names its bank (whose BIC
    the payout is then sent with), where schwifty's registry knows the IBAN's bank code."""
    return method.account_rule == "iban"


def _check_method(method: PaymentMethod, parts: CreateParts) -> dict[str, list[str]]:
    """The method must take the currency and country, and get the fields its kind needs."""
    errors: dict[str, list[str]] = {}
    if parts.currency is not None and parts.currency not in method.currencies:
        errors["Currency"] = [
            f"Currency {parts.currency} is not supported by payment method {method.method_id}"
        ]
    country = parts.country
    if country and method.countries and country not in method.countries:
        errors["Billing.Country"] = [
            f"Country {country} is not supported by payment method {method.method_id}"
        ]
    if method.is_payout:
        if parts.transaction_action != PAYOUT_ACTION:
            errors["TransactionAction"] = [
                f"TransactionAction must be {PAYOUT_ACTION} for payout method {method.method_id}"
            ]
        if not parts.holder:
            errors["Payment.Holder"] = ["Payment.Holder is required for payouts"]
        if not parts.account_number:
            errors["Payment.AccountNumber"] = ["Payment.AccountNumber is required for payouts"]
        if method.bank_list and not parts.bank and not (bank_from_account(method) and parts.account_number):
            errors["Payment.Bank"] = [_bank_required(method)]
        if not method.bank_list and parts.bank:
            errors["Payment.Bank"] = [f"Payment method {method.method_id} does not take a bank"]
    else:
        if parts.transaction_action is not None:
            errors["TransactionAction"] = ["TransactionAction applies to payout methods only"]
        for label, value in (("Payment.Bank", parts.bank), ("Payment.Holder", parts.holder),
                             ("Payment.AccountNumber", parts.account_number)):
            if value is not None:
                errors[label] = [f"{label} applies to payout methods only"]
    return errors


def _bank_required(method: PaymentMethod) -> str:
    return f"Payment.Bank is required for payment method {method.method_id}"


def _payout_details(deps: Deps, method: PaymentMethod, parts: CreateParts, skip: set[str],
                    knows_bank: KnowsBank) -> tuple[dict, dict[str, list[str]]]:
    """Checked destination account of a payout: bank from the method's list (or, left out, from
    the IBAN), number by its rule; and the field errors found (none for the fields in `skip`,
    already refused, and none that need a field missing or refused)."""
    errors: dict[str, list[str]] = {}
    bank = parts.bank
    # The list is the currency's (and country's): looked up only with both taken by the method.
    list_known = parts.currency is not None and not {"Currency", "Billing.Country"} & skip
    if (method.bank_list and bank and list_known and "Payment.Bank" not in skip
            and not knows_bank(deps, method, parts.currency, bank, parts.country)):
        errors["Payment.Bank"] = [
            f"Bank {bank} is not in the bank list of payment method {method.method_id}"
        ]
    account = parts.account_number
    if method.account_rule and account and "Payment.AccountNumber" not in skip:
        try:
            account = validate_account_number(method.account_rule, account, bank, parts.currency)
        except AccountNumberError as error:
            errors["Payment.AccountNumber"] = [str(error)]
        else:
            if method.account_rule == "iban" and bank:
                mismatch = iban_bank_mismatch(account, bank)
                if mismatch and "Payment.Bank" not in errors and "Payment.Bank" not in skip:
                    errors["Payment.Bank"] = [mismatch]
            elif method.bank_list and bank_from_account(method) and not bank:
                bank = _bank_of_iban(deps, method, parts, account, errors, knows_bank)
    return {"bank": bank, "holder": parts.holder, "accountNumber": account}, errors


def _bank_of_iban(deps: Deps, method: PaymentMethod, parts: CreateParts, iban: str,
                  errors: dict[str, list[str]], knows_bank: KnowsBank) -> str | None:
    """The BIC of an IBAN's own bank, for a payout sent without a bank; its error otherwise.

    The bank must be in the method's list (any country of it: the customer's billing country
    need not be the bank's); an IBAN whose bank the registry does not know needs Payment.Bank.
    """
    found = iban_bank(iban)
    if found is None:
        errors["Payment.Bank"] = [_bank_required(method)]
        return None
    if parts.currency is not None and not knows_bank(deps, method, parts.currency, found.bic, None):
        errors["Payment.AccountNumber"] = [
            f"The bank of this IBAN, {found.name} ({found.bic}), is not in the bank list of "
            f"payment method {method.method_id}"]
        return None
    return found.bic


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
