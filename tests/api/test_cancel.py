"""POST /transactions/{txNo}/cancel: a Pending or Authorized payment Declined, Payment Cancelled By User."""
from __future__ import annotations

import json
import uuid

import pytest
import requests
import schemathesis
from schemathesis.checks import not_a_server_error
from sqlalchemy import select

from app.api.openapi import openapi_document
from app.payments.model import Status
from app.payments.provider import Outcome, ProviderUnavailable
from app.providers.simulator import SimulatorProvider
from app.store.merchants import create_merchant
from app.store.tables import audit_log, status_history, transactions, webhook_events
from tests.conftest import Api, payment_body

CALLBACK = "https://merchant.example/webhooks"
PROVIDER_DOWN = {"error": "The provider could not be reached; nothing was changed. Try again."}


def _pending(api: Api, **overrides) -> str:
    created = api.post("/transactions", payment_body(**overrides))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def _moved(api: Api, tx_no: str, *statuses: str) -> str:
    for status in statuses:
        moved = api.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": status})
        assert moved.status_code == 200, moved.text
    return tx_no


def _cancel(api: Api, tx_no: str, **kwargs) -> requests.Response:
    return api.post(f"/transactions/{tx_no}/cancel", **kwargs)


def _refused(status: str) -> dict:
    return {"error": f"Only Pending or Authorized transactions can be cancelled. Current status: {status}"}


def _rows(app, table, *conditions) -> list:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(table).where(*conditions).order_by(table.c.id)).all()


def _transaction_id(app, tx_no: str) -> int:
    (row,) = _rows(app, transactions, transactions.c.tx_no == tx_no)
    return row.id


def test_a_pending_payment_is_cancelled_and_answers_its_status_body(sandbox):
    tx_no = _pending(sandbox)
    before = sandbox.status(tx_no)
    response = _cancel(sandbox, tx_no)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {**before, "Status": "Declined", "DeclineReason": "Payment Cancelled By User",
                               "ProviderStatus": "CANCELLED", "ProviderMessage": "Payment cancelled"}
    assert response.json() == sandbox.status(tx_no)


def test_the_status_endpoint_then_shows_declined_with_the_reason(sandbox):
    tx_no = _pending(sandbox)
    assert _cancel(sandbox, tx_no).status_code == 200
    status = sandbox.status(tx_no)
    assert (status["Status"], status["DeclineReason"]) == ("Declined", "Payment Cancelled By User")


def test_the_cancel_is_written_to_the_history_the_webhook_outbox_and_the_audit_log(sandbox, merchant, app):
    tx_no = _pending(sandbox, callbackUrl=CALLBACK)
    assert _cancel(sandbox, tx_no).status_code == 200
    tx_id = _transaction_id(app, tx_no)
    actor = f"api:{merchant.sandbox_token[:12]}"

    history = _rows(app, status_history, status_history.c.transaction_id == tx_id)
    assert [(h.from_status, h.to_status, h.source, h.note) for h in history][-1] \
        == ("Pending", "Declined", actor, "Payment cancelled")

    (event,) = _rows(app, webhook_events, webhook_events.c.transaction_id == tx_id)
    assert (event.merchant_id, event.mode, event.event_type, event.url, event.state) \
        == (merchant.merchant_id, "sandbox", "payment.declined", CALLBACK, "pending")
    payload = json.loads(event.payload)
    assert {k: payload[k] for k in ("txNo", "status", "transactionType", "originalTxNo", "providerStatus")} \
        == {"txNo": tx_no, "status": "Declined", "transactionType": "Payment", "originalTxNo": None,
            "providerStatus": "CANCELLED"}

    (audit,) = _rows(app, audit_log, audit_log.c.merchant_id == merchant.merchant_id,
                     audit_log.c.action == "payment.cancel")
    assert (audit.mode, audit.actor, audit.target, audit.amount_minor, audit.currency) \
        == ("sandbox", actor, tx_no, 10000, "EUR")
    assert json.loads(audit.detail) == {"status": "Declined"}


