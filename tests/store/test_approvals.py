"""Four eyes on both databases: what an awaiting refund request holds, who may decide it, and
that approving it makes exactly one refund however often (or however concurrently) it is asked."""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from app.payments import approvals
from app.payments.approvals import ApprovalRefused, ApprovalState
from app.payments.model import Caller, Kind, Mode, RefundRejected, Status
from app.payments.schemas import RefundRequest, parse_create
from app.store.ledger import check_refund_totals
from app.store.tables import audit_log, transactions
from tests.conftest import payment_body


@pytest.fixture
def deps(app):
    return app.extensions["paydesk"]


def callers(merchant):
    def caller(name: str) -> Caller:
        return Caller(merchant.merchant_id, Mode.SANDBOX, f"{name}@shop.test", "127.0.0.1")
    return caller("alice"), caller("bob")


def ask(deps, caller, tx_no: str, amount: str):
    return approvals.request_refund(deps, caller, RefundRequest(tx_no, Decimal(amount), "Damaged"),
                                    uuid.uuid4().hex)


def totals(deps, tx_no: str, merchant) -> tuple[int, int, int]:
    with deps.uow(write=False) as uow:
        row = uow.conn.execute(select(transactions).where(
            transactions.c.tx_no == tx_no, transactions.c.merchant_id == merchant.merchant_id)).one()
    return row.refund_reserved_minor, row.refund_captured_minor, row.refund_held_minor


def refunds_of(deps, tx_no: str, merchant) -> int:
    originals = transactions.alias()
    with deps.uow(write=False) as uow:
        return uow.conn.execute(select(func.count()).select_from(transactions).join(
            originals, originals.c.id == transactions.c.original_id).where(
            originals.c.tx_no == tx_no, originals.c.merchant_id == merchant.merchant_id,
            transactions.c.kind == Kind.REFUND.value)).scalar_one()


def ledger_is_clean(deps, merchant) -> None:
    """The merchant's payments' totals equal their refunds' sums (other tests of the shared
    database tamper with their own rows on purpose)."""
    with deps.uow(write=False) as uow:
        found = check_refund_totals(uow.conn).mismatches
    assert [m for m in found if m.merchant_id == merchant.merchant_id] == []


def actions(deps, merchant) -> list[str]:
    with deps.uow(write=False) as uow:
        return list(uow.conn.execute(select(audit_log.c.action).where(
            audit_log.c.merchant_id == merchant.merchant_id,
            audit_log.c.action.like("approval.%")).order_by(audit_log.c.id)).scalars())


def test_an_awaiting_request_holds_its_amount_against_api_refunds(deps, merchant, captured_payment, sandbox):
    alice, _ = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    assert request.state is ApprovalState.AWAITING
    assert totals(deps, tx_no, merchant) == (0, 0, 7000)
    refused = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 40})
    assert refused.status_code == 400
    assert refused.json() == {"error": "Refund amount (40.00) exceeds remaining refundable amount (30.00)"}
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 30}).status_code == 200
    ledger_is_clean(deps, merchant)


def test_two_awaiting_requests_that_together_exceed_the_remaining_amount_are_refused(deps, merchant,
                                                                                    captured_payment):
    alice, bob = callers(merchant)
    tx_no = captured_payment(100)
    ask(deps, alice, tx_no, "60")
    with pytest.raises(RefundRejected) as refused:
        ask(deps, bob, tx_no, "50")
    assert str(refused.value) == "Refund amount (50.00) exceeds remaining refundable amount (40.00)"
    assert totals(deps, tx_no, merchant) == (0, 0, 6000)
    ledger_is_clean(deps, merchant)


def test_the_same_form_sent_twice_records_one_request(deps, merchant, captured_payment):
    alice, _ = callers(merchant)
    tx_no = captured_payment(100)
    request = RefundRequest(tx_no, Decimal("30"))
    first = approvals.request_refund(deps, alice, request, "form-key-1")
    again = approvals.request_refund(deps, alice, request, "form-key-1")
    assert again.id == first.id
    assert totals(deps, tx_no, merchant) == (0, 0, 3000)


