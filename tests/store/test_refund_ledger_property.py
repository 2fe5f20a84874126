"""Property: in whatever order refunds, provider answers and worker recovery come, a payment's row
keeps its refund totals equal to the sums of its refund rows, never holds more than its amount,
and is Refunded exactly when its Captured refunds make its amount.

Every refund request is also checked against the refund rules run on the refund rows' sums
(the way refunds were checked before the totals lived on the row): the conditional update
accepts what they accept and the service refuses with their message.

Refund requests awaiting approval (app.payments.approvals) join in: recorded, approved, rejected
and expired in any order, what the row holds for them is the sum of the awaiting ones, and they
count against the refunds' amount (and the refunds against them) as the rules say.

Runs on a database of its own (SQLite and PostgreSQL), so the worker sees only this test's work.
"""
from __future__ import annotations

import uuid
from collections import deque
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select

from app.cli import upgrade_database
from app.config import Config
from app.payments import approvals, create, refunds, settlement
from app.payments.approvals import ApprovalRefused
from app.payments.model import (
    ACTIVE_REFUND_STATUSES,
    Caller,
    FieldErrors,
    Kind,
    Mode,
    RefundRejected,
    RefundState,
    Status,
    check_refund,
)
from app.payments.money import from_minor, minor_digits, to_minor
from app.payments.provider import Outcome, ProvidersByName, ProviderUnavailable
from app.payments.refundable import RefundArithmetic
from app.payments.schemas import parse_create, parse_refund
from app.payments.deps import Deps
from app.store.db import make_engine
from app.store.encryption import SecretBox
from app.store.ledger import check_refund_totals
from app.store.merchants import create_merchant
from app.store.unit_of_work import UnitOfWork
from app.store.tables import approval_requests, transactions
from tests.conftest import payment_body
from tests.support.databases import create_postgres_database
from tests.support.lost_commits import LostCommits, crash_loses_relaxed_commits

ANSWERS = ("Captured", "Failed", "Declined", "Pending", "unreachable")
# (method, currency): partial refunds or not, and 2, 0 and 3 minor digits.
PAYMENTS = (("card", "EUR"), ("card", "JPY"), ("card", "KWD"), ("card-full-refund-only", "EUR"))


class ScriptedProvider:
    """A provider behind a network whose next answers the test sets (one for every call)."""

    in_process = False

    def __init__(self):
        self.answer = "Captured"
        self.refund_calls: deque[str] = deque()

    def _outcome(self, tx, now: datetime) -> Outcome:
        if self.answer == "unreachable":
            raise ProviderUnavailable("connect timeout")
        status = Status(self.answer)
        reason = {Status.FAILED: "Provider Error", Status.DECLINED: "Declined By Bank"}.get(status)
        return Outcome(status, f"re_{tx.tx_no}", self.answer.upper(), f"{self.answer} by the script",
                       decline_reason=reason)

    def create(self, tx, method) -> Outcome:
        return Outcome(Status.PENDING, f"pi_{tx.tx_no}", "CREATED", "Awaiting customer")

    def refund(self, refund, original, now: datetime) -> Outcome:
        self.refund_calls.append(refund.tx_no)
        return self._outcome(refund, now)

    def status(self, tx, original, now: datetime) -> Outcome:
        return self._outcome(tx, now)


