"""Transactions as the interface shows them: statuses, kinds, allowed moves, decline reasons, domain errors."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING

import secrets

from .money import fits_currency, format_amount, minor_digits

if TYPE_CHECKING:
    from .tokens import TokenGrant


class Status(StrEnum):
    """Transaction status words, exactly as the interface writes them."""

    PENDING = "Pending"
    CAPTURED = "Captured"
    FAILED = "Failed"
    DECLINED = "Declined"
    REFUNDED = "Refunded"
    AUTHORIZED = "Authorized"
    CHARGEBACK = "Chargeback"


class Kind(StrEnum):
    """What a transaction is; the webhook's transactionType is its title-cased value."""

    PAYMENT = "payment"
    PAYOUT = "payout"
    REFUND = "refund"

    @property
    def transaction_type(self) -> str:
        """The webhook's transactionType word: Payment, Payout or Refund."""
        return self.value.title()


# The provider name of the methods the built-in simulator serves.
SIMULATOR = "simulator"


class Mode(StrEnum):
    """Every token, transaction and webhook secret is live or sandbox."""

    LIVE = "live"
    SANDBOX = "sandbox"


COMMON_DECLINE_REASONS = (
    "Transaction Expired",
    "Payment Cancelled By User",
    "Declined By Bank",
    "Insufficient Funds",
    "Provider Error",
    "Country Not Supported On Payment Method",
    "Currency Not Supported",
    "Payment Method Not Available",
    "Invalid Card Details",
    "Card Expired",
    "3DS Authentication Failed",
    "Suspected Fraud",
    "Daily Limit Exceeded",
    "Restricted Card",
)
EXPIRED = "Transaction Expired"

# The moves a payment may make through its provider (checkout, sandbox helper, worker).
# Refunded is reached only through refunds, never set directly.
PAYMENT_MOVES: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset({Status.AUTHORIZED, Status.CAPTURED, Status.DECLINED, Status.FAILED}),
    Status.AUTHORIZED: frozenset({Status.CAPTURED, Status.DECLINED, Status.FAILED}),
    Status.CAPTURED: frozenset({Status.CHARGEBACK}),
}
# A payout is sent, never held for capture nor disputed: no connector reports an Authorized or a
# Chargeback for one (Paystack's reversed transfer is Declined), so the sandbox helper does not
# either.
PAYOUT_MOVES: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset({Status.CAPTURED, Status.DECLINED, Status.FAILED}),
}
REFUND_MOVES: dict[Status, frozenset[Status]] = {
    Status.PENDING: frozenset({Status.CAPTURED, Status.FAILED, Status.DECLINED}),
}
# Each kind's moves (can_move).
_MOVES = {Kind.PAYMENT: PAYMENT_MOVES, Kind.PAYOUT: PAYOUT_MOVES, Kind.REFUND: REFUND_MOVES}
# Refunds that hold part of the original: Failed and Declined ones free their amount.
ACTIVE_REFUND_STATUSES = (Status.PENDING, Status.CAPTURED)
DECLINE_STATUSES = frozenset({Status.DECLINED, Status.FAILED})


def can_move(kind: Kind, current: Status, target: Status) -> bool:
    """Whether a transaction of this kind may move from current to target."""
    return target in _MOVES[kind].get(current, frozenset())


TX_NO_PREFIX = {Kind.PAYMENT: "PAY", Kind.PAYOUT: "POU", Kind.REFUND: "RFD"}


# Transaction numbers are short (PAY-0123456789ABCDEF, SBX-REFUND-DECLINED): longer text names none.
MAX_TX_NO_LENGTH = 100


def new_tx_no(kind: Kind) -> str:
    """A fresh, unguessable transaction number, e.g. RFD-9F2C41D07A3B5E68."""
    return f"{TX_NO_PREFIX[kind]}-{secrets.token_hex(8).upper()}"


class PaymentError(Exception):
    """A request the rules refuse; str() is the message the merchant reads."""


class FieldErrors(PaymentError):
    """Field validation failures: {"Amount": ["Amount must be greater than 0"]}."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items()))
        self.errors = errors

    @classmethod
    def one(cls, field_name: str, message: str) -> "FieldErrors":
        """A single field's single error."""
        return cls({field_name: [message]})


class RefundRejected(PaymentError):
    """A refund refused by one of the interface's refund rules (HTTP 400 {error})."""


class CancelRejected(PaymentError):
    """A cancel the transaction's kind or status does not allow (HTTP 400 {error})."""


# What a cancel may void: a payment the customer has not paid yet, or one only authorized.
CANCELLABLE_STATUSES = (Status.PENDING, Status.AUTHORIZED)
CANCELLED = "Payment Cancelled By User"


def check_cancel(tx: "Transaction") -> None:
    """Refuse a cancel of anything but a Pending or Authorized payment, with the interface's words."""
    if tx.kind is not Kind.PAYMENT:
        raise CancelRejected(
            f"Only payments can be cancelled; transaction {tx.tx_no} is a {tx.kind.value}")
    if tx.status not in CANCELLABLE_STATUSES:
        raise CancelRejected(
            "Only Pending or Authorized transactions can be cancelled. "
            f"Current status: {tx.status}")


