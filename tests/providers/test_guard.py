"""Every provider call goes through the SSRF guard: only public addresses (or PROVIDER_ALLOWED_NETWORKS),
no redirects followed, and an answer not in the provider's own shape told in fixed words only."""
from __future__ import annotations

import logging

import pytest

from app.payments.model import Status
from app.payments.provider import ProviderUnavailable
from app.providers.http import ProviderRejected, Timeouts
from app.providers.paystack import PaystackConnector
from app.providers.stripe import StripeConnector
from tests.support.network import connections, fake_dns  # noqa: F401 - fixtures
from tests.support.strategies import INTERNAL_BASE_URLS

from .builders import CARD, NOW, payment
from .fake_provider import LOOPBACK_GUARD, Answer, RunningFakeProvider

SECRET = "sk_test_4f1c0b9e2a7d4c1e8b6a3f5d9e0c2b7a1d4e6f80"
SECRET_TEXT = "<secret internal text>"
NAMES = {"paystack": "Paystack", "stripe": "Stripe"}
BALANCE_PATHS = {"paystack": "/balance", "stripe": "/v1/balance"}
CREATE_PATHS = {"paystack": "/transaction/initialize", "stripe": "/v1/checkout/sessions"}


def connector(provider: str, base_url: str, **options):
    """A connector of the provider on base_url; without a guard it reaches public addresses only."""
    options.setdefault("timeouts", Timeouts(connect=1, read=1))
    if provider == "paystack":
        return PaystackConnector(SECRET, base_url=base_url, **options)
    return StripeConnector(SECRET, base_url=base_url, **options)


@pytest.fixture(params=["paystack", "stripe"])
def provider(request) -> str:
    return request.param


@pytest.mark.parametrize("base_url", INTERNAL_BASE_URLS)
def test_an_internal_base_url_is_refused_before_connecting(provider, base_url, connections):
    with pytest.raises(ProviderUnavailable) as refused:
        connector(provider, base_url).test_connection()
    assert str(refused.value) == f"{NAMES[provider]} was not asked: the base URL's address is not allowed"
    assert connections == []


def test_a_provider_on_loopback_receives_nothing_unless_allowed(provider, fake):
    fake.on("GET", BALANCE_PATHS[provider], Answer(body={}))
    with pytest.raises(ProviderUnavailable, match="not asked"):
        connector(provider, fake.url).test_connection()
    with pytest.raises(ProviderUnavailable, match="not asked"):
        connector(provider, fake.url).create(payment(currency="EUR"), CARD)
    assert fake.seen == []


def test_the_guards_refusal_is_logged_with_its_reason(fake, caplog):
    caplog.set_level(logging.WARNING)
    with pytest.raises(ProviderUnavailable):
        connector("paystack", fake.url).test_connection()
    assert ("Paystack GET /balance not sent: Refused: target address 127.0.0.1 is loopback "
            "and not in PROVIDER_ALLOWED_NETWORKS") in caplog.messages


def test_a_name_resolving_to_a_private_address_is_refused(provider, fake_dns, connections):
    fake_dns["api.provider.example"] = "10.1.2.3"
    with pytest.raises(ProviderUnavailable, match="not asked"):
        connector(provider, "https://api.provider.example").test_connection()
    assert connections == []


def test_a_name_resolving_to_loopback_reaches_nothing(provider, fake, fake_dns):
    fake_dns["api.provider.example"] = "127.0.0.1"
    base_url = fake.url.replace("127.0.0.1", "api.provider.example")
    with pytest.raises(ProviderUnavailable, match="not asked"):
        connector(provider, base_url).test_connection()
    assert fake.seen == []


BALANCES = {"paystack": {"status": True, "message": "Balances retrieved",
                         "data": [{"currency": "NGN", "balance": 1234500}]},
            "stripe": {"object": "balance", "livemode": False, "available": [], "pending": []}}


