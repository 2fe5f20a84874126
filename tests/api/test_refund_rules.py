"""Every refund rule and error row of the interface, over HTTP, on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest


def test_interface_example_30_and_50_accepted_then_25_rejected(sandbox, captured_payment):
    tx_no = captured_payment(100)
    first = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 30})
    second = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 50})
    third = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 25})
    assert (first.status_code, first.json()["status"]) == (200, "Captured")
    assert (second.status_code, second.json()["status"]) == (200, "Captured")
    assert third.status_code == 400
    assert third.json() == {"error": "Refund amount (25.00) exceeds remaining refundable amount (20.00)"}
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_unknown_original_is_rejected_with_the_interface_message(sandbox):
    response = sandbox.post("/transactions/refund", {"txNo": "NOPE-1", "amount": 10})
    assert response.status_code == 400
    assert response.json() == {"error": "Original transaction with TxNo NOPE-1 not found"}


@pytest.mark.parametrize("tx_no,status", [("SBX-PENDING", "Pending"), ("SBX-AUTHORIZED", "Authorized"),
                                          ("SBX-DECLINED", "Declined")])
def test_original_must_be_captured(sandbox, tx_no, status):
    response = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10})
    assert response.status_code == 400
    assert response.json() == {
        "error": f"Transaction must be in Captured status to be refunded. Current status: {status}"}


@pytest.mark.parametrize("amount", [0, -5, 0.0])
def test_amount_must_be_greater_than_zero_as_field_error(sandbox, amount):
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": amount})
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": ["Amount must be greater than 0"]}}


def test_field_validation_runs_before_lookup(sandbox):
    response = sandbox.post("/transactions/refund", {"txNo": "NOPE-1", "amount": 0})
    assert response.json() == {"errors": {"Amount": ["Amount must be greater than 0"]}}


def test_amount_above_original(sandbox):
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 100.01})
    assert response.status_code == 400
    assert response.json() == {
        "error": "Refund amount (100.01) cannot exceed original transaction amount (100.00)"}


def test_amount_above_original_is_checked_before_remaining(sandbox, captured_payment):
    tx_no = captured_payment(100)
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 90}).status_code == 200
    response = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 150})
    assert response.json() == {
        "error": "Refund amount (150.00) cannot exceed original transaction amount (100.00)"}


def test_full_refund_moves_original_to_refunded(sandbox, captured_payment):
    tx_no = captured_payment(100)
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100}).json()
    assert refund["status"] == "Captured"
    assert sandbox.status(tx_no)["Status"] == "Refunded"
    again = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 1})
    assert again.json() == {
        "error": "Transaction must be in Captured status to be refunded. Current status: Refunded"}


def test_partial_refunds_leave_original_captured_until_total_reaches_amount(sandbox, captured_payment):
    tx_no = captured_payment(100)
    sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 60})
    assert sandbox.status(tx_no)["Status"] == "Captured"
    sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 40})
    assert sandbox.status(tx_no)["Status"] == "Refunded"


@pytest.mark.parametrize("tx_no,status", [("SBX-REFUND-DECLINED", "Declined"),
                                          ("SBX-REFUND-FAILED", "Failed")])
def test_failed_and_declined_refunds_free_their_amount(sandbox, tx_no, status):
    refused = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100})
    assert refused.status_code == 200
    assert refused.json()["status"] == status
    again = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100})
    assert again.json()["status"] == status  # the whole 100.00 was free again
    assert sandbox.status(tx_no)["Status"] == "Captured"
    assert sandbox.status(refused.json()["refundTxNo"])["Status"] == status


def test_pending_refunds_hold_their_amount(sandbox):
    pending = sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 70})
    assert pending.json()["status"] == "Pending"
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 40})
    assert response.json() == {"error": "Refund amount (40.00) exceeds remaining refundable amount (30.00)"}


def test_method_without_partial_refunds_refuses_partial_amount(sandbox):
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-NO-PARTIAL", "amount": 30})
    assert response.status_code == 400
    assert response.json() == {
        "error": "Partial refunds are not supported for payment method card-full-refund-only"}
    full = sandbox.post("/transactions/refund", {"txNo": "SBX-NO-PARTIAL", "amount": 100})
    assert full.json()["status"] == "Captured"


def test_refund_response_fields(sandbox, captured_payment):
    tx_no = captured_payment(100)
    body = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 12.5, "reason": "Damaged",
                                                 "description": "Box crushed"}).json()
    assert set(body) == {"refundTxNo", "originalTxNo", "amount", "currency", "status", "message",
                         "providerRefundId", "createdAt"}
    assert body["originalTxNo"] == tx_no
    assert body["currency"] == "EUR"
    assert body["createdAt"].endswith("Z")
    refund_status = sandbox.status(body["refundTxNo"])
    assert refund_status["UserDefinedField1"] == "Damaged"
    assert refund_status["UserDefinedField2"] == "Box crushed"
    assert refund_status["Amount"] == 12.5


def test_amounts_are_written_with_currency_digits(sandbox, captured_payment):
    tx_no = captured_payment(100)
    response = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 12.5})
    assert '"amount": 12.50' in response.text


def test_payouts_and_refunds_cannot_be_refunded(sandbox, captured_payment):
    tx_no = captured_payment(100)
    refund_no = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10}).json()["refundTxNo"]
    response = sandbox.post("/transactions/refund", {"txNo": refund_no, "amount": 1})
    assert response.status_code == 400
    assert response.json() == {"error": f"Only payments can be refunded; transaction {refund_no} is a refund"}