def test_the_webhook_is_listed_for_the_merchant(sandbox):
    tx_no = _pending(sandbox, callbackUrl=CALLBACK)
    assert _cancel(sandbox, tx_no).status_code == 200
    listed = sandbox.get(f"/webhooks?txNo={tx_no}")
    assert listed.status_code == 200, listed.text
    (event,) = listed.json()["webhooks"]
    assert (event["eventType"], event["payload"]["status"], event["url"]) == ("payment.declined", "Declined",
                                                                              CALLBACK)


def test_an_authorized_payment_is_cancelled(sandbox, app):
    tx_no = _moved(sandbox, _pending(sandbox), "Authorized")
    response = _cancel(sandbox, tx_no)
    assert response.status_code == 200, response.text
    assert (response.json()["Status"], response.json()["DeclineReason"]) == ("Declined", "Payment Cancelled By User")
    history = _rows(app, status_history, status_history.c.transaction_id == _transaction_id(app, tx_no))
    assert (history[-1].from_status, history[-1].to_status) == ("Authorized", "Declined")


def test_the_sandbox_test_transactions_can_be_cancelled(sandbox):
    for tx_no in ("SBX-PENDING", "SBX-AUTHORIZED"):
        response = _cancel(sandbox, tx_no)
        assert response.status_code == 200, response.text
        assert response.json()["Status"] == "Declined"


def test_a_live_payment_is_cancelled_with_a_live_token(live):
    tx_no = _pending(live)
    response = _cancel(live, tx_no)
    assert response.status_code == 200, response.text
    assert live.status(tx_no)["DeclineReason"] == "Payment Cancelled By User"


@pytest.mark.parametrize("moves, status", [
    (("Captured",), "Captured"),
    (("Declined",), "Declined"),
    (("Failed",), "Failed"),
    (("Captured", "Chargeback"), "Chargeback"),
])
def test_a_payment_past_pending_or_authorized_is_refused_and_unchanged(sandbox, moves, status):
    tx_no = _moved(sandbox, _pending(sandbox), *moves)
    before = sandbox.status(tx_no)
    response = _cancel(sandbox, tx_no)
    assert (response.status_code, response.json()) == (400, _refused(status))
    assert sandbox.status(tx_no) == before


def test_a_refunded_payment_is_refused(sandbox, captured_payment):
    tx_no = captured_payment(100)
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100}).status_code == 200
    response = _cancel(sandbox, tx_no)
    assert (response.status_code, response.json()) == (400, _refused("Refunded"))


def test_a_payout_cannot_be_cancelled(sandbox):
    tx_no = _pending(sandbox, transactionAction="PAYMENT", currency="KES",
                     payment={"paymentMethod": "mobile-money-payout", "holder": "Wanjiku",
                              "accountNumber": "+254712345678"})
    response = _cancel(sandbox, tx_no)
    assert (response.status_code, response.json()) == (
        400, {"error": f"Only payments can be cancelled; transaction {tx_no} is a payout"})
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_a_refund_cannot_be_cancelled(sandbox):
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 10})
    assert refund.status_code == 200 and refund.json()["status"] == "Pending", refund.text
    refund_tx_no = refund.json()["refundTxNo"]
    response = _cancel(sandbox, refund_tx_no)
    assert (response.status_code, response.json()) == (
        400, {"error": f"Only payments can be cancelled; transaction {refund_tx_no} is a refund"})
    assert sandbox.status(refund_tx_no)["Status"] == "Pending"


def test_a_second_cancel_is_refused_naming_declined(sandbox, app):
    tx_no = _pending(sandbox, callbackUrl=CALLBACK)
    assert _cancel(sandbox, tx_no).status_code == 200
    again = _cancel(sandbox, tx_no)
    assert (again.status_code, again.json()) == (400, _refused("Declined"))
    tx_id = _transaction_id(app, tx_no)
    assert len(_rows(app, webhook_events, webhook_events.c.transaction_id == tx_id)) == 1