def test_the_requester_cannot_approve_their_own_request(deps, merchant, captured_payment):
    alice, _ = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    with pytest.raises(ApprovalRefused) as refused:
        approvals.approve(deps, alice, request.id)
    assert str(refused.value) == "You asked for this one: another user must approve it."
    assert refunds_of(deps, tx_no, merchant) == 0
    assert totals(deps, tx_no, merchant) == (0, 0, 7000)


def test_approval_by_another_user_sends_the_refund_once(deps, merchant, captured_payment, sandbox):
    alice, bob = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    refund = approvals.approve(deps, bob, request.id)
    assert (refund.kind, refund.status, refund.amount) == (Kind.REFUND, Status.CAPTURED, Decimal("70.00"))
    assert refund.created_by == "alice@shop.test"
    assert totals(deps, tx_no, merchant) == (7000, 7000, 0)
    for _ in range(2):  # a double click, a replayed POST
        with pytest.raises(ApprovalRefused) as refused:
            approvals.approve(deps, bob, request.id)
        assert str(refused.value) == "This request is already approved."
    assert refunds_of(deps, tx_no, merchant) == 1
    with deps.uow(write=False) as uow:
        decided = uow.approvals.get(bob, request.id)
    assert (decided.state, decided.decided_by, decided.result_tx_no) == (
        ApprovalState.APPROVED, "bob@shop.test", refund.tx_no)
    assert actions(deps, merchant) == ["approval.request", "approval.approve"]
    ledger_is_clean(deps, merchant)


def test_rejecting_releases_the_hold(deps, merchant, captured_payment, sandbox):
    alice, bob = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    rejected = approvals.reject(deps, bob, request.id, "Not agreed with the customer")
    assert rejected.state is ApprovalState.REJECTED
    assert totals(deps, tx_no, merchant) == (0, 0, 0)
    with pytest.raises(ApprovalRefused):
        approvals.approve(deps, bob, request.id)
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100}).status_code == 200
    assert actions(deps, merchant) == ["approval.request", "approval.reject"]
    ledger_is_clean(deps, merchant)


def test_expiry_releases_the_reservation(deps, merchant, captured_payment, sandbox):
    alice, bob = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    almost = replace(deps, clock=lambda: deps.clock() + approvals.APPROVAL_WINDOW - timedelta(seconds=5))
    approvals.expire_approvals(almost)
    assert totals(deps, tx_no, merchant) == (0, 0, 7000)  # not yet
    later = replace(deps, clock=lambda: deps.clock() + approvals.APPROVAL_WINDOW + timedelta(seconds=1))
    with pytest.raises(ApprovalRefused) as refused:
        approvals.approve(later, bob, request.id)  # past its time, before the worker came by
    assert str(refused.value) == "This request has expired."
    assert approvals.expire_approvals(later) >= 1
    assert totals(deps, tx_no, merchant) == (0, 0, 0)
    with deps.uow(write=False) as uow:
        assert uow.approvals.get(bob, request.id).state is ApprovalState.EXPIRED
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100}).status_code == 200
    assert actions(deps, merchant) == ["approval.request", "approval.expire"]
    ledger_is_clean(deps, merchant)


def test_a_payment_charged_back_meanwhile_fails_the_approval_and_releases_it(deps, merchant,
                                                                            captured_payment, sandbox):
    alice, bob = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
    with pytest.raises(ApprovalRefused):
        approvals.approve(deps, bob, request.id)
    assert totals(deps, tx_no, merchant) == (0, 0, 0)
    assert refunds_of(deps, tx_no, merchant) == 0
    with deps.uow(write=False) as uow:
        assert uow.approvals.get(bob, request.id).state is ApprovalState.FAILED
    ledger_is_clean(deps, merchant)


