"""The Developers page: the mode's API requests searched by path, status, token and txNo; one
request with its masked bodies; a transaction's page links to them; tokens made with scopes,
expiry, networks and limits."""
from __future__ import annotations

import re

import pytest

from app.api.request_log import flush_request_log
from tests.conftest import Api, payment_body

_REVEALED = re.compile(r'id="revealed" class="mono" type="text" value="([^"]+)"')


@pytest.fixture
def admin(dashboard, merchant):
    return dashboard(merchant.merchant_id, "admin")


def test_the_requests_of_a_transaction_are_found_and_shown_masked(admin, live, app):
    created = live.post("/transactions", payment_body(billing={
        "firstName": "Ada", "lastName": "L", "email": "ada@example.com", "customerReference": "c-1"}))
    tx_no = created.json()["transactionId"]
    live.get(f"/transactions/{tx_no}/status")
    live.get("/transactions/NOPE-1/status")
    flush_request_log(app)
    page = admin.get("/developers", params={"tx": tx_no}).text
    assert page.count(f"/api/v1/transactions/{tx_no}/status") == 1
    assert "POST /api/v1/transactions<" in page and "NOPE-1" not in page
    assert "NOPE-1" in admin.get("/developers", params={"status": "404"}).text
    assert "NOPE-1" not in admin.get("/developers", params={"status": "200", "path": "status"}).text
    *_newer, create_id = re.findall(r'/developers/requests/(\d+)">', page)  # newest first
    detail = admin.get(f"/developers/requests/{create_id}").text
    assert "a•••@example.com" in detail and "ada@example.com" not in detail
    assert f'href="/developers?tx={tx_no}"' in admin.get(f"/transactions/{tx_no}").text


def test_an_empty_log_says_whether_the_filters_or_the_mode_hold_nothing(admin):
    page = admin.get("/developers").text
    assert '<p class="empty-title">No API requests yet</p>' in page
    assert ">Clear</a>" not in page  # nothing to clear
    filtered = admin.get("/developers", params={"status": "418"}).text
    assert '<p class="empty-title">No API requests match these filters</p>' in filtered
    assert '<a class="link" href="/developers">Clear</a>' in filtered
    assert '<button type="submit" class="button secondary">Apply</button>' in filtered


def test_a_token_is_made_with_scopes_expiry_networks_and_limits(admin, server, app):
    response = admin.post("/settings/tokens", {
        "label": "refunds bot", "scopes": ["read", "refunds"], "expires_on": "2999-01-01",
        "networks": "127.0.0.0/8", "limits": "refund EUR 500.00\npayout NGN 100000"})
    token = _REVEALED.search(response.text).group(1)
    client = Api(server.url, token)
    assert client.get("/payment-methods").status_code == 200
    assert client.post("/transactions", payment_body()).json() == {
        "error": "This token lacks the payments or payouts scope"}
    flush_request_log(app)
    settings = admin.get("/settings").text
    assert "read, refunds" in settings
    assert "refunds up to 500.00 EUR a day" in settings and "payouts up to 100000.00 NGN a day" in settings
    assert "from 127.0.0.0/8" in settings and "expires" in settings
    assert "refunds bot" in admin.get("/developers").text


def test_a_token_form_names_what_is_wrong(admin):
    response = admin.post("/settings/tokens", {"label": "x", "networks": "10.0.0.0/33",
                                               "limits": "refund XYZ 5"})
    assert response.status_code == 422
    text = response.text
    assert "Choose at least one scope" in text
    assert "10.0.0.0/33 is not a network" in text
    assert "refund XYZ 5: XYZ is not a currency code" in text