def test_the_vetted_address_is_connected_with_the_hosts_name_and_key(provider, fake, fake_dns, connections):
    # Nothing listens on 127.0.0.2 at the fake's port: refused before anything was sent, so the
    # next vetted address is tried.
    fake_dns["api.provider.example"] = ["127.0.0.2", "127.0.0.1"]
    fake.on("GET", BALANCE_PATHS[provider], Answer(body=BALANCES[provider]))
    base_url = fake.url.replace("127.0.0.1", "api.provider.example")

    assert connector(provider, base_url, guard=LOOPBACK_GUARD).test_connection().startswith(
        f"Connected to {NAMES[provider]}")
    assert connections == ["127.0.0.2", "127.0.0.1"]
    [seen] = fake.seen
    assert seen.header("Host") == base_url.removeprefix("http://")
    assert seen.header("Authorization") == f"Bearer {SECRET}"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_answered_as_it_came_never_followed(provider, fake, status):
    with RunningFakeProvider() as elsewhere:
        for method, path in (("GET", BALANCE_PATHS[provider]), ("POST", CREATE_PATHS[provider])):
            elsewhere.on(method, path, Answer(body={}))
            fake.on(method, path, Answer(status, "", content_type="text/plain",
                                         headers={"Location": elsewhere.url + path}))
        allowed = connector(provider, fake.url, guard=LOOPBACK_GUARD)

        with pytest.raises(ProviderUnavailable) as tested:
            allowed.test_connection()
        with pytest.raises(ProviderUnavailable) as created:  # the payment stays Pending
            allowed.create(payment(currency="EUR"), CARD)

        assert elsewhere.seen == []
    expected = f"{NAMES[provider]} answered HTTP {status}: redirects are not followed"
    assert (str(tested.value), str(created.value)) == (expected, expected)
    assert len(fake.seen) == 2


def test_paystacks_refusal_in_another_shape_is_told_by_its_status(fake, caplog):
    caplog.set_level(logging.INFO)
    page = f"<html><body>{SECRET_TEXT}</body></html>"
    fake.on("GET", "/balance", Answer(401, page, content_type="text/html"))
    fake.on("POST", "/transaction/initialize", Answer(403, page, content_type="text/html"))
    fake.on("GET", "/transaction/verify/PAY-9F2C41D07A3B5E68",  # after the refused create, then status
            Answer(404, page, content_type="text/html"), Answer(500, page, content_type="text/html"))
    paystack = connector("paystack", fake.url, guard=LOOPBACK_GUARD)

    with pytest.raises(ProviderRejected) as refused:
        paystack.test_connection()
    outcome = paystack.create(payment(), CARD)
    with pytest.raises(ProviderUnavailable) as unavailable:
        paystack.status(payment(), None, NOW)

    assert (str(refused.value), refused.value.http_status) == ("the secret key was refused", 401)
    assert (outcome.status, outcome.provider_status, outcome.provider_message) == (
        Status.FAILED, "HTTP 403", "the secret key was refused")
    assert str(unavailable.value) == "Paystack answered HTTP 500: Internal Server Error"
    assert f"Paystack GET /balance refused: HTTP 401 {page}" in caplog.messages  # the log alone


def test_stripes_answer_in_another_shape_is_told_by_its_status(fake, caplog):
    caplog.set_level(logging.INFO)
    page = f"<html><body>{SECRET_TEXT}</body></html>"
    fake.on("GET", "/v1/balance", Answer(200, page, content_type="text/html"))
    fake.on("POST", "/v1/checkout/sessions", Answer(400, {"detail": SECRET_TEXT}))
    fake.on("GET", "/v1/checkout/sessions/cs_test_1", Answer(503, page, content_type="text/html"))
    stripe_connector = connector("stripe", fake.url, guard=LOOPBACK_GUARD)

    with pytest.raises(ProviderRejected) as not_stripe:
        stripe_connector.test_connection()
    outcome = stripe_connector.create(payment(currency="EUR"), CARD)
    with pytest.raises(ProviderUnavailable) as unavailable:
        stripe_connector.status(payment(currency="EUR", provider_transaction_id="cs_test_1"), None, NOW)

    assert (str(not_stripe.value), not_stripe.value.http_status) == (
        "the answer is not the provider's API", 200)
    assert (outcome.status, outcome.provider_status, outcome.provider_message) == (
        Status.FAILED, "HTTP 400", "Bad Request")
    assert str(unavailable.value) == "Stripe answered HTTP 503: Service Unavailable"
    assert f"Stripe refused: HTTP 200 {page}" in caplog.messages  # the log alone


def test_no_proxy_is_taken_from_the_environment(provider, fake, monkeypatch):
    with RunningFakeProvider() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        fake.on("GET", BALANCE_PATHS[provider], Answer(503, ""))
        with pytest.raises(ProviderUnavailable, match="HTTP 503"):
            connector(provider, fake.url, guard=LOOPBACK_GUARD).test_connection()
        assert proxy.seen == []
    assert len(fake.seen) == 1


def test_an_answer_cannot_forge_a_log_line(fake, caplog):
    caplog.set_level(logging.INFO)
    fake.on("GET", "/balance", Answer(401, "no\nCRITICAL forged line", content_type="text/plain"))
    with pytest.raises(ProviderRejected):
        connector("paystack", fake.url, guard=LOOPBACK_GUARD).test_connection()
    assert "Paystack GET /balance refused: HTTP 401 no\\nCRITICAL forged line" in caplog.messages