@pytest.mark.parametrize("round_no", range(3))
def test_parallel_approvals_of_one_request_make_one_refund(deps, merchant, captured_payment, round_no):
    alice, _ = callers(merchant)
    tx_no = captured_payment(100)
    request = ask(deps, alice, tx_no, "70")
    approvers = [Caller(merchant.merchant_id, Mode.SANDBOX, f"approver{i}@shop.test") for i in range(8)]

    def approve(approver):
        try:
            return approvals.approve(deps, approver, request.id)
        except ApprovalRefused as refused:
            return refused

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(approve, approvers))
    made = [a for a in answers if not isinstance(a, ApprovalRefused)]
    assert len(made) == 1
    assert {str(a) for a in answers if isinstance(a, ApprovalRefused)} <= {
        "This request is already approved."}
    assert refunds_of(deps, tx_no, merchant) == 1
    assert totals(deps, tx_no, merchant) == (7000, 7000, 0)
    ledger_is_clean(deps, merchant)


def test_parallel_requests_never_hold_more_than_the_payment(deps, merchant, captured_payment):
    alice, _ = callers(merchant)
    tx_no = captured_payment(100)

    def request(_):
        try:
            return ask(deps, alice, tx_no, "10")
        except RefundRejected as refused:
            return refused

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(request, range(20)))
    assert sum(not isinstance(a, RefundRejected) for a in answers) == 10
    assert totals(deps, tx_no, merchant) == (0, 0, 10000)
    ledger_is_clean(deps, merchant)


def test_a_payout_is_created_once_when_approved(deps, merchant):
    alice, bob = callers(merchant)
    body = payment_body(amount=500, currency="KES", transactionAction="PAYMENT",
                        payment={"paymentMethod": "mobile-money-payout", "holder": "Jo Doe",
                                 "accountNumber": "+254712345678"})
    request = approvals.request_payout(deps, alice, parse_create(body), {**body, "amount": "500"},
                                       uuid.uuid4().hex)
    with pytest.raises(ApprovalRefused):
        approvals.approve(deps, alice, request.id)
    payout = approvals.approve(deps, bob, request.id)
    assert (payout.kind, payout.amount, payout.reference) == (Kind.PAYOUT, Decimal("500"), body["reference"])
    with pytest.raises(ApprovalRefused) as refused:
        approvals.approve(deps, bob, request.id)
    assert str(refused.value) == "This request is already approved."
    with deps.uow(write=False) as uow:
        assert uow.approvals.get(bob, request.id).result_tx_no == payout.tx_no
        assert uow.transactions.find_by_reference(bob, body["reference"]) == payout.tx_no


def test_ledger_verify_finds_a_hold_that_no_awaiting_request_explains(deps, merchant, captured_payment):
    alice, _ = callers(merchant)
    tx_no = captured_payment(100)
    ask(deps, alice, tx_no, "70")
    with deps.uow() as uow:
        uow.conn.execute(transactions.update().where(
            transactions.c.tx_no == tx_no, transactions.c.merchant_id == merchant.merchant_id,
        ).values(refund_held_minor=transactions.c.refund_held_minor + 1))
        uow.commit()
    with deps.uow(write=False) as uow:
        found = [m for m in check_refund_totals(uow.conn).mismatches if m.tx_no == tx_no]
    assert [(m.held_on_row, m.held_by_requests) for m in found] == [(7001, 7000)]
    with deps.uow() as uow:  # put it back: the other tests check the whole ledger
        uow.conn.execute(transactions.update().where(
            transactions.c.tx_no == tx_no, transactions.c.merchant_id == merchant.merchant_id,
        ).values(refund_held_minor=7000))
        uow.commit()


def test_a_sandbox_reset_removes_the_test_payments_requests_with_them(deps, merchant, sandbox):
    alice, _ = callers(merchant)
    request = ask(deps, alice, "SBX-CAPTURED", "70")
    assert sandbox.post("/sandbox/reset").status_code == 200
    assert totals(deps, "SBX-CAPTURED", merchant) == (0, 0, 0)
    with deps.uow(write=False) as uow:
        assert uow.approvals.get(alice, request.id) is None
    ledger_is_clean(deps, merchant)