def cancel_outstanding(tx: "Transaction") -> bool:
    """A cancel was asked of this payment and its provider has not answered it yet: it is still
    Pending or Authorized, and a worker is to ask the provider to void it."""
    return tx.cancel_requested_at is not None and tx.status in CANCELLABLE_STATUSES


class TransactionNotFound(PaymentError):
    """No transaction with this number for this merchant and mode."""

    def __init__(self, tx_no: str):
        super().__init__(f"Transaction with TxNo {tx_no} not found")
        self.tx_no = tx_no


class DuplicateReference(PaymentError):
    """A create whose reference the merchant already used in this mode."""

    def __init__(self, reference: str, existing_tx_no: str):
        super().__init__(f"Transaction with reference {reference} already exists")
        self.existing_tx_no = existing_tx_no


class ReferenceTaken(PaymentError):
    """The store refused a second transaction with the same reference (a race the service resolves)."""


class NotHeld(PaymentError):
    """The condition of a unit's writes failed when they were sent (the refund guard refused the
    refund's amount, or a row changed since it was read); none of the unit's writes were made."""


class InvalidMove(PaymentError):
    """A status change the transaction's current state does not allow."""

    def __init__(self, tx_no: str, current: Status, target: Status):
        super().__init__(f"Transaction {tx_no} cannot move from {current} to {target}")


class BankListRefused(PaymentError):
    """The bank list endpoint's Validation Error, with its message."""


# What the API (503) and the dashboard say while a provider account's bank list has no stored copy.
BANK_LIST_FETCHING = "The bank list is being fetched from the provider; try again in a moment."


class BankListNotReady(PaymentError):
    """A provider account's bank list has no stored copy yet: it is now due for the worker to
    fetch, and the request that needed it (a bank list, a payout's bank check) changed nothing."""

    def __init__(self) -> None:
        super().__init__(BANK_LIST_FETCHING)


@dataclass
class RefundState:
    """What the refund rules need of an original transaction; its remaining refundable amount
    is app.payments.refundable.RefundArithmetic's (refund_state makes one)."""

    tx_no: str
    kind: Kind
    status: Status
    amount: Decimal
    currency: str
    remaining_refundable: Decimal
    partial_refunds: bool
    payment_method: str = ""


def check_refund(original: RefundState | None, tx_no: str, amount: Decimal) -> None:
    """Apply the refund rules in the interface's order; raise on the first that fails.

    Rule 3 (amount > 0) is field validation and runs before this, as decided.
    """
    if original is None:
        raise RefundRejected(f"Original transaction with TxNo {tx_no} not found")
    if original.kind is not Kind.PAYMENT:
        raise RefundRejected(
            f"Only payments can be refunded; transaction {tx_no} is a {original.kind.value}"
        )
    if original.status is not Status.CAPTURED:
        raise RefundRejected(
            f"Transaction must be in Captured status to be refunded. Current status: {original.status}"
        )
    currency = original.currency
    if not fits_currency(amount, currency):
        raise FieldErrors.one(
            "Amount", f"Amount has more decimal places than {currency} allows ({minor_digits(currency)})"
        )
    if amount > original.amount:
        raise RefundRejected(
            f"Refund amount ({format_amount(amount, currency)}) cannot exceed original "
            f"transaction amount ({format_amount(original.amount, currency)})"
        )
    if amount > original.remaining_refundable:
        raise RefundRejected(
            f"Refund amount ({format_amount(amount, currency)}) exceeds remaining refundable "
            f"amount ({format_amount(original.remaining_refundable, currency)})"
        )
    if not original.partial_refunds and amount != original.amount:
        raise RefundRejected(
            f"Partial refunds are not supported for payment method {original.payment_method}"
        )


def original_after_refunds(original_amount: Decimal, captured_refunds: Decimal,
                           lost_to_disputes: Decimal = Decimal(0)) -> Status:
    """Captured refunds reaching the original amount (less what lost disputes took back, which
    no refund may return) make it Refunded; below, it stays Captured."""
    return Status.REFUNDED if captured_refunds >= original_amount - lost_to_disputes else Status.CAPTURED


@dataclass
class PaymentMethod:
    """A merchant's payment method: a card method or a payout method."""

    method_id: str
    name: str
    kind: str  # "card" | "payout"
    currencies: list[str]
    countries: list[str]  # alpha-2; empty means any
    bank_list: str | None  # bank data source, None when the method has no bank list
    account_rule: str | None
    partial_refunds: bool
    provider: str = SIMULATOR
    # The merchant's provider account that serves it (None: the simulator, in every mode).
    provider_account_id: int | None = None
    # False once its provider account is disconnected: it takes no new transactions.
    active: bool = True

    @property
    def is_payout(self) -> bool:
        """Payout methods send money out; card methods take it in."""
        return self.kind == "payout"


