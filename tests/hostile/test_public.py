"""Generated hostile requests on the pages anyone may call: the hosted checkout, the merchant's
webhook inbox and the providers' webhook URLs. Never a 5xx; the receivers always answer JSON."""
from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from werkzeug.exceptions import HTTPException

from app.payments.model import Caller, Mode
from app.providers import accounts
from app.util import utcnow
from tests.support.strategies import (
    NASTY_STRINGS,
    UNSTORABLE_STRINGS,
    header_values,
    hostile_text,
    path_segments,
    url_quoted,
)

from .conftest import assert_json_answer, assert_no_server_error

PROPERTY = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
transaction_numbers = st.one_of(st.sampled_from(["SBX-PENDING", "SBX-CAPTURED"]), path_segments)


@PROPERTY
@given(data=st.data())
def test_hostile_checkout_requests_never_get_5xx(app, merchant, data):
    """Checkout pages and decisions (their forms carry no CSRF token here: refused, never a 5xx)."""
    tx_no = data.draw(transaction_numbers, label="txNo")
    client = app.test_client()
    response = client.get(f"/checkout/{tx_no}")
    assert_no_server_error(response, f"GET /checkout/{tx_no[:100]}")
    decision = "&".join(f"{name}={url_quoted(data.draw(hostile_text))}"
                        for name in ("decision", "declineReason"))
    note(f"/checkout/{tx_no[:300]} {decision[:300]}")
    response = client.post(f"/checkout/{tx_no}", data=decision,
                           content_type="application/x-www-form-urlencoded")
    assert_no_server_error(response, f"POST /checkout/{tx_no[:100]}")


@PROPERTY
@given(data=st.data())
def test_hostile_webhook_deliveries_to_the_inbox_never_get_5xx(app, merchant, data):
    """The inbox logs whatever arrives, signed or not: any body, any webhook headers."""
    own_key = merchant.inbox_url.rsplit("/", 1)[1]
    key = data.draw(st.one_of(st.just(own_key), path_segments), label="inbox key")
    body = data.draw(st.one_of(st.binary(max_size=200),
                               st.sampled_from(NASTY_STRINGS + UNSTORABLE_STRINGS).map(
                                   lambda text: text.encode("utf-8", "surrogatepass"))), label="body")
    headers = {name: data.draw(header_values, label=name)
               for name in ("webhook-id", "webhook-timestamp", "webhook-signature")
               if data.draw(st.booleans())}
    note(f"POST /inbox/{key[:100]} {headers!r} {body[:300]!r}")
    response = app.test_client().post(f"/inbox/{key}", data=body, headers=headers)
    assert_no_server_error(response, f"POST /inbox/{key[:100]}")
    if response.status_code != 204 and _routes_to_the_inbox(app, f"/inbox/{key}"):
        assert_json_answer(response, f"POST /inbox/{key[:100]}")


def _routes_to_the_inbox(app, path: str) -> bool:
    return _routes_to(app, path, "inbox.receive")


def _routes_to(app, path: str, endpoint: str) -> bool:
    """A receiver answers for itself; a URL no route takes (an empty key) gets Flask's 404 page."""
    try:
        matched, _args = app.url_map.bind("paydesk.test").match(unquote(path), method="POST")
    except HTTPException:
        return False
    return matched == endpoint


@pytest.fixture
def provider_webhook_keys(app, merchant):
    """The webhook URL keys of a Paystack and a Stripe account of the merchant (a closed port as API)."""
    deps = app.extensions["paydesk"]
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "hostile-tests")
    keys = []
    for provider, webhook_secret in (("paystack", None), ("stripe", "whsec_hostile_corpus_0123456789")):
        connected = accounts.connect(deps.uow, deps.providers.box, caller, provider,
                                     secret_key=f"sk_test_{provider}_hostile_corpus_0123456789",
                                     webhook_secret=webhook_secret, base_url="http://127.0.0.1:9",
                                     paydesk_url="http://paydesk.test", now=utcnow())
        keys.append(connected.webhook_url.rsplit("/", 1)[1])
    return keys


@PROPERTY
@given(data=st.data())
def test_hostile_provider_webhooks_never_get_5xx(app, provider_webhook_keys, data):
    """Any body and signature headers at a provider account's URL or a made-up one: JSON, never a 5xx."""
    key = data.draw(st.one_of(st.sampled_from(provider_webhook_keys), path_segments), label="key")
    body = data.draw(st.one_of(st.binary(max_size=200),
                               st.sampled_from(NASTY_STRINGS + UNSTORABLE_STRINGS).map(
                                   lambda text: text.encode("utf-8", "surrogatepass"))), label="body")
    headers = {name: data.draw(header_values, label=name)
               for name in ("x-paystack-signature", "Stripe-Signature") if data.draw(st.booleans())}
    note(f"POST /provider-webhooks/{key[:100]} {headers!r} {body[:300]!r}")
    response = app.test_client().post(f"/provider-webhooks/{key}", data=body, headers=headers)
    assert_no_server_error(response, f"POST /provider-webhooks/{key[:100]}")
    if _routes_to(app, f"/provider-webhooks/{key}", "provider_webhooks.receive"):
        assert_json_answer(response, f"POST /provider-webhooks/{key[:100]}")
        assert response.status_code in (400, 404), response.get_data()[:300]


@PROPERTY
@given(tx_no=transaction_numbers)
def test_hostile_returns_from_a_provider_never_get_5xx(app, merchant, tx_no):
    response = app.test_client().get(f"/checkout/{tx_no}/return")
    assert_no_server_error(response, f"GET /checkout/{tx_no[:100]}/return")
