"""The worker's provider jobs: async refunds, payouts, crashed requests, expiry; with a moved clock."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from app.payments import expiry, settlement
from app.util import utcnow
from tests.api.test_create_and_status import payout_body
from tests.conftest import payment_body


def deps_at(app, offset: timedelta):
    """The app's services with the clock moved by offset."""
    return replace(app.extensions["paydesk"], clock=lambda: utcnow() + offset)


def test_async_refund_stays_pending_until_the_worker_completes_it(sandbox, app):
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 100}).json()
    assert refund["status"] == "Pending"
    settlement.run_due_provider_checks(deps_at(app, timedelta(0)))
    assert sandbox.status(refund["refundTxNo"])["Status"] == "Pending"  # not settled yet
    settlement.run_due_provider_checks(deps_at(app, timedelta(seconds=3)))
    assert sandbox.status(refund["refundTxNo"])["Status"] == "Captured"
    assert sandbox.status("SBX-REFUND-ASYNC")["Status"] == "Refunded"


def test_payout_is_paid_after_it_settles(sandbox, app):
    tx_no = sandbox.post("/transactions", payout_body()).json()["transactionId"]
    settlement.run_due_provider_checks(deps_at(app, timedelta(seconds=3)))
    status = sandbox.status(tx_no)
    assert (status["Status"], status["ProviderStatus"]) == ("Captured", "PAID")


def expire_all_pending(deps) -> None:
    """Run the expiry job until it finds nothing (other tests leave many Pending payments)."""
    while expiry.expire_pending(deps):
        pass


def test_pending_payments_expire_after_the_window(sandbox, app):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    expire_all_pending(deps_at(app, timedelta(minutes=29)))
    assert sandbox.status(tx_no)["Status"] == "Pending"
    expire_all_pending(deps_at(app, timedelta(minutes=31)))
    status = sandbox.status(tx_no)
    assert (status["Status"], status["DeclineReason"]) == ("Declined", "Transaction Expired")


def test_sandbox_pending_fixture_never_expires(sandbox, app):
    expiry.expire_pending(deps_at(app, timedelta(days=2)))
    assert sandbox.status("SBX-PENDING")["Status"] == "Pending"


def test_expiry_does_not_touch_a_payment_approved_meanwhile(sandbox, app):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    expiry.expire_pending(deps_at(app, timedelta(hours=1)))
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_two_workers_settle_a_due_refund_once(sandbox, app):
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 40}).json()
    later = deps_at(app, timedelta(seconds=3))
    first = settlement.run_due_provider_checks(later)
    second = settlement.run_due_provider_checks(later)
    assert (first >= 1, second) == (True, 0)
    assert sandbox.status(refund["refundTxNo"])["Status"] == "Captured"
