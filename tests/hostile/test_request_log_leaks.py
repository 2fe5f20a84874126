"""The request log never holds a bearer token, a provider key, a webhook secret or a full account
number: the hostile corpus runs with a merchant's tokens, then requests that carry those secrets
in every place a request can (bodies, paths, query strings, Idempotency-Keys), then every stored
row of the log is searched for them."""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.api.request_log import flush_request_log
from app.store.tables import request_log
from tests.conftest import payment_body

from .test_api import ENDPOINTS, PAYOUT

PROVIDER_KEY = "sk_live_" + "k" * 40
ACCOUNT_NUMBERS = ["DE44500105175407324931", "3059827461", "+254712345678", "4012888888881881"]
# What a secret looks like, whoever's it is.
SECRET_SHAPES = re.compile(r"pd_(live|test)_[A-Za-z0-9_\-]{8,}|whsec_[A-Za-z0-9+/=]{8,}|sk_(live|test)_[A-Za-z0-9]{8,}")


def hostile_calls_with(secrets: list[str]) -> list[tuple[str, str, dict]]:
    """(method, path, options) of requests that carry every secret wherever a request can."""
    calls = []
    for secret in secrets:
        calls += [
            ("POST", "/api/v1/transactions", {"json": payment_body(
                reference=secret[:100], statementDescriptor=secret[:22],
                billing={"firstName": secret, "lastName": "x", "email": f"{secret}@example.com",
                         "customerReference": secret[:100]})}),
            ("POST", "/api/v1/transactions", {"json": {**PAYOUT, "reference": f"r-{secret[-12:]}",
                                                       "payment": {**PAYOUT["payment"], "accountNumber": secret}}}),
            ("POST", "/api/v1/transactions/refund", {"json": {"txNo": secret, "amount": 1, "reason": secret,
                                                               "description": f"to {secret} please"},
                                                      "headers": {"Idempotency-Key": secret[:255]}}),
            ("GET", f"/api/v1/transactions/{secret}/status", {}),
            ("GET", "/api/v1/transactions", {"query_string": {"reference": secret, "email": secret}}),
            ("POST", "/api/v1/transactions/banks", {"data": f"paymentMethod={secret}"}),
            ("POST", "/api/v1/sandbox/reset", {"data": secret.encode()}),
            ("POST", f"/api/v1/webhooks/{secret}/resend", {"json": {secret: secret}}),
        ]
    return calls


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def run_corpus(app, merchant, data):
    call = data.draw(st.sampled_from(list(ENDPOINTS.values())).flatmap(lambda made: made), label="call")
    token = data.draw(st.sampled_from([merchant.sandbox_token, merchant.live_token]), label="token")
    app.test_client().open(call.path, method=call.method, query_string=call.query, data=call.body,
                           headers=[("Authorization", f"Bearer {token}"), *call.headers])


def test_the_request_log_holds_no_token_secret_key_or_account_number(app, merchant):
    from tests.conftest import connect_paystack
    connect_paystack(app, merchant.merchant_id)
    run_corpus(app, merchant)
    secrets = [merchant.live_token, merchant.sandbox_token, merchant.live_webhook_secret,
               merchant.sandbox_webhook_secret, PROVIDER_KEY, *ACCOUNT_NUMBERS]
    client = app.test_client()
    for token in (merchant.sandbox_token, merchant.live_token):
        for method, path, options in hostile_calls_with(secrets):
            headers = {"Authorization": f"Bearer {token}", **options.get("headers", {})}
            client.open(path, method=method, headers=headers,
                        **{k: v for k, v in options.items() if k != "headers"})
    flush_request_log(app)
    with app.extensions["paydesk"].uow(write=False) as uow:
        rows = uow.conn.execute(select(request_log)).all()
    mine = [row for row in rows if row.merchant_id == merchant.merchant_id]
    assert len(mine) >= 2 * len(hostile_calls_with(secrets))
    for row in rows:
        stored = " ".join(str(value) for value in row)
        assert not SECRET_SHAPES.search(stored), stored[:500]
        for secret in secrets:
            assert secret not in stored, (secret, stored[:500])
        for number in ACCOUNT_NUMBERS:
            assert number.lstrip("+") not in stored, (number, stored[:500])