def test_an_unknown_txno_answers_404_as_the_status_endpoint_does(sandbox):
    response = _cancel(sandbox, "PAY-0000000000000000")
    status = sandbox.get("/transactions/PAY-0000000000000000/status")
    assert (response.status_code, response.json()) == (
        404, {"error": "Transaction with TxNo PAY-0000000000000000 not found"})
    assert (status.status_code, status.json()) == (response.status_code, response.json())


def test_a_txno_no_transaction_could_have_answers_404(sandbox):
    long_tx_no = "P" * 101
    response = _cancel(sandbox, long_tx_no)
    assert (response.status_code, response.json()) == (404, {"error": f"Transaction with TxNo {'P' * 100} not found"})


def test_another_merchants_payment_is_not_found_and_untouched(sandbox, server):
    app = server.app
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    other_api = Api(server.url, other.sandbox_token)
    tx_no = _pending(other_api)
    response = _cancel(sandbox, tx_no)
    assert (response.status_code, response.json()) == (404, {"error": f"Transaction with TxNo {tx_no} not found"})
    assert other_api.status(tx_no)["Status"] == "Pending"


def test_a_live_token_cannot_cancel_a_sandbox_payment(sandbox, live):
    tx_no = _pending(sandbox)
    response = _cancel(live, tx_no)
    assert (response.status_code, response.json()) == (404, {"error": f"Transaction with TxNo {tx_no} not found"})
    assert sandbox.status(tx_no)["Status"] == "Pending"


@pytest.mark.parametrize("header", [None, "Bearer pd_test_not-a-real-token", "Basic abc"])
def test_without_a_valid_token_the_answer_is_401(server, sandbox, header):
    tx_no = _pending(sandbox)
    headers = {"Authorization": header} if header else {}
    response = requests.post(f"{server.url}/api/v1/transactions/{tx_no}/cancel", headers=headers, timeout=30)
    assert (response.status_code, response.json()) == (
        401, {"error": "Authentication Error", "message": "Invalid client credentials"})
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_an_empty_json_object_body_is_accepted(sandbox):
    tx_no = _pending(sandbox)
    response = _cancel(sandbox, tx_no, body={})
    assert (response.status_code, response.json()["Status"]) == (200, "Declined")


