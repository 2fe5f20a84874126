"""Scoped tokens: the endpoint -> scope table covers the blueprint, a request beyond a scope gets
403 naming it, an expired token is unknown, and a token answers only from its networks."""
from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from app.auth.scopes import ENDPOINT_SCOPES
from app.payments.model import Mode
from app.payments.tokens import SCOPES, LimitKind, TokenLimit, parse_networks
from app.store.merchants import issue_token
from app.util import utcnow
from tests.conftest import Api, payment_body

AUTH_ERROR = {"error": "Authentication Error", "message": "Invalid client credentials"}
PAYOUT = {
    "amount": 2500, "currency": "KES", "statementDescriptor": "PAYDESK",
    "callbackUrl": "https://merchant.example/hooks", "transactionAction": "PAYMENT",
    "billing": {"firstName": "Wanjiru", "lastName": "Kamau", "email": "w@example.com",
                "customerReference": "cust-9", "country": "KE"},
    "payment": {"paymentMethod": "mobile-money-payout", "holder": "Wanjiru Kamau",
                "accountNumber": "+254712345678"},
}


def payout_body(amount=2500) -> dict:
    return {**PAYOUT, "amount": amount, "reference": f"payout-{uuid.uuid4().hex[:12]}"}


def token(app, merchant, mode=Mode.SANDBOX, **grant) -> str:
    """A new token of the merchant with these scopes, expiry, networks or limits."""
    with app.extensions["paydesk"].uow() as uow:
        made = issue_token(uow.conn, merchant.merchant_id, mode, f"test {uuid.uuid4().hex[:6]}", **grant)
        uow.commit()
    return made


def api(server, app, merchant, **grant) -> Api:
    return Api(server.url, token(app, merchant, **grant))


def test_every_api_endpoint_has_its_scope_in_the_table(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules() if rule.endpoint.startswith("api.")}
    assert endpoints == set(ENDPOINT_SCOPES)
    assert all(set(needed) <= set(SCOPES) for needed in ENDPOINT_SCOPES.values())


def test_a_read_token_reads_but_may_not_refund_create_or_resend(server, app, merchant):
    reader = api(server, app, merchant, scopes=["read"])
    assert reader.get("/transactions/SBX-CAPTURED/status").json()["Status"] == "Captured"
    assert reader.get("/payment-methods").status_code == 200
    refund = reader.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 1})
    assert (refund.status_code, refund.json()) == (403, {"error": "This token lacks the refunds scope"})
    created = reader.post("/transactions", payment_body())
    assert (created.status_code, created.json()) == (
        403, {"error": "This token lacks the payments or payouts scope"})
    reset = reader.post("/sandbox/reset", {})
    assert (reset.status_code, reset.json()) == (403, {"error": "This token lacks the sandbox scope"})
    resend = reader.post("/webhooks/whatever/resend", {})
    assert (resend.status_code, resend.json()) == (403, {"error": "This token lacks the webhooks scope"})


def test_a_refunds_token_refunds_but_may_not_read(server, app, merchant):
    refunder = api(server, app, merchant, scopes=["refunds"])
    refund = refunder.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 1})
    assert refund.status_code == 200, refund.text
    status = refunder.get("/transactions/SBX-CAPTURED/status")
    assert (status.status_code, status.json()) == (403, {"error": "This token lacks the read scope"})


def test_a_payments_token_creates_payments_but_not_payouts(server, app, merchant):
    payer = api(server, app, merchant, scopes=["payments"])
    assert payer.post("/transactions", payment_body()).status_code == 200
    payout = payer.post("/transactions", payout_body())
    assert (payout.status_code, payout.json()) == (403, {"error": "This token lacks the payouts scope"})
    payouts_only = api(server, app, merchant, scopes=["payouts"])
    assert payouts_only.post("/transactions", payout_body()).status_code == 200
    payment = payouts_only.post("/transactions", payment_body())
    assert (payment.status_code, payment.json()) == (403, {"error": "This token lacks the payments scope"})


