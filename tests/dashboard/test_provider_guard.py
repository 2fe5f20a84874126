"""Test connection on a deployment with the default PROVIDER_ALLOWED_NETWORKS (empty): a provider
account whose base URL is on the host or its private network is never called by the worker that
makes the test, and the page says so in fixed words."""
from __future__ import annotations

import pytest

from tests.conftest import serving
from tests.providers.fake_provider import Answer, RunningFakeProvider
from tests.support.strategies import INTERNAL_BASE_URLS

from .test_provider_settings import accounts_of, answer_in_place, connect_form, new_secret
from .test_provider_settings import worker_pass  # noqa: F401 - a fixture

REFUSED = ('<p class="alert alert-error" tabindex="-1" data-focus-after-swap data-announce>'
           "{name} was not asked: the base URL&#39;s address is not allowed</p>")


@pytest.fixture(scope="module")
def server(database_url):
    """Paydesk as deployed without PROVIDER_ALLOWED_NETWORKS (this module's merchants and dashboards)."""
    with serving(database_url, PROVIDER_ALLOWED_NETWORKS="") as running:
        yield running


@pytest.fixture
def admin(dashboard, merchant):
    return dashboard(merchant.merchant_id, "admin")


@pytest.mark.parametrize("provider,name,webhook_secret", [
    ("paystack", "Paystack", ""), ("stripe", "Stripe", "whsec_" + "b" * 32)])
def test_a_base_url_on_loopback_is_never_called(admin, app, merchant, worker_pass, provider, name,
                                                webhook_secret):
    with RunningFakeProvider() as fake:
        for path in ("/balance", "/v1/balance"):
            fake.on("GET", path, Answer(body={"status": True, "message": "<internal>", "data": []}))
        connected = admin.post("/settings/providers", connect_form(
            provider=provider, secret_key=new_secret(), webhook_secret=webhook_secret, base_url=fake.url))
        assert connected.status_code == 200, connected.text
        account_id = accounts_of(app, merchant.merchant_id)[-1].id

        tested = answer_in_place(admin, account_id, worker_pass)

        assert tested == REFUSED.format(name=name)
        assert fake.seen == []


def test_no_internal_base_url_is_called(admin, app, merchant, worker_pass):
    """The hostile corpus's base URLs, each connected in turn (connecting again replaces the URL)."""
    for base_url in INTERNAL_BASE_URLS:
        connected = admin.post("/settings/providers",
                               connect_form(secret_key=new_secret(), base_url=base_url))
        assert connected.status_code == 200, (base_url, connected.text)
        [account] = accounts_of(app, merchant.merchant_id)
        assert account.base_url == base_url

        tested = answer_in_place(admin, account.id, worker_pass)

        assert tested == REFUSED.format(name="Paystack"), base_url