class Clock:
    """Time that moves only when the test moves it."""

    def __init__(self):
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def ledger_database(request, tmp_path_factory):
    """A migrated database for this module alone."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('ledger') / 'ledger.db'}"
        upgrade_database(url)
        yield url
        return
    url, drop = create_postgres_database()
    upgrade_database(url)
    yield url
    drop()


@pytest.fixture(scope="module")
def world(ledger_database):
    """Services over that database with a scripted provider, a still clock and one merchant."""
    engine = make_engine(ledger_database)
    provider, clock = ScriptedProvider(), Clock()
    box = SecretBox(Config().PAYDESK_ENCRYPTION_KEY)  # the merchant's webhook secrets are sealed
    deps = Deps(uow=lambda write=True: UnitOfWork(engine, write=write, box=box),
                providers=ProvidersByName({"simulator": provider}), clock=clock, demo_mode=True)
    with deps.uow() as uow:
        merchant = create_merchant(uow, f"Ledger {uuid.uuid4().hex[:8]}", "http://paydesk.test")
        uow.commit()
    yield engine, deps, provider, clock, Caller(merchant.merchant_id, Mode.LIVE, "api:property")
    engine.dispose()


class RefundLedger(RuleBasedStateMachine):
    """One payment, refunded, answered, lost and recovered in any order."""

    world = None  # set by the test: (engine, deps, provider, clock, caller)

    def __init__(self):
        super().__init__()
        self.engine, self.deps, self.provider, self.clock, self.caller = self.world
        self.lost = LostCommits()
        self.crashing = replace(self.deps, uow=crash_loses_relaxed_commits(self.engine, self.lost))

    @initialize(kind=st.sampled_from(PAYMENTS), minor=st.integers(1, 50_000))
    def a_captured_payment(self, kind, minor):
        method, currency = kind
        amount = from_minor(minor, currency)
        created = create.create_transaction(self.deps, self.caller, parse_create(payment_body(
            amount=amount, currency=currency, payment={"paymentMethod": method})))
        self.payment = settlement.move_by_provider(self.deps, self.caller, created.tx_no, Status.CAPTURED,
                                                   None, "sandbox")
        self.partial_refunds = method == "card"
        self.refund_ids: list[int] = []
        self.awaiting: list[int] = []  # ids of this payment's requests awaiting approval

    # -- what the database holds ------------------------------------------------------------

    def rows(self):
        """The payment's row and its refund rows."""
        with self.deps.uow(write=False) as uow:
            payment = uow.conn.execute(select(transactions)
                                       .where(transactions.c.id == self.payment.id)).one()
            refunds = uow.conn.execute(select(transactions).where(
                transactions.c.original_id == self.payment.id,
                transactions.c.kind == Kind.REFUND.value)).all()
        return payment, refunds

    def held_by_awaiting_requests(self) -> int:
        """What the payment's requests awaiting approval add up to, in minor units."""
        with self.deps.uow(write=False) as uow:
            return sum(uow.conn.execute(select(approval_requests.c.amount_minor).where(
                approval_requests.c.original_id == self.payment.id,
                approval_requests.c.state == "awaiting")).scalars())

    def rules_on_the_refund_rows(self, amount: Decimal) -> Exception | None:
        """What check_refund says of this amount when the refund rows are summed."""
        payment, refunds = self.rows()
        currency = payment.currency

        def total(*statuses: Status) -> Decimal:
            return from_minor(sum(r.amount_minor for r in refunds if Status(r.status) in statuses), currency)

        arithmetic = RefundArithmetic(
            original=from_minor(payment.amount_minor, currency), refunded=total(Status.CAPTURED),
            pending=total(Status.PENDING), currency=currency, partial_refunds=self.partial_refunds,
            awaiting_approval=from_minor(self.held_by_awaiting_requests(), currency))
        state = RefundState(
            tx_no=payment.tx_no, kind=Kind(payment.kind), status=Status(payment.status),
            amount=arithmetic.original, currency=currency, remaining_refundable=arithmetic.remaining,
            partial_refunds=self.partial_refunds, payment_method=payment.payment_method)
        try:
            check_refund(state, payment.tx_no, amount)
        except (RefundRejected, FieldErrors) as refused:
            return refused
        return None

    # -- steps --------------------------------------------------------------------------------

    def _refund(self, deps, fraction: float, extra_digit: bool, answer: str) -> None:
        currency = self.payment.currency
        minor = max(1, round(to_minor(self.payment.amount, currency) * fraction))
        amount = from_minor(minor, currency)
        if extra_digit:  # one decimal more than the currency has: a field error, after rules 1-2
            amount += Decimal(1).scaleb(-(minor_digits(currency) + 1))
        expected = self.rules_on_the_refund_rows(amount)
        self.provider.answer = answer
        request = parse_refund({"txNo": self.payment.tx_no, "amount": amount})
        try:
            created = refunds.refund(deps, self.caller, request)
        except (RefundRejected, FieldErrors) as refused:
            assert type(refused) is type(expected) and str(refused) == str(expected), (refused, expected)
            return
        assert expected is None, f"accepted a refund the rules refuse: {expected}"
        self.refund_ids.append(created.id)

    @rule(fraction=st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.2]) | st.floats(0, 1.1),
          extra_digit=st.booleans(), answer=st.sampled_from(ANSWERS))
    def refund(self, fraction, extra_digit, answer):
        self._refund(self.deps, fraction, extra_digit, answer)

    @rule(fraction=st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.2]) | st.floats(0, 1.1),
          extra_digit=st.booleans(), answer=st.sampled_from(ANSWERS))
    def refund_answered_in_process(self, fraction, extra_digit, answer):
        """The provider answers in process, as the simulator does: it is asked once the
        Pending refund is committed, and its answer recorded at once (unreachable, the refund
        waits for a worker, as usual)."""
        self.provider.in_process = True
        try:
            self._refund(self.deps, fraction, extra_digit, answer)
        finally:
            self.provider.in_process = False

    @rule(fraction=st.sampled_from([0.25, 0.5, 1.0]), answer=st.sampled_from(ANSWERS))
    def refund_whose_settlement_a_crash_loses(self, fraction, answer):
        self._refund(self.crashing, fraction, False, answer)

    @rule(fraction=st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.2]) | st.floats(0, 1.1))
    def refund_request_awaiting_approval(self, fraction):
        """A dashboard refund above the threshold: held on the payment, or refused by the rules."""
        currency = self.payment.currency
        amount = from_minor(max(1, round(to_minor(self.payment.amount, currency) * fraction)), currency)
        expected = self.rules_on_the_refund_rows(amount)
        request = parse_refund({"txNo": self.payment.tx_no, "amount": amount})
        try:
            awaiting = approvals.request_refund(self.deps, replace(self.caller, actor="alice"), request,
                                                uuid.uuid4().hex)
        except (RefundRejected, FieldErrors) as refused:
            assert type(refused) is type(expected) and str(refused) == str(expected), (refused, expected)
            return
        assert expected is None, f"held a refund request the rules refuse: {expected}"
        self.awaiting.append(awaiting.id)

    @precondition(lambda self: self.awaiting)
    @rule(data=st.data(), answer=st.sampled_from(ANSWERS), twice=st.booleans())
    def second_user_approves(self, data, answer, twice):
        """Another user approves (maybe twice: a double click); one refund goes to the provider,
        by a worker."""
        approval_id = data.draw(st.sampled_from(self.awaiting))
        self.provider.answer = answer
        approver = replace(self.caller, actor="bob")
        with pytest.raises(ApprovalRefused):
            approvals.approve(self.deps, replace(self.caller, actor="alice"), approval_id)  # the asker
        refund = approvals.approve(self.deps, approver, approval_id)
        if twice:
            with pytest.raises(ApprovalRefused):
                approvals.approve(self.deps, approver, approval_id)
        assert self.provider.refund_calls.count(refund.tx_no) == 0  # handed to a worker
        while settlement.run_due_provider_checks(self.deps):
            pass
        assert self.provider.refund_calls.count(refund.tx_no) == 1
        self.awaiting.remove(approval_id)
        self.refund_ids.append(refund.id)

    @precondition(lambda self: self.awaiting)
    @rule(data=st.data())
    def second_user_rejects(self, data):
        approval_id = data.draw(st.sampled_from(self.awaiting))
        approvals.reject(self.deps, replace(self.caller, actor="bob"), approval_id)
        self.awaiting.remove(approval_id)

    @precondition(lambda self: self.awaiting)
    @rule()
    def requests_expire(self):
        """A day passes: the worker expires every awaiting request and releases what it held."""
        self.clock.now += approvals.APPROVAL_WINDOW + timedelta(seconds=1)
        approvals.expire_approvals(self.deps)
        self.awaiting.clear()

    @precondition(lambda self: self.refund_ids)
    @rule(data=st.data(), answer=st.sampled_from(ANSWERS[:3]))
    def provider_webhook(self, data, answer):
        """The provider reports on one of the refunds (a settled one ignores it)."""
        refund_id = data.draw(st.sampled_from(self.refund_ids))
        status = Status(answer)
        reason = "Declined By Bank" if status in (Status.DECLINED, Status.FAILED) else None
        settlement.apply_outcome(self.deps, refund_id, Outcome(status, f"re_{refund_id}", answer.upper(),
                                                               decline_reason=reason), source="provider")

    @rule(answer=st.sampled_from(ANSWERS))
    def worker_after_a_claim(self, answer):
        """The worker takes up every refund whose answer is owed (new, crashed, async,
        unreachable), later than any claim a worker made could hold it."""
        self.provider.answer = answer
        self.clock.now += settlement.CLAIM_FOR + timedelta(seconds=1)
        while settlement.run_due_provider_checks(self.deps):
            pass

    # -- what must hold after every step ------------------------------------------------------

    @invariant()
    def totals_on_the_row_are_the_sums_of_the_refund_rows(self):
        if not hasattr(self, "payment"):
            return
        payment, refunds = self.rows()
        held = sum(r.amount_minor for r in refunds if Status(r.status) in ACTIVE_REFUND_STATUSES)
        captured = sum(r.amount_minor for r in refunds if r.status == Status.CAPTURED.value)
        assert (payment.refund_reserved_minor, payment.refund_captured_minor) == (held, captured)
        assert payment.refund_held_minor == self.held_by_awaiting_requests()
        assert 0 <= payment.refund_captured_minor <= payment.refund_reserved_minor
        assert payment.refund_reserved_minor + payment.refund_held_minor <= payment.amount_minor
        assert (payment.status == Status.REFUNDED.value) == (captured == payment.amount_minor)

    def teardown(self):
        """Settle what is still owed, so the next example's worker finds nothing of this one's."""
        if hasattr(self, "payment"):
            self.provider.answer = "Captured"
            self.clock.now += settlement.CLAIM_FOR + timedelta(minutes=2)
            while settlement.run_due_provider_checks(self.deps):
                pass
            self.totals_on_the_row_are_the_sums_of_the_refund_rows()
            with self.deps.uow(write=False) as uow:
                assert check_refund_totals(uow.conn).mismatches == []


def test_refund_totals_hold_under_any_interleaving(world):
    RefundLedger.world = world
    run_state_machine_as_test(RefundLedger, settings=settings(
        max_examples=60, stateful_step_count=15, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))
