"""Property: the refund rule, the database's refund guard and the service fake agree.

The rules live once in Python (app.payments.model.check_refund, on what
app.payments.refundable.RefundArithmetic says is left). The database holds one guard, the
conditional UPDATE ... RETURNING on the payment's row that keeps concurrent refunds from
over-refunding (app.store.refund_guard._refund_guard), for a refund's reservation and for a
request awaiting approval's hold; the services' tests stand the fake's guard in for it
(tests/unit/services/fakes.py). For the same generated payments and refund amounts, each of
them allows or refuses alike, and the Python rule refuses with the interface's message for the
first rule broken, in the interface's order. SQLite and PostgreSQL.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import literal, select, update

from app.config import Config
from app.payments import refunds
from app.payments.model import (
    Caller,
    FieldErrors,
    Kind,
    Mode,
    NotHeld,
    PaymentError,
    RefundRejected,
    Status,
    Transaction,
    check_refund,
    new_tx_no,
)
from app.payments.money import format_amount, from_minor, minor_digits
from app.payments.refundable import RefundArithmetic, refund_state
from app.payments.schemas import RefundRequest
from app.store.db import make_engine
from app.store.encryption import SecretBox
from app.store.merchants import create_merchant
from app.store.unit_of_work import UnitOfWork
from app.store.tables import transactions
from tests.unit.services.fakes import (
    CALLER,
    CARD,
    FULL_REFUND_ONLY,
    Clock,
    FakeProvider,
    FakeStore,
    make_deps,
)

NOW = datetime(2030, 1, 1, tzinfo=UTC)
# 0, 2 and 3 minor digits.
CURRENCIES = ("JPY", "EUR", "KWD")
# A method with partial refunds, one without, and one no longer configured (which allows them).
METHODS = (CARD.method_id, FULL_REFUND_ONLY.method_id, "card-no-longer-configured")


@dataclass(frozen=True)
class Case:
    """A payment (or payout, or refund) as its row keeps it, and a refund of it asked for."""

    kind: Kind
    status: Status
    currency: str
    method: str
    amount_minor: int
    captured_minor: int  # by Captured refunds
    pending_minor: int  # held by Pending refunds
    held_minor: int  # held by refund requests awaiting approval
    lost_minor: int  # taken back by lost or accepted disputes
    exists: bool  # False: the refund names a transaction the caller does not have
    refund: Decimal

    @property
    def amount(self) -> Decimal:
        return from_minor(self.amount_minor, self.currency)

    @property
    def remaining(self) -> Decimal:
        return from_minor(self.amount_minor - self.captured_minor - self.pending_minor
                          - self.held_minor - self.lost_minor, self.currency)


def mostly(usual, others):
    """A strategy drawing `usual` most of the time (nine draws in ten and more), otherwise one
    of `others`."""
    return st.sampled_from([usual] * 9 + list(others))


@st.composite
def cases(draw) -> Case:
    """Transactions of every kind and status (mostly Captured payments, so the amount rules are
    reached), refund totals and lost disputes within the amount, and refunds around the remaining and original
    amounts, some with a decimal more than the currency has."""
    currency = draw(st.sampled_from(CURRENCIES))
    amount_minor = draw(st.integers(1, 10_000_000))
    captured = draw(st.integers(0, amount_minor))
    pending = draw(st.integers(0, amount_minor - captured))
    held = draw(st.integers(0, amount_minor - captured - pending))
    # Some payments have had a dispute lost (or accepted): its amount is no longer refundable.
    lost = draw(st.integers(0, amount_minor - captured - pending - held)) if draw(
        mostly(False, [True] * 3)) else 0
    remaining = amount_minor - captured - pending - held - lost
    refund_minor = draw(st.sampled_from([remaining, remaining + 1, amount_minor, amount_minor + 1, 1])
                        | st.integers(1, amount_minor * 2))
    refund = from_minor(max(1, refund_minor), currency)
    if draw(mostly(False, [True] * 3)):
        refund += Decimal(1).scaleb(-(minor_digits(currency) + 1))
    return Case(
        kind=draw(mostly(Kind.PAYMENT, Kind)), status=draw(mostly(Status.CAPTURED, Status)),
        currency=currency, method=draw(st.sampled_from(METHODS)), amount_minor=amount_minor,
        captured_minor=captured, pending_minor=pending, held_minor=held, lost_minor=lost,
        exists=draw(mostly(True, [False])), refund=refund)


def interface_refusal(case: Case, tx_no: str) -> tuple[type, str] | None:
    """The interface's refusal of the case: the first refund rule it breaks, in the interface's
    order, with its message (and Paydesk's own rules in their places: payments only before the
    status, the currency's digits as rule 3's field validation, a method's full refunds last);
    None when every rule allows it."""
    def money(amount: Decimal) -> str:
        return format_amount(amount, case.currency)

    if not case.exists:
        return RefundRejected, f"Original transaction with TxNo {tx_no} not found"
    if case.kind is not Kind.PAYMENT:
        return RefundRejected, f"Only payments can be refunded; transaction {tx_no} is a {case.kind.value}"
    if case.status is not Status.CAPTURED:
        return RefundRejected, ("Transaction must be in Captured status to be refunded. "
                                f"Current status: {case.status.value}")
    digits = minor_digits(case.currency)
    if case.refund != case.refund.quantize(Decimal(1).scaleb(-digits)):
        return FieldErrors, f"Amount: Amount has more decimal places than {case.currency} allows ({digits})"
    if case.refund > case.amount:
        return RefundRejected, (f"Refund amount ({money(case.refund)}) cannot exceed original "
                                f"transaction amount ({money(case.amount)})")
    if case.refund > case.remaining:
        return RefundRejected, (f"Refund amount ({money(case.refund)}) exceeds remaining refundable "
                                f"amount ({money(case.remaining)})")
    if case.method == FULL_REFUND_ONLY.method_id and case.refund != case.amount:
        return RefundRejected, f"Partial refunds are not supported for payment method {case.method}"
    return None


def python_rule(payment: Transaction | None, method, tx_no: str, amount: Decimal) -> PaymentError | None:
    """check_refund on the payment as its row keeps it, through RefundArithmetic."""
    state = refund_state(payment, RefundArithmetic.of_payment(payment, method)) if payment else None
    try:
        check_refund(state, tx_no, amount)
    except PaymentError as refused:
        return refused
    return None


def assert_the_interfaces_words(refused: PaymentError | None, case: Case, tx_no: str) -> None:
    """The Python rule allowed what the interface allows, or refused with its words."""
    expected = interface_refusal(case, tx_no)
    if expected is None:
        assert refused is None, refused
    else:
        assert type(refused) is expected[0] and str(refused) == expected[1], (refused, expected)


def as_payment(case: Case, caller: Caller) -> Transaction:
    """The case's transaction in the caller's scope, not stored yet (its refund totals zero)."""
    return Transaction(
        merchant_id=caller.merchant_id, mode=caller.mode, tx_no=new_tx_no(case.kind), kind=case.kind,
        status=case.status, amount=case.amount, currency=case.currency,
        reference=f"guard-{uuid.uuid4().hex}", payment_method=case.method, created_at=NOW,
        updated_at=NOW)


# -- the database's guard ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def store(database_url):
    """Units of work over this run's database (SQLite, then PostgreSQL), and a merchant of its own
    (its default methods: `card` with partial refunds, `card-full-refund-only` without)."""
    engine = make_engine(database_url)
    try:
        box = SecretBox(Config().PAYDESK_ENCRYPTION_KEY)  # the merchant's webhook secrets are sealed
        with UnitOfWork(engine, box=box) as uow:
            merchant = create_merchant(uow, f"Guard {uuid.uuid4().hex[:8]}", "http://paydesk.test")
            uow.commit()
        yield engine, Caller(merchant.merchant_id, Mode.LIVE, "api:guard-property")
    finally:
        engine.dispose()


def stored(engine, caller: Caller, case: Case) -> str:
    """The case's transaction committed with its refund totals; its number."""
    with UnitOfWork(engine) as uow:
        payment = uow.transactions.add(as_payment(case, caller))
        uow.commit()
    with UnitOfWork(engine) as uow:
        uow.conn.execute(update(transactions).where(transactions.c.id == payment.id).values(
            refund_reserved_minor=case.captured_minor + case.pending_minor,
            refund_captured_minor=case.captured_minor, refund_held_minor=case.held_minor,
            dispute_lost_minor=case.lost_minor))
        uow.commit()
    return payment.tx_no


def guarded_in_a_unit(engine, take) -> Transaction | None:
    """What take(uow) returns in a unit that is rolled back: nothing of it is kept."""
    with UnitOfWork(engine) as uow:
        return take(uow)


def guard_with_the_writes(engine, caller: Caller, tx_no: str, amount: Decimal):
    """The refund route's unit: the guard sent first with a Pending refund's writes (sent here by
    the unit's next statement, in its transaction, and rolled back); the payment and the refund
    as the writes left them, or None when the guard refused."""
    with UnitOfWork(engine) as uow:
        payment = uow.transactions.reserve_refund_with_writes(caller, tx_no, amount)
        refund = refunds.pending_refund(caller, RefundRequest(tx_no, amount), payment, NOW)
        uow.transactions.add(refund)
        try:
            uow.conn.execute(select(literal(1)))  # the unit's next statement: its writes go first
        except NotHeld:
            return None
        refund_minor = uow.conn.execute(select(transactions.c.amount_minor)
                                        .where(transactions.c.id == refund.id)).scalar_one()
        return payment, refund, refund_minor


@settings(max_examples=150, deadline=None)
@given(case=cases())
def test_the_guard_allows_exactly_what_the_rules_allow_and_they_refuse_with_the_interfaces_words(
        store, case):
    engine, caller = store
    tx_no = stored(engine, caller, case) if case.exists else new_tx_no(Kind.PAYMENT)
    with UnitOfWork(engine, write=False) as uow:
        payment = uow.transactions.get(caller, tx_no)
        method = uow.methods.of_transaction(payment) if payment else None
    refused = python_rule(payment, method, tx_no, case.refund)
    assert_the_interfaces_words(refused, case, tx_no)

    reserved = guarded_in_a_unit(engine, lambda uow: uow.transactions.reserve_refund(
        caller, tx_no, case.refund))
    held = guarded_in_a_unit(engine, lambda uow: uow.transactions.hold_refund(caller, tx_no, case.refund))
    with_writes = guard_with_the_writes(engine, caller, tx_no, case.refund)
    allowed = refused is None
    assert (reserved is not None, held is not None, with_writes is not None) == (allowed,) * 3
    if allowed:
        assert reserved.refund_reserved == payment.refund_reserved + case.refund
        assert held.refund_held == payment.refund_held + case.refund
        after, refund, refund_minor = with_writes
        assert after == reserved
        assert (refund.currency, refund.reference, refund.payment_method, refund.original_id) == (
            payment.currency, payment.reference, payment.payment_method, payment.id)
        assert from_minor(refund_minor, payment.currency) == case.refund


# -- the service fake ---------------------------------------------------------------------------

def fake_store(case: Case) -> tuple[FakeStore, str]:
    """The fakes' store with the case's transaction and its refund totals committed."""
    store = FakeStore()
    store.add_merchant(CALLER)
    tx_no = None
    if case.exists:
        payment = store.seed(as_payment(case, CALLER))
        store.committed.transactions[payment.id] = replace(
            store.committed.transactions[payment.id],
            refund_reserved=from_minor(case.captured_minor + case.pending_minor, case.currency),
            refund_captured=from_minor(case.captured_minor, case.currency),
            refund_held=from_minor(case.held_minor, case.currency),
            dispute_lost=from_minor(case.lost_minor, case.currency))
        tx_no = payment.tx_no
    return store, tx_no or new_tx_no(Kind.PAYMENT)


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_the_fakes_guard_and_refund_service_allow_and_refuse_as_the_rules_do(case):
    store, tx_no = fake_store(case)
    payment = store.get(tx_no)
    with store.unit_of_work(write=False) as uow:
        method = uow.methods.of_transaction(payment) if payment else None
    refused = python_rule(payment, method, tx_no, case.refund)
    assert_the_interfaces_words(refused, case, tx_no)

    with store.unit_of_work() as uow:
        assert (uow.transactions.reserve_refund(CALLER, tx_no, case.refund) is not None) == (refused is None)

    clock = Clock()
    deps = make_deps(store, FakeProvider(store, clock), clock)
    try:
        made = refunds.refund(deps, CALLER, RefundRequest(tx_no, case.refund))
    except PaymentError as refusal:
        assert refused is not None and type(refusal) is type(refused) and str(refusal) == str(refused)
    else:
        assert refused is None, refused
        assert store.get(tx_no).refund_reserved == payment.refund_reserved + made.amount
