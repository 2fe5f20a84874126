"""Bearer tokens on every endpoint, and every answer scoped to the token's merchant and mode."""
from __future__ import annotations

import re

import flask
import pytest
import requests

from app.api.openapi import openapi_document
from app.auth.api_tokens import TokenMemory
from app.store.merchants import revoke_token
from app.store.tables import api_tokens
from tests.conftest import Api, payment_body

AUTH_ERROR = {"error": "Authentication Error", "message": "Invalid client credentials"}
# Every operation of the OpenAPI document (itself checked to name exactly the api blueprint's
# routes), path parameters filled with a sample value.
ENDPOINTS = sorted(
    (method.upper(), re.sub(r"\{[^}]+\}", "SBX-CAPTURED", path).removeprefix("/api/v1"))
    for path, operations in openapi_document("http://paydesk.test")["paths"].items()
    for method in operations
)


@pytest.mark.parametrize("method,path", ENDPOINTS)
@pytest.mark.parametrize("header", [None, "Bearer", "Bearer nope", "Basic abc", "bearer  "])
def test_every_endpoint_refuses_missing_or_unknown_tokens(server, method, path, header):
    headers = {"Authorization": header} if header is not None else {}
    response = requests.request(method, f"{server.url}/api/v1{path}", headers=headers, json={}, timeout=10)
    assert response.status_code == 401
    assert response.json() == AUTH_ERROR


def revoke_live_token(app, merchant) -> None:
    with app.extensions["paydesk"].uow() as uow:
        token_id = uow.conn.execute(
            api_tokens.select().where(api_tokens.c.merchant_id == merchant.merchant_id,
                                      api_tokens.c.mode == "live")).first().id
        assert revoke_token(uow.conn, merchant.merchant_id, token_id)
        uow.commit()


def test_revoked_token_is_refused(server, merchant, app, monkeypatch):
    monkeypatch.setitem(app.config, "TOKEN_CACHE_SECONDS", 0)
    client = Api(server.url, merchant.live_token)
    assert client.get("/payment-methods").status_code == 200
    revoke_live_token(app, merchant)
    response = client.get("/payment-methods")
    assert (response.status_code, response.json()) == (401, AUTH_ERROR)


def test_a_remembered_token_is_refused_once_the_memory_expires(server, merchant, app, monkeypatch):
    now = [1000.0]
    monkeypatch.setitem(app.extensions, "paydesk.tokens", TokenMemory(clock=lambda: now[0]))
    client = Api(server.url, merchant.live_token)
    assert client.get("/payment-methods").status_code == 200
    revoke_live_token(app, merchant)
    now[0] += 4.9
    assert client.get("/payment-methods").status_code == 200  # remembered for TOKEN_CACHE_SECONDS
    now[0] += 0.2
    response = client.get("/payment-methods")
    assert (response.status_code, response.json()) == (401, AUTH_ERROR)


@pytest.fixture
def other_sandbox(server, app):
    from app.store.merchants import create_merchant

    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, "Other merchant " + __import__("uuid").uuid4().hex[:8],
                                app.config["BASE_URL"])
        uow.commit()
    return Api(server.url, other.sandbox_token)


def test_another_merchants_transaction_answers_as_unknown(sandbox, other_sandbox, captured_payment):
    tx_no = captured_payment(100)
    status = other_sandbox.get(f"/transactions/{tx_no}/status")
    assert (status.status_code, status.json()) == (404, {"error": f"Transaction with TxNo {tx_no} not found"})
    refund = other_sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10})
    assert refund.json() == {"error": f"Original transaction with TxNo {tx_no} not found"}
    outcome = other_sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"})
    assert outcome.status_code == 404
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_live_token_does_not_see_sandbox_data(sandbox, live, captured_payment):
    tx_no = captured_payment(100)
    assert live.get(f"/transactions/{tx_no}/status").status_code == 404
    assert live.get("/transactions/SBX-CAPTURED/status").status_code == 404
    assert live.post("/transactions/refund", {"txNo": tx_no, "amount": 1}).json() == {
        "error": f"Original transaction with TxNo {tx_no} not found"}


def test_each_merchant_has_its_own_sandbox_fixtures(sandbox, other_sandbox):
    sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 100})
    assert sandbox.status("SBX-CAPTURED")["Status"] == "Refunded"
    assert other_sandbox.status("SBX-CAPTURED")["Status"] == "Captured"


def test_duplicate_reference_of_another_merchant_is_not_a_conflict(sandbox, other_sandbox):
    assert sandbox.post("/transactions", payment_body(reference="shared-ref")).status_code == 200
    assert other_sandbox.post("/transactions", payment_body(reference="shared-ref")).status_code == 200



@pytest.mark.parametrize("path,has_session", [
    ("/api/v1/transactions/SBX-CAPTURED/status", False),
    ("/api/v1", False),
    ("/login", True),
    ("/transactions", True),
    ("/api/v10", True),  # not under the API's prefix
])
def test_only_dashboard_requests_open_a_cookie_session(app, path, has_session):
    """Bearer-token API calls skip the session's signing work; the dashboard keeps its sessions."""
    with app.test_request_context(path):
        opened = app.session_interface.open_session(app, flask.request)
    assert (opened is not None) is has_session
