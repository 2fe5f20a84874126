"""The OpenAPI document: valid OpenAPI 3.1, in step with the api blueprint, and true to the live server."""
from __future__ import annotations

import itertools
import re
import uuid

import jsonschema_rs
import pytest
import requests
import schemathesis
from schemathesis.checks import not_a_server_error
from sqlalchemy import select

from app.api import idempotency
from app.api.openapi import openapi_document
from app.payments.model import Mode
from app.store.idempotency import claim
from app.store.merchants import create_merchant
from app.store.tables import webhook_events
from app.webhooks.outbox import AttemptResult, ClaimedEvent, record_attempt
from tests.conftest import connect_paystack, payment_body

# Per operation and generation mode (valid and invalid data), after the examples and
# coverage phases: enough to reach every documented answer, under a minute per backend.
EXAMPLES_PER_OPERATION = 40
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance")
ROUTE_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Loaded from the module's dict at import, so pytest can collect one test per operation;
# the live server's address is known only once its fixture runs, so every call names it.
# schemathesis.pytest.from_fixture could load the served document instead, but it fails on
# pytest 9.2 (no Function._nodeid); a plain test checks the served document is this one.
schema = schemathesis.openapi.from_dict(
    openapi_document("http://paydesk.test"),
    config=schemathesis.Config.from_dict({
        "seed": 1,
        "generation": {"mode": "all", "max-examples": EXAMPLES_PER_OPERATION, "deterministic": True,
                       "database": "none", "with-security-parameters": False},
        "phases": {"stateful": {"enabled": False}},
        "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        # How fast Hypothesis makes data is the machine's, not the API's: a 5,000-row batch body
        # generated on a busy 2-core machine tripped the health check while every answer was right.
        "suppress-health-check": ["too_slow"],
    }),
)


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def fuzzed_merchant(server):
    """One merchant per backend for the fuzzing: every generated request of the run uses its sandbox."""
    app = server.app
    with app.extensions["paydesk"].uow() as uow:
        created = create_merchant(uow, f"OpenAPI fuzz {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    return created


_key_serial = itertools.count()


def _make_idempotency_key_unique(case) -> None:
    """Generated keys repeat ("0", "00", ...), so most bodies after the first would only get 422.

    A key the server accepts gets a unique prefix; a key it must refuse is sent as generated.
    """
    key = (case.headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and 0 < len(key) <= 240 and key.isprintable() and key.strip() == key:
        case.headers["Idempotency-Key"] = f"{next(_key_serial):08d}-{key}"


@schema.parametrize()
def test_every_answer_matches_the_document(case, server, fuzzed_merchant):
    _make_idempotency_key_unique(case)
    case.call_and_validate(base_url=server.url, headers=bearer(fuzzed_merchant.sandbox_token))


def conforming(server, token: str | None, method: str, path: str, expected: int, *, body=None,
               headers=None, tx_no=None, path_parameters=None, query=None, excluded_checks=()):
    """One request the fuzzer rarely makes, checked by the same checks; asserts its status code."""
    if tx_no is not None:
        path_parameters = {"txNo": tx_no}
    extra = {"body": body} if body is not None else {}
    case = schema[path][method].Case(headers={**(bearer(token) if token else {}), **(headers or {})},
                                     path_parameters=path_parameters, query=query, **extra)
    response = case.call_and_validate(base_url=server.url, excluded_checks=list(excluded_checks))
    assert response.status_code == expected, response.text
    return response


CREATE, REFUND, BANKS = "/api/v1/transactions", "/api/v1/transactions/refund", "/api/v1/transactions/banks"
STATUS, OUTCOME = "/api/v1/transactions/{txNo}/status", "/api/v1/sandbox/transactions/{txNo}/outcome"
WEBHOOKS, RESEND = "/api/v1/webhooks", "/api/v1/webhooks/{webhookId}/resend"


def test_create_replay_reuse_and_duplicate_answers_match(server, merchant):
    token, body = merchant.sandbox_token, payment_body()
    key = {"Idempotency-Key": f"key-{uuid.uuid4().hex}"}
    first = conforming(server, token, "POST", CREATE, 200, body=body, headers=key)
    replayed = conforming(server, token, "POST", CREATE, 200, body=body, headers=key)
    assert replayed.headers["idempotent-replayed"] == ["true"]
    assert replayed.content == first.content
    conforming(server, token, "POST", CREATE, 422, body=payment_body(), headers=key)
    duplicate = conforming(server, token, "POST", CREATE, 409, body=body)
    assert duplicate.json()["transactionId"] == first.json()["transactionId"]


@pytest.mark.parametrize("path,body", [(CREATE, payment_body()), (REFUND, {"txNo": "SBX-CAPTURED", "amount": 1})])
def test_key_still_running_answers_409(server, merchant, monkeypatch, path, body):
    """A duplicate that waited in vain for the first request's answer (the wait is shortened here)."""
    monkeypatch.setattr(idempotency, "WAIT_FOR_FIRST", 0.2)
    key, deps = f"key-{uuid.uuid4().hex}", server.app.extensions["paydesk"]
    with deps.uow() as uow:
        claim(uow.conn, merchant.merchant_id, Mode.SANDBOX.value, key, idempotency.request_hash("POST", path, body),
              deps.clock())
        uow.commit()
    response = conforming(server, merchant.sandbox_token, "POST", path, 409, body=body,
                          headers={"Idempotency-Key": key})
    assert response.json() == {"error": "A request with this Idempotency-Key is still being processed"}


@pytest.mark.parametrize("overrides", [
    {"currency": "EUR", "transactionAction": "PAYMENT",
     "payment": {"paymentMethod": "sepa-payout", "bank": "COBADEFF", "holder": "Max Mustermann",
                 "accountNumber": "DE89 3704 0044 0532 0130 00"}},
    {"currency": "KES", "transactionAction": "PAYMENT",
     "payment": {"paymentMethod": "mobile-money-payout", "holder": "Wanjiku", "accountNumber": "+254712345678"}},
    {"currency": "JPY", "amount": 1500, "successUrl": "https://shop.example/ok", "userDefinedField3": None},
    {"currency": "KWD", "amount": 1.125, "billing": {"firstName": "A", "lastName": "B", "email": "a@example.com",
                                                     "customerReference": "c", "country": "KW"}},
])
def test_payouts_and_other_currencies_match(server, merchant, overrides):
    created = conforming(server, merchant.sandbox_token, "POST", CREATE, 200, body=payment_body(**overrides))
    tx_no = created.json()["transactionId"]
    conforming(server, merchant.sandbox_token, "GET", STATUS, 200, tx_no=tx_no)


@pytest.mark.parametrize("tx_no,amount,status", [
    ("SBX-CAPTURED", 10, "Captured"),
    ("SBX-REFUND-DECLINED", 10, "Declined"),
    ("SBX-REFUND-FAILED", 10, "Failed"),
    ("SBX-REFUND-ASYNC", 10, "Pending"),
])
def test_refund_outcomes_and_the_refund_status_match(server, merchant, tx_no, amount, status):
    token = merchant.sandbox_token
    refund = conforming(server, token, "POST", REFUND, 200, body={"txNo": tx_no, "amount": amount,
                                                                  "reason": "damaged", "description": None})
    assert refund.json()["status"] == status
    conforming(server, token, "GET", STATUS, 200, tx_no=refund.json()["refundTxNo"])


@pytest.mark.parametrize("body,shape", [
    ({"txNo": "SBX-NO-PARTIAL", "amount": 10}, "error"),
    ({"txNo": "SBX-PENDING", "amount": 10}, "error"),
    ({"txNo": "SBX-CAPTURED", "amount": 0}, "errors"),
    ({"txNo": "SBX-CAPTURED", "amount": 10.001}, "errors"),
])
def test_both_refund_error_shapes_match(server, merchant, body, shape):
    response = conforming(server, merchant.sandbox_token, "POST", REFUND, 400, body=body)
    assert set(response.json()) == {shape}


def test_declined_status_and_outcome_moves_match(server, merchant):
    token = merchant.sandbox_token
    assert conforming(server, token, "GET", STATUS, 200, tx_no="SBX-DECLINED").json()["DeclineReason"]
    moved = conforming(server, token, "POST", OUTCOME, 200, tx_no="SBX-AUTHORIZED",
                       body={"status": "Declined", "declineReason": "Suspected Fraud"})
    assert moved.json()["DeclineReason"] == "Suspected Fraud"
    conforming(server, token, "POST", OUTCOME, 409, tx_no="SBX-AUTHORIZED", body={"status": "Captured"})


def test_bank_list_etag_revalidation_matches(server, merchant):
    body = {"paymentMethod": "sepa-payout", "currency": "EUR", "country": "deu"}
    listed = conforming(server, merchant.sandbox_token, "POST", BANKS, 200, body=body)
    (etag,) = listed.headers["etag"]
    conforming(server, merchant.sandbox_token, "POST", BANKS, 304, body=body, headers={"If-None-Match": etag})


def test_bank_list_provider_failure_matches(server, merchant, monkeypatch):
    from app.providers.simulator import SimulatorProvider

    def broken(*_args, **_kwargs):
        raise ConnectionError("provider down")

    monkeypatch.setattr(SimulatorProvider, "banks", broken)
    conforming(server, merchant.sandbox_token, "POST", BANKS, 500,
               body={"paymentMethod": "ng-bank-payout", "currency": "NGN"},
               excluded_checks=[not_a_server_error])  # this 500 is the documented answer


def test_bank_list_and_payout_without_a_stored_list_match(server, merchant):
    connect_paystack(server.app, merchant.merchant_id)
    listed = conforming(server, merchant.live_token, "POST", BANKS, 503,
                        body={"paymentMethod": "paystack-bank-payout", "currency": "NGN"},
                        excluded_checks=[not_a_server_error])  # the documented answer while fetching
    assert listed.headers["retry-after"] == ["5"]
    payout = payment_body(currency="NGN", transactionAction="PAYMENT", payment={
        "paymentMethod": "paystack-bank-payout", "bank": "058", "holder": "Ada Obi",
        "accountNumber": "0123456789"})
    conforming(server, merchant.live_token, "POST", CREATE, 503, body=payout,
               excluded_checks=[not_a_server_error])


def _log_attempt(app, webhook_id: str) -> None:
    """A delivery attempt in the event's log, as the worker records one."""
    deps = app.extensions["paydesk"]
    with deps.uow(write=False) as uow:
        event = uow.conn.execute(select(webhook_events).where(webhook_events.c.webhook_id == webhook_id)).one()
    now = deps.clock()
    claimed = ClaimedEvent(event_id=event.id, merchant_id=event.merchant_id, mode=Mode(event.mode),
                           webhook_id=webhook_id, url=event.url, payload=event.payload, attempt_no=1,
                           schedule_position=1, manual=False, lease_until=now, secrets=[])
    record_attempt(deps, claimed, AttemptResult(started_at=now, duration_ms=12, http_status=500,
                                                request_headers={"webhook-id": webhook_id},
                                                response_excerpt="oops", error="HTTP 500"))


def test_webhook_log_and_resend_match(server, merchant):
    token = merchant.sandbox_token
    conforming(server, token, "POST", OUTCOME, 200, tx_no="SBX-PENDING", body={"status": "Captured"})
    listed = conforming(server, token, "GET", WEBHOOKS, 200, query={"txNo": "SBX-PENDING", "limit": 5})
    (event,) = listed.json()["webhooks"]
    _log_attempt(server.app, event["webhookId"])
    resent = conforming(server, token, "POST", RESEND, 202, path_parameters={"webhookId": event["webhookId"]})
    assert [a["httpStatus"] for a in resent.json()["attempts"]] == [500]
    conforming(server, token, "GET", WEBHOOKS, 200)
    conforming(server, token, "GET", WEBHOOKS, 400, query={"limit": 0})
    conforming(server, token, "GET", WEBHOOKS, 404, query={"txNo": "NOPE-1"})
    conforming(server, token, "POST", RESEND, 404, path_parameters={"webhookId": "msg_unknown"})


@pytest.mark.parametrize("method,path,body", [
    ("POST", "/api/v1/sandbox/reset", None),
    ("POST", OUTCOME, {"status": "Captured"}),
])
def test_live_tokens_get_sandbox_only(server, merchant, method, path, body):
    tx_no = "SBX-PENDING" if "{txNo}" in path else None
    conforming(server, merchant.live_token, method, path, 403, body=body, tx_no=tx_no)


@pytest.mark.parametrize("label", sorted(f"{op.method.upper()} {op.path}" for op in (
    result.ok() for result in schema.get_all_operations())))
@pytest.mark.parametrize("token", [None, "pd_test_not-a-real-token"])
def test_every_operation_answers_401_as_documented(server, label, token):
    method, path = label.split(" ", 1)
    body = {} if method == "POST" and schema[path][method].body else None
    parameters = {name: "SBX-CAPTURED" for name in re.findall(r"{(\w+)}", path)}
    conforming(server, token, method, path, 401, body=body, path_parameters=parameters)


@pytest.mark.parametrize("path", [CREATE, REFUND, BANKS, OUTCOME])
def test_bodies_over_a_mebibyte_match(server, merchant, path):
    operation = schema[path]["POST"]
    case = operation.Case(headers=bearer(merchant.sandbox_token), media_type="application/json",
                          path_parameters={"txNo": "SBX-PENDING"} if "{txNo}" in path else {},
                          body={"padding": "x" * (1024 * 1024)})
    response = case.call_and_validate(base_url=server.url)
    assert response.status_code == 413
    assert response.json() == {"errors": {"Body": ["Request body is too large"]}}


@pytest.mark.parametrize("method,path,status,error", [
    ("GET", "/api/v1/no-such-endpoint", 404, "Not found"),
    ("GET", "/api/v1/transactions/a%0Ab/status", 404, "Not found"),
    ("DELETE", "/api/v1/transactions", 405, "Method not allowed"),
])
def test_unrouted_api_urls_answer_json(server, merchant, method, path, status, error):
    response = requests.request(method, server.url + path, headers=bearer(merchant.sandbox_token), timeout=10)
    assert (response.status_code, response.headers["Content-Type"]) == (status, "application/json")
    assert response.json() == {"error": error}


def _schema_objects(node, where="#"):
    """Every JSON Schema in the document, with its location."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}/{key}"
            if key == "schema":
                yield here, value
            elif key == "schemas":
                yield from ((f"{here}/{name}", s) for name, s in value.items())
            else:
                yield from _schema_objects(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _schema_objects(value, f"{where}/{index}")


def test_document_is_valid_openapi_3_1():
    document = openapi_document("http://paydesk.test")
    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()  # against the OpenAPI 3.1 meta-schema
    found = list(_schema_objects(document))
    assert len(found) > 20
    for where, schema_object in found:
        # The 3.1 meta-schema leaves Schema Objects loose; check each against its dialect.
        try:
            jsonschema_rs.meta.validate({"$schema": JSON_SCHEMA_DIALECT, **schema_object})
        except jsonschema_rs.ValidationError as error:
            pytest.fail(f"{where}: {error}")


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def _blueprint_routes(app) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/v1"):
            path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", lambda m: "{" + _camel(m.group(1)) + "}", rule.rule)
            routes.update((method, path) for method in rule.methods & ROUTE_METHODS)
    return routes


def test_document_and_routes_name_the_same_operations(app):
    document = openapi_document("http://paydesk.test")
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert documented == _blueprint_routes(app)


def test_served_document_is_the_module_document_with_this_server(server, sandbox):
    response = sandbox.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == openapi_document(server.app.config["BASE_URL"])
