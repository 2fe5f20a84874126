"""The sandbox: test transactions, the outcome helper, reset, and the hosted checkout."""
from __future__ import annotations

import pytest
import requests

from tests.api.test_create_and_status import payout_body
from tests.conftest import payment_body

FIXTURES = {
    "SBX-CAPTURED": ("Captured", 100.00, None),
    "SBX-REFUND-DECLINED": ("Captured", 100.00, None),
    "SBX-REFUND-FAILED": ("Captured", 100.00, None),
    "SBX-REFUND-ASYNC": ("Captured", 100.00, None),
    "SBX-NO-PARTIAL": ("Captured", 100.00, None),
    "SBX-PENDING": ("Pending", 50.00, None),
    "SBX-AUTHORIZED": ("Authorized", 50.00, None),
    "SBX-DECLINED": ("Declined", 50.00, "Insufficient Funds"),
}


@pytest.mark.parametrize("tx_no", FIXTURES)
def test_every_sandbox_has_the_test_transactions(sandbox, tx_no):
    status = sandbox.status(tx_no)
    assert (status["Status"], status["Amount"], status["DeclineReason"]) == FIXTURES[tx_no]
    assert status["Currency"] == "EUR"


def test_reset_restores_the_test_transactions(sandbox):
    sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 100})
    sandbox.post("/sandbox/transactions/SBX-PENDING/outcome", {"status": "Captured"})
    assert sandbox.status("SBX-CAPTURED")["Status"] == "Refunded"
    response = sandbox.post("/sandbox/reset")
    assert response.status_code == 200
    assert sandbox.status("SBX-CAPTURED")["Status"] == "Captured"
    assert sandbox.status("SBX-PENDING")["Status"] == "Pending"
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 100})
    assert refund.json()["status"] == "Captured"


@pytest.mark.parametrize("path", ["/sandbox/reset", "/sandbox/transactions/SBX-PENDING/outcome"])
def test_sandbox_helpers_refuse_live_tokens(live, path):
    response = live.post(path, {"status": "Captured"})
    assert (response.status_code, response.json()) == (403, {"error": "Sandbox only"})


def test_outcome_declines_with_reason(sandbox):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    response = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome",
                            {"status": "Declined", "declineReason": "Declined By Bank"})
    assert response.status_code == 200
    assert sandbox.status(tx_no)["Status"] == "Declined"
    assert sandbox.status(tx_no)["DeclineReason"] == "Declined By Bank"


@pytest.mark.parametrize("reason", ["Not enough money", "declined by bank", "", 12])
def test_outcome_takes_only_the_common_decline_reasons(sandbox, reason):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]

    response = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome",
                            {"status": "Declined", "declineReason": reason})

    assert (response.status_code, response.json()) == (400, {"errors": {"DeclineReason": [
        "DeclineReason must be one of the common reasons: Transaction Expired, Payment Cancelled By User, "
        "Declined By Bank, Insufficient Funds, Provider Error, Country Not Supported On Payment Method, "
        "Currency Not Supported, Payment Method Not Available, Invalid Card Details, Card Expired, "
        "3DS Authentication Failed, Suspected Fraud, Daily Limit Exceeded, Restricted Card"]}})
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_outcome_authorized_then_captured_then_chargeback(sandbox):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    for status in ("Authorized", "Captured", "Chargeback"):
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": status}).status_code == 200
        assert sandbox.status(tx_no)["Status"] == status


def test_outcome_refuses_a_move_the_status_does_not_allow(sandbox):
    response = sandbox.post("/sandbox/transactions/SBX-DECLINED/outcome", {"status": "Captured"})
    assert response.status_code == 409
    assert response.json() == {"error": "Transaction SBX-DECLINED cannot move from Declined to Captured"}


def test_outcome_never_holds_nor_charges_back_a_payout(sandbox):
    """No provider holds a payout for capture or disputes one: the helper moves it as they would."""
    tx_no = sandbox.post("/transactions", payout_body()).json()["transactionId"]
    response = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Authorized"})
    assert (response.status_code, response.json()) == (
        409, {"error": f"Transaction {tx_no} cannot move from Pending to Authorized"})
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    response = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"})
    assert (response.status_code, response.json()) == (
        409, {"error": f"Transaction {tx_no} cannot move from Captured to Chargeback"})
    assert sandbox.status(tx_no)["Status"] == "Captured"
    assert [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no] == []


def test_outcome_refuses_unknown_status_words(sandbox):
    response = sandbox.post("/sandbox/transactions/SBX-PENDING/outcome", {"status": "Refunded"})
    assert response.status_code == 400
    assert response.json() == {"errors": {"Status": [
        "Status must be one of Authorized, Captured, Chargeback, Declined, Failed"]}}


def test_checkout_page_approves_and_redirects_to_success_url(sandbox, server):
    created = sandbox.post("/transactions", payment_body(successUrl="https://shop.example/thanks")).json()
    browser = requests.Session()
    page = browser.get(created["checkoutUrl"], timeout=10)
    assert page.status_code == 200
    assert "100.00" in page.text
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    answer = browser.post(created["checkoutUrl"], data={"decision": "approve", "csrf_token": token},
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 303
    assert answer.headers["Location"] == "https://shop.example/thanks"
    assert sandbox.status(created["transactionId"])["Status"] == "Captured"


def test_checkout_decline_records_the_chosen_reason(sandbox):
    created = sandbox.post("/transactions", payment_body()).json()
    browser = requests.Session()
    page = browser.get(created["checkoutUrl"], timeout=10)
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    browser.post(created["checkoutUrl"], data={"decision": "decline", "declineReason": "Card Expired",
                                               "csrf_token": token}, timeout=10)
    status = sandbox.status(created["transactionId"])
    assert (status["Status"], status["DeclineReason"]) == ("Declined", "Card Expired")


def test_checkout_offers_the_payers_cancel_first_and_takes_it_when_none_is_chosen(sandbox):
    """Not the list's first reason, Transaction Expired: that is the expiry job's, not a payer's."""
    created = sandbox.post("/transactions", payment_body()).json()
    browser = requests.Session()
    page = browser.get(created["checkoutUrl"], timeout=10).text
    assert "<option selected>Payment Cancelled By User</option>" in page
    assert page.count(" selected>") == 1
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    browser.post(created["checkoutUrl"], data={"decision": "decline", "csrf_token": token}, timeout=10)
    status = sandbox.status(created["transactionId"])
    assert (status["Status"], status["DeclineReason"]) == ("Declined", "Payment Cancelled By User")


def test_checkout_refuses_posts_without_csrf_token(sandbox):
    created = sandbox.post("/transactions", payment_body()).json()
    answer = requests.post(created["checkoutUrl"], data={"decision": "approve"}, timeout=10)
    assert answer.status_code == 400
    assert sandbox.status(created["transactionId"])["Status"] == "Pending"
