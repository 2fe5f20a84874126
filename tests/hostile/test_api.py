"""Generated hostile requests on every /api/v1 endpoint: never a 5xx, every answer JSON.

Bodies are near-valid ones with fields replaced by hostile values (lone surrogates, control
characters, huge and tiny numbers, deep nesting, wrong types), dropped, or joined by unknown
fields; then any JSON, and bytes that are no JSON. Paths and query strings get hostile text.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from app.payments.sandbox import FIXTURE_TX_NOS
from tests.conftest import payment_body
from tests.support.strategies import header_values, path_segments, query_strings, raw_bodies

from .conftest import assert_json_answer

PAYOUT = {
    "amount": 2500, "currency": "KES", "reference": "payout-1", "statementDescriptor": "PAYDESK",
    "callbackUrl": "https://merchant.example/hooks", "transactionAction": "PAYMENT",
    "billing": {"firstName": "Wanjiru", "lastName": "Kamau", "email": "w@example.com",
                "customerReference": "cust-9", "country": "KE"},
    "payment": {"paymentMethod": "mobile-money-payout", "holder": "Wanjiru Kamau",
                "accountNumber": "+254712345678"},
}
REFUND = {"txNo": "SBX-CAPTURED", "amount": 1, "reason": "Damaged", "description": "Box torn"}
BANKS = {"paymentMethod": "ng-bank-payout", "currency": "NGN", "country": "NG"}
OUTCOME = {"status": "Declined", "declineReason": "Declined By Bank"}

content_types = st.sampled_from(["application/json", "application/json; charset=latin-1",
                                 "text/plain", "application/x-www-form-urlencoded",
                                 "multipart/form-data; boundary=x", ""])
tx_nos = st.one_of(st.sampled_from(FIXTURE_TX_NOS), path_segments)


@dataclass(frozen=True)
class Call:
    """One request of the corpus."""

    method: str
    path: str  # percent-encoded
    query: str = ""
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()


@st.composite
def headers(draw, idempotent: bool = False) -> tuple:
    """A Content-Type, for create and refund an Idempotency-Key, each perhaps hostile or absent."""
    chosen = []
    if draw(st.booleans()):
        chosen.append(("Content-Type", draw(content_types)))
    if idempotent and draw(st.booleans()):
        chosen.append(("Idempotency-Key", draw(st.one_of(st.sampled_from(["k1", "k2"]), header_values))))
    return tuple(chosen)


def posts(paths, valid: dict, idempotent: bool = False):
    return st.builds(Call, st.just("POST"), paths, st.just(""), raw_bodies(valid), headers(idempotent))


def gets(paths, parameters: list[str]):
    return st.builds(Call, st.just("GET"), paths, query_strings(parameters))


ENDPOINTS = {
    "create": posts(st.just("/api/v1/transactions"), payment_body(reference="hostile-1"), True),
    "create payout": posts(st.just("/api/v1/transactions"), PAYOUT, True),
    "refund": posts(st.just("/api/v1/transactions/refund"), REFUND, True),
    "cancel": posts(tx_nos.map("/api/v1/transactions/{}/cancel".format), {}, True),
    "banks": posts(st.just("/api/v1/transactions/banks"), BANKS),
    "sandbox outcome": posts(tx_nos.map("/api/v1/sandbox/transactions/{}/outcome".format), OUTCOME),
    "sandbox reset": posts(st.just("/api/v1/sandbox/reset"), {}),
    "webhook resend": posts(path_segments.map("/api/v1/webhooks/{}/resend".format), {}),
    "status": gets(tx_nos.map("/api/v1/transactions/{}/status".format), []),
    "webhooks": gets(st.just("/api/v1/webhooks"), ["limit", "txNo"]),
    "payment methods and openapi": gets(st.sampled_from(["/api/v1/payment-methods",
                                                         "/api/v1/openapi.json"]), []),
    "unknown paths and methods": st.builds(
        Call, st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
        st.one_of(path_segments.map("/api/v1/{}".format),
                  st.sampled_from(["/api/v1/transactions", "/api/v1/transactions/refund",
                                   "/api/v1/sandbox/reset", "/api/v1/webhooks", "/api/v1/"])),
        query_strings([]), st.one_of(st.none(), st.binary(max_size=32))),
}
TOKENS = ["sandbox", "sandbox", "sandbox", "live", "invalid"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@settings(max_examples=60, deadline=None,
          # one merchant serves every example, as one merchant's client would send them
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_hostile_api_requests_get_json_answers_never_5xx(app, merchant, endpoint, data):
    call = data.draw(ENDPOINTS[endpoint], label="call")
    token = {"sandbox": merchant.sandbox_token, "live": merchant.live_token,
             "invalid": data.draw(header_values, label="token")}[
        data.draw(st.sampled_from(TOKENS), label="token kind")]
    note(f"{call.method} {call.path[:300]}?{call.query[:300]} body={call.body[:300] if call.body else None!r}")
    response = app.test_client().open(
        call.path, method=call.method, query_string=call.query, data=call.body,
        headers=[("Authorization", f"Bearer {token}"), *call.headers])
    assert_json_answer(response, f"{call.method} {call.path[:100]}")