class SimulatedLiveMoney(PaymentError):
    """A live transaction the simulator would decide, outside a demo (HTTP 400 {error})."""

    def __init__(self, method_id: str):
        super().__init__(f"Payment method {method_id} is served by the simulator, which moves no "
                         "real money in live mode; connect a provider for it")


def simulator_may_decide(mode: Mode, method: PaymentMethod | None, *, demo: bool) -> bool:
    """False for a live transaction that no provider account serves, unless the deployment runs
    as a demo: the simulator takes and pays no real money, so its answer (or the payer's click on
    its checkout page) must never stand for a live one. A method no longer configured counts as
    the simulator's: nothing else could decide it."""
    simulated = method is None or (method.provider_account_id is None and method.provider == SIMULATOR)
    return mode is not Mode.LIVE or not simulated or demo


def check_simulator_may_decide(mode: Mode, method_id: str, method: PaymentMethod | None, *,
                               demo: bool) -> None:
    """Refuse (SimulatedLiveMoney) what simulator_may_decide does not allow."""
    if not simulator_may_decide(mode, method, demo=demo):
        raise SimulatedLiveMoney(method_id)


@dataclass
class Transaction:
    """A payment, payout or refund as stored."""

    merchant_id: int
    mode: Mode
    tx_no: str
    kind: Kind
    status: Status
    amount: Decimal
    currency: str
    reference: str
    payment_method: str
    created_at: datetime
    updated_at: datetime
    id: int | None = None
    statement_descriptor: str | None = None
    callback_url: str | None = None
    billing: dict = field(default_factory=dict)
    payment_details: dict = field(default_factory=dict)
    original_id: int | None = None
    original_tx_no: str | None = None
    decline_reason: str | None = None
    provider_transaction_id: str | None = None
    provider_status: str | None = None
    provider_message: str | None = None
    provider_redirect_url: str | None = None
    success_url: str | None = None
    pending_url: str | None = None
    failure_url: str | None = None
    udf1: str | None = None
    udf2: str | None = None
    udf3: str | None = None
    created_by: str = "api"
    provider_check_at: datetime | None = None
    # When a cancel was asked that a worker is to take to the provider (see cancel_outstanding).
    cancel_requested_at: datetime | None = None
    # A payment's refunds as its row keeps them: what the Pending and Captured ones hold, and
    # what the Captured ones returned (zero for payouts and refunds).
    refund_reserved: Decimal = Decimal(0)
    refund_captured: Decimal = Decimal(0)
    # What its refund requests awaiting approval hold (app.payments.approvals).
    refund_held: Decimal = Decimal(0)
    # What its lost and accepted disputes took back (app.payments.disputes): not refundable.
    dispute_lost: Decimal = Decimal(0)

    @property
    def customer_email(self) -> str | None:
        """The customer's e-mail as the list searches it (billing.email); None without billing."""
        return searchable_customer(self.billing)[0]

    @property
    def customer_name(self) -> str | None:
        """The customer's name as the list searches it ("First Last"); None without billing."""
        return searchable_customer(self.billing)[1]

    @property
    def customer_reference(self) -> str | None:
        """The merchant's id of the customer (billing.customerReference), the customer page's
        key; None without one. Migration 0030 derives the same value for older rows."""
        return (self.billing or {}).get("customerReference") or None

    @property
    def opened_at_provider(self) -> bool:
        """The provider has answered its create (it gave an id, a status word or a payment page)."""
        return bool(self.provider_transaction_id or self.provider_status or self.provider_redirect_url)


@dataclass(frozen=True)
class StoredStatus:
    """What the status response shows of a transaction, read without the rest of its row (the
    API's status read is the hottest request). Its fields are named as Transaction's."""

    tx_no: str
    status: Status
    amount: Decimal
    currency: str
    reference: str
    created_at: datetime
    decline_reason: str | None
    provider_transaction_id: str | None
    provider_status: str | None
    provider_message: str | None
    success_url: str | None
    pending_url: str | None
    failure_url: str | None
    udf1: str | None
    udf2: str | None
    udf3: str | None


def searchable_customer(billing: dict | None) -> tuple[str | None, str | None]:
    """The e-mail and the "First Last" name a billing block is found by; None for what it lacks.

    Migration 0009 derives the same two values in SQL for the rows stored before it.
    """
    billing = billing or {}
    email = billing.get("email") or None
    name = " ".join(part for part in (billing.get("firstName"), billing.get("lastName")) if part)
    return email, name.strip() or None


@dataclass(frozen=True)
class Caller:
    """Who is acting: the merchant and mode every read and write is scoped to."""

    merchant_id: int
    mode: Mode
    actor: str  # "api:<token prefix>" or a dashboard user's e-mail
    ip: str | None = None
    # What the API token allows (app.payments.tokens); None for dashboard users and workers.
    grant: TokenGrant | None = None
