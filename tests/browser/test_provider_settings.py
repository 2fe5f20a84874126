"""Settings -> Providers in a browser: connect Paystack, read the webhook URL, test the connection
(a worker asks Paystack; the page asks Paydesk for the answer until it is there)."""
from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard.conftest import add_user
from app.providers.connection_tests import connection_test_pass
from app.worker import background_pass
from tests.providers.fake_provider import RunningFakeProvider

from .conftest import sign_in

BALANCE = {"status": True, "message": "Balances retrieved", "data": [{"currency": "NGN", "balance": 0}]}


@pytest.fixture
def paystack():
    """Paystack played by a local server that knows the balance call."""
    with RunningFakeProvider() as provider:
        provider.on("GET", "/balance", BALANCE)
        yield provider


def test_connect_paystack_then_test_the_connection(page: Page, server, merchant, paystack, worker_round):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("navigation", name="Settings pages").get_by_role("link", name="Providers").click()
    expect(page).to_have_title("Providers · Paydesk")
    expect(page.get_by_text("No provider connected in live")).to_be_visible()

    page.get_by_label("Provider", exact=True).select_option("paystack")
    secret = f"sk_live_{uuid.uuid4().hex}"
    page.get_by_label("Secret key", exact=True).fill(secret)
    page.get_by_label("Base URL", exact=True).fill(paystack.url)
    page.get_by_role("button", name="Connect in live").click()

    expect(page).to_have_title("Paystack connected · Paydesk")
    webhook_url = page.get_by_label("Webhook URL", exact=True).input_value()
    assert webhook_url.startswith(f"{server.url}/provider-webhooks/")
    expect(page.get_by_text("Paste it as the Live Webhook URL and save.")).to_be_visible()
    assert secret not in page.content()

    page.get_by_role("link", name="Back to providers").click()
    account = page.locator("article", has_text="Paystack")
    expect(account.get_by_label("Webhook URL to set at Paystack")).to_have_value(webhook_url)
    page.wait_for_load_state("load")  # htmx binds the form, or the click posts a whole page
    account.get_by_role("button", name="Test connection").click()
    result = account.locator(".provider-test p")
    expect(result).to_have_text("Asking Paystack…")
    expect(page.locator("#announcer")).to_have_text("Asking Paystack…")
    page.wait_for_timeout(2500)  # the page asks Paydesk again every second meanwhile
    expect(result).to_have_text("Asking Paystack…")
    assert paystack.seen == []  # clicking asked Paystack nothing: a worker does

    worker_round()
    background_pass(server.app, connection_test_pass).wait(10)
    expect(result).to_have_text("Paystack answered: Connected to Paystack")
    expect(result).to_be_focused()  # the result, where the keyboard is, and read out by the page's one live region
    expect(page.locator("#announcer")).to_have_text("Paystack answered: Connected to Paystack")
    assert len(paystack.requests_to("GET", "/balance")) == 1