@pytest.mark.parametrize("data, errors", [
    ('{"amount": 5}', {"amount": ["Unknown field"]}),
    ("[]", {"Body": ["Request body must be a JSON object"]}),
    ("{not json", {"Body": ["Request body must be valid JSON"]}),
])
def test_a_body_with_anything_in_it_is_refused_and_nothing_changes(sandbox, data, errors):
    tx_no = _pending(sandbox)
    response = _cancel(sandbox, tx_no, data=data, headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (400, {"errors": errors})
    assert sandbox.status(tx_no)["Status"] == "Pending"


def _unreachable(_self, _tx):
    raise ProviderUnavailable("connect timeout")


def test_an_unreachable_provider_answers_502_and_nothing_changes(sandbox, app, monkeypatch):
    tx_no = _pending(sandbox, callbackUrl=CALLBACK)
    monkeypatch.setattr(SimulatorProvider, "cancel", _unreachable)
    response = _cancel(sandbox, tx_no)
    assert (response.status_code, response.json()) == (502, PROVIDER_DOWN)
    assert sandbox.status(tx_no)["Status"] == "Pending"
    assert _rows(app, webhook_events, webhook_events.c.transaction_id == _transaction_id(app, tx_no)) == []


def test_a_payment_the_provider_reports_paid_is_recorded_captured_and_refused(sandbox, monkeypatch):
    tx_no = _moved(sandbox, _pending(sandbox), "Authorized")

    def paid_meanwhile(_self, tx):
        return Outcome(Status.CAPTURED, tx.provider_transaction_id, "PAID", "Payment captured")

    monkeypatch.setattr(SimulatorProvider, "cancel", paid_meanwhile)
    response = _cancel(sandbox, tx_no)
    assert (response.status_code, response.json()) == (400, _refused("Captured"))
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_the_same_idempotency_key_replays_the_first_answer(sandbox):
    tx_no = _pending(sandbox)
    key = {"Idempotency-Key": f"cancel-{uuid.uuid4().hex}"}
    first = _cancel(sandbox, tx_no, headers=key)
    second = _cancel(sandbox, tx_no, headers=key)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers


def test_a_refusal_is_replayed_for_its_key_too(sandbox):
    key = {"Idempotency-Key": f"cancel-{uuid.uuid4().hex}"}
    first = _cancel(sandbox, "SBX-CAPTURED", headers=key)
    second = _cancel(sandbox, "SBX-CAPTURED", headers=key)
    assert (first.status_code, first.json()) == (400, _refused("Captured"))
    assert (second.status_code, second.content, second.headers["Idempotent-Replayed"]) \
        == (400, first.content, "true")


def test_the_same_key_for_another_transaction_is_422(sandbox):
    key = {"Idempotency-Key": f"cancel-{uuid.uuid4().hex}"}
    assert _cancel(sandbox, _pending(sandbox), headers=key).status_code == 200
    other = _cancel(sandbox, _pending(sandbox), headers=key)
    assert (other.status_code, other.json()) == (422, {"error": "Idempotency-Key reused with a different request"})


def test_after_an_unreachable_provider_the_same_key_cancels(sandbox, monkeypatch):
    tx_no = _pending(sandbox)
    key = {"Idempotency-Key": f"cancel-{uuid.uuid4().hex}"}
    with monkeypatch.context() as patch:
        patch.setattr(SimulatorProvider, "cancel", _unreachable)
        assert _cancel(sandbox, tx_no, headers=key).status_code == 502
    retried = _cancel(sandbox, tx_no, headers=key)
    assert (retried.status_code, retried.json()["Status"]) == (200, "Declined")
    assert "Idempotent-Replayed" not in retried.headers


CANCEL_OPERATION = schemathesis.openapi.from_dict(openapi_document("http://paydesk.test"))[
    "/api/v1/transactions/{txNo}/cancel"]["POST"]


def _documented(server, token: str, tx_no: str, expected: int, headers=None, **case) -> None:
    """One cancel checked against the OpenAPI document by schemathesis's response checks."""
    response = CANCEL_OPERATION.Case(headers={"Authorization": f"Bearer {token}", **(headers or {})},
                                     path_parameters={"txNo": tx_no}, **case).call_and_validate(
        base_url=server.url, excluded_checks=[not_a_server_error] if expected >= 500 else [])
    assert response.status_code == expected, response.text


def test_every_answer_matches_the_openapi_document(server, merchant, sandbox, monkeypatch):
    token = merchant.sandbox_token
    tx_no = _pending(sandbox)
    with monkeypatch.context() as patch:
        patch.setattr(SimulatorProvider, "cancel", _unreachable)
        _documented(server, token, tx_no, 502)
    _documented(server, token, tx_no, 200, headers={"Idempotency-Key": f"doc-{uuid.uuid4().hex}"})
    _documented(server, token, tx_no, 400)
    _documented(server, token, tx_no, 400, body={"amount": 5})
    _documented(server, token, "PAY-0000000000000000", 404)


def test_a_requested_cancel_answers_202_as_the_openapi_document_says(server, merchant, sandbox,
                                                                     simulator_behind_a_network):
    tx_no = _pending(sandbox)
    _documented(server, merchant.sandbox_token, tx_no, 202)
    _documented(server, merchant.sandbox_token, tx_no, 202)  # again while it is outstanding
