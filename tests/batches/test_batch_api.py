"""POST/GET /api/v1/payouts/batches and /refunds/batches: exact bodies, run, replay, scope."""
from __future__ import annotations

import uuid

import pytest

from app.payments import batches
from tests.api.test_create_and_status import nuban

ACCOUNT = nuban("058", "012345678")


def payout_row(reference: str, **overrides) -> dict:
    row = {"paymentMethod": "ng-bank-payout", "amount": 100, "currency": "NGN", "bank": "058",
           "holder": "Ada Obi", "accountNumber": ACCOUNT, "reference": reference, "email": "ada@example.com"}
    row.update(overrides)
    return row


def test_a_batch_with_a_refused_row_stays_in_review(sandbox):
    prefix = uuid.uuid4().hex[:8]
    response = sandbox.post("/payouts/batches", {"rows": [
        payout_row(f"{prefix}-1", amount=12.5), payout_row(f"{prefix}-2", bank="999", colour="red")]})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["id"].startswith("bat_")
    assert {k: v for k, v in body.items() if k not in ("id", "createdAt", "rows")} == {
        "kind": "payout", "state": "review", "source": "api", "rowCount": 2, "validRows": 1,
        "invalidRows": 1, "waitingRows": 1, "createdRows": 0, "failedRows": 0, "totals": {"NGN": 12.5},
        "approvedAt": None, "finishedAt": None}
    assert body["rows"] == [
        {"row": 1, "state": "valid", "errors": None, "txNo": None, "status": "valid", "declineReason": None},
        {"row": 2, "state": "invalid", "errors": {
            "Colour": ["Unknown field"],
            "Payment.Bank": ["Bank 999 is not in the bank list of payment method ng-bank-payout"],
            "Payment.AccountNumber": ["Account number is not a valid NUBAN for bank 999"]},
         "txNo": None, "status": "invalid",
         "declineReason": "Unknown field; Bank 999 is not in the bank list of payment method ng-bank-payout; "
                          "Account number is not a valid NUBAN for bank 999"}]
    assert sandbox.get(f"/payouts/batches/{body['id']}").json()["rows"] == body["rows"]
    ran = sandbox.post(f"/payouts/batches/{body['id']}/run")
    assert ran.status_code == 200
    assert (ran.json()["state"], ran.json()["invalidRows"]) == ("running", 1)
    again = sandbox.post(f"/payouts/batches/{body['id']}/run")
    assert again.status_code == 409
    assert again.json() == {"error": "This batch is running; only a batch in review can be run."}


def test_a_valid_batch_runs_at_once_and_the_worker_creates_its_rows(sandbox, app):
    prefix = uuid.uuid4().hex[:8]
    body = sandbox.post("/payouts/batches", {"rows": [payout_row(f"{prefix}-{n}") for n in range(3)]}).json()
    assert body["state"] == "running"
    batches.run_due_batches(app.extensions["paydesk"])
    done = sandbox.get(f"/payouts/batches/{body['id']}").json()
    assert (done["state"], done["createdRows"], done["waitingRows"]) == ("done", 3, 0)
    for row in done["rows"]:
        assert sandbox.status(row["txNo"])["Reference"] == f"{prefix}-{row['row'] - 1}"
        assert row["status"] == sandbox.status(row["txNo"])["Status"]


def test_the_idempotency_key_replays_the_first_answer(sandbox):
    request = {"rows": [payout_row(uuid.uuid4().hex[:12])], "runValidRows": True}
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = sandbox.post("/payouts/batches", request, headers=key)
    second = sandbox.post("/payouts/batches", request, headers=key)
    assert (first.status_code, second.status_code) == (201, 201)
    assert second.content == first.content
    assert second.headers["Idempotent-Replayed"] == "true"
    other = sandbox.post("/payouts/batches", {"rows": [payout_row("other")]}, headers=key)
    assert other.status_code == 422


def test_bad_bodies_are_field_errors(sandbox):
    assert sandbox.post("/payouts/batches", {"rows": []}).json() == {
        "errors": {"Rows": ["Rows must be a list of 1 to 5000 objects"]}}
    assert sandbox.post("/payouts/batches", {"rows": [{}], "extra": 1}).json() == {
        "errors": {"extra": ["Unknown field"]}}
    assert sandbox.post("/payouts/batches", [1]).json() == {
        "errors": {"Body": ["Request body must be a JSON object"]}}


def test_another_mode_or_kind_answers_as_an_unknown_batch(sandbox, live):
    created = sandbox.post("/payouts/batches", {"rows": [payout_row(uuid.uuid4().hex)]}).json()
    unknown = {"error": f"Batch {created['id']} not found"}
    assert live.get(f"/payouts/batches/{created['id']}").json() == unknown
    assert live.get(f"/payouts/batches/{created['id']}").status_code == 404
    assert sandbox.get(f"/refunds/batches/{created['id']}").json() == unknown
    assert live.post(f"/payouts/batches/{created['id']}/cancel").status_code == 404


def test_refund_rows_are_checked_by_the_refund_rules_in_order(sandbox, captured_payment, app):
    tx_no = captured_payment(amount=100)
    response = sandbox.post("/refunds/batches", {"rows": [
        {"txNo": tx_no, "amount": 60, "reason": "Damaged"},
        {"txNo": tx_no, "amount": 50},
        {"txNo": "SBX-PENDING", "amount": 1},
        {"txNo": "PAY-NOPE", "amount": 1},
        {"txNo": tx_no, "amount": 0},
    ]})
    body = response.json()
    assert [row["errors"] for row in body["rows"]] == [
        None,
        {"Refund": ["Refund amount (50.00) exceeds remaining refundable amount (40.00)"]},
        {"Refund": ["Transaction must be in Captured status to be refunded. Current status: Pending"]},
        {"Refund": ["Original transaction with TxNo PAY-NOPE not found"]},
        {"Amount": ["Amount must be greater than 0"]},
    ]
    assert body["totals"] == {"EUR": 60}
    sandbox.post(f"/refunds/batches/{body['id']}/run")
    batches.run_due_batches(app.extensions["paydesk"])
    done = sandbox.get(f"/refunds/batches/{body['id']}").json()
    assert (done["state"], done["createdRows"]) == ("done", 1)
    assert done["rows"][0]["txNo"].startswith("RFD-")
    assert sandbox.status(done["rows"][0]["txNo"])["Amount"] == 60


@pytest.mark.parametrize("named", [{}, 5, ["rcp_1"]])
def test_a_row_naming_a_recipient_by_anything_but_text_is_that_rows_error(sandbox, named):
    created = sandbox.post("/payouts/batches", {"rows": [{"amount": 5, "reference": "r-1", "recipientId": named}]})

    assert created.status_code == 201, created.text
    [row] = created.json()["rows"]
    assert row["errors"] == {"Recipient": [f"Recipient {named} not found (or archived)"]}