def test_the_merchants_first_tokens_keep_every_scope(sandbox):
    assert sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 1}).status_code == 200
    assert sandbox.post("/transactions", payout_body()).status_code == 200
    assert sandbox.post("/sandbox/reset", {}).status_code == 200


def test_an_expired_token_is_refused_as_an_unknown_one(server, app, merchant):
    expired = api(server, app, merchant, expires_at=utcnow() - timedelta(seconds=1))
    response = expired.get("/payment-methods")
    assert (response.status_code, response.json()) == (401, AUTH_ERROR)
    later = api(server, app, merchant, expires_at=utcnow() + timedelta(days=1))
    assert later.get("/payment-methods").status_code == 200


def test_a_token_answers_only_from_its_networks(server, app, merchant):
    elsewhere = api(server, app, merchant, networks=parse_networks("192.0.2.0/24, 2001:db8::/32"))
    response = elsewhere.get("/payment-methods")
    assert (response.status_code, response.json()) == (403, {
        "error": "This token may not be used from 127.0.0.1: the address is outside its allowed networks"})
    here = api(server, app, merchant, networks=parse_networks("10.0.0.0/8\n127.0.0.0/8"))
    assert here.get("/payment-methods").status_code == 200


@pytest.mark.parametrize("text,error", [
    ("10.0.0.0/33", "10.0.0.0/33 is not a network (write it as 203.0.113.0/24 or 2001:db8::/32)"),
    ("example.com", "example.com is not a network (write it as 203.0.113.0/24 or 2001:db8::/32)"),
])
def test_a_network_list_names_what_is_not_a_network(text, error):
    with pytest.raises(ValueError) as refused:
        parse_networks(text)
    assert str(refused.value) == error


def test_a_payout_limit_refuses_what_is_above_what_is_left(server, app, merchant):
    limited = api(server, app, merchant, limits=[TokenLimit(LimitKind.PAYOUT, "KES", Decimal(5000))])
    assert limited.post("/transactions", payout_body(3000)).status_code == 200
    over = limited.post("/transactions", payout_body(2500))
    assert (over.status_code, over.json()) == (403, {
        "error": "This token may pay out 5000.00 KES a day; 2000.00 KES is left today"})
    assert limited.post("/transactions", payout_body(2000)).status_code == 200
    spent = limited.post("/transactions", payout_body(1))
    assert (spent.status_code, spent.json()["error"]) == (
        403, "This token may pay out 5000.00 KES a day; 0.00 KES is left today")


def test_a_batch_needs_its_kinds_scope_and_a_token_without_a_daily_limit(server, app, merchant):
    rows = {"rows": [{"paymentMethod": "mobile-money-payout", "amount": 5, "currency": "KES",
                      "holder": "Wanjiru Kamau", "accountNumber": "+254712345678",
                      "reference": f"batch-{uuid.uuid4().hex[:8]}", "email": "w@example.com"}]}
    refunder = api(server, app, merchant, scopes=["read", "refunds"])
    refused = refunder.post("/payouts/batches", rows)
    assert (refused.status_code, refused.json()) == (403, {"error": "This token lacks the payouts scope"})
    limited = api(server, app, merchant, scopes=list(SCOPES),
                  limits=[TokenLimit(LimitKind.PAYOUT, "KES", Decimal("100"))])
    held = limited.post("/payouts/batches", rows)
    assert (held.status_code, held.json()) == (403, {"error": (
        "This token has a daily payout limit, which a batch cannot be held to: send the payouts one by "
        "one, or use a token without one")})
    payer = api(server, app, merchant, scopes=["read", "payouts"])
    made = payer.post("/payouts/batches", rows)
    assert made.status_code == 201, made.text
    assert refunder.post(f"/payouts/batches/{made.json()['id']}/cancel").status_code == 403
    assert refunder.get(f"/payouts/batches/{made.json()['id']}").status_code == 200  # read
