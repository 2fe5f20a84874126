"""An unexpected error: 500 with the request id, JSON under /api/v1, a page elsewhere, logged with both."""
from __future__ import annotations

import logging

from flask import abort

from app.payments import bank_lists, lookup
from app.providers.simulator import SimulatorProvider

from .conftest import bearer


def broken(*_args, **_kwargs):
    raise RuntimeError("a bug")


def test_an_api_500_is_json_with_the_request_id(client, sandbox_token, monkeypatch, caplog):
    monkeypatch.setattr(lookup, "stored_status", broken)  # what the status route calls
    response = client.get("/api/v1/transactions/SBX-CAPTURED/status", headers=bearer(sandbox_token))
    assert response.status_code == 500
    assert response.mimetype == "application/json"
    request_id = response.headers["X-Request-Id"]
    assert response.get_json() == {"error": "Internal Server Error", "requestId": request_id}
    [logged] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert request_id in logged.getMessage()  # the line that carries the traceback
    assert isinstance(logged.exc_info[1], RuntimeError)


def test_the_caller_s_request_id_is_the_one_answered_and_logged(client, sandbox_token, monkeypatch,
                                                                caplog):
    monkeypatch.setattr(lookup, "stored_status", broken)  # what the status route calls
    response = client.get("/api/v1/transactions/SBX-CAPTURED/status",
                          headers={**bearer(sandbox_token), "X-Request-Id": "client-42"})
    assert response.get_json()["requestId"] == "client-42"
    assert "client-42" in caplog.text


def test_a_500_outside_the_api_is_a_page_with_the_request_id(app, caplog):
    app.add_url_rule("/broken-page", view_func=broken)
    response = app.test_client().get("/broken-page")
    assert response.status_code == 500
    assert response.mimetype == "text/html"
    request_id = response.headers["X-Request-Id"]
    assert request_id in response.get_data(as_text=True)
    assert request_id in caplog.text


def test_any_other_http_error_under_the_api_is_json(app):
    def refuse():
        abort(409)

    app.add_url_rule("/api/v1/refusing", view_func=refuse)
    response = app.test_client().get("/api/v1/refusing")
    assert (response.status_code, response.mimetype) == (409, "application/json")
    assert response.get_json() == {"error": "Conflict"}


def test_the_bank_list_500_keeps_the_interface_body(client, sandbox_token, monkeypatch):
    monkeypatch.setattr(SimulatorProvider, "banks", broken)
    response = client.post("/api/v1/transactions/banks", headers=bearer(sandbox_token),
                           json={"paymentMethod": "ng-bank-payout", "currency": "NGN"})
    assert response.status_code == 500
    assert response.get_json() == {
        "error": "Internal Server Error",
        "message": "An error occurred while fetching the bank list. Please contact support.",
    }
    assert response.headers["X-Request-Id"]


def test_a_database_failure_during_the_bank_list_is_not_the_providers_500(client, sandbox_token,
                                                                          monkeypatch):
    import psycopg
    from sqlalchemy.exc import OperationalError

    def database_gone(*_args, **_kwargs):
        raise OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed the connection"))

    monkeypatch.setattr(bank_lists, "list_banks", database_gone)
    response = client.post("/api/v1/transactions/banks", headers=bearer(sandbox_token),
                           json={"paymentMethod": "ng-bank-payout", "currency": "NGN"})
    assert response.status_code == 503
    assert response.get_json() == {"error": "Service temporarily unavailable"}
