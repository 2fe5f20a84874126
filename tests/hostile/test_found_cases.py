"""Requests the corpus found answered with a 500 (on PostgreSQL, which refuses NUL in text and
integers past 64 bits outright), pinned as plain tests on both databases."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app.store.tables import inbox_messages
from tests.conftest import payment_body

from tests.dashboard.conftest import PASSWORD, add_user

from .conftest import csrf_token_of, fresh_address

PAST_64_BITS = str(2**63)
HOME = "/transactions"  # where a support user lands
# `next` as written in the sign-in URL (percent-encoded), and where signing in must then go: a
# browser drops tabs and newlines anywhere, trims controls and spaces, and reads "\\" as "/".
HOSTILE_NEXT = [
    ("/%09/evil.example/path", HOME),
    ("/%0A/evil.example", HOME),
    ("/%0D%0A/evil.example", HOME),
    ("/%0A", "/"),
    ("/%0D%0ASet-Cookie:%20stolen=1", "/Set-Cookie:%20stolen=1"),
    ("/%5Cevil.example", HOME),
    ("%5C/evil.example", HOME),
    ("/%5C%5Cevil.example", HOME),
    ("/%255Cevil.example", "/%5Cevil.example"),
    ("//evil.example/", HOME),
    ("%20//evil.example/", HOME),
    ("%00//evil.example/", HOME),
    ("%1F/%09/evil.example", HOME),
    ("https:evil.example", HOME),
    ("https://evil.example/", HOME),
    ("java%0Ascript:alert(1)", HOME),
    ("%09/webhooks%20", "/webhooks"),
    ("/caf%C3%A9?q=%C3%A9", "/caf%C3%A9?q=%C3%A9"),
    ("/%E2%80%AE/evil.example", HOME),
    ("/%E2%80%8B/evil.example", HOME),
    ("/" + "a" * 3000, HOME),
]


@pytest.mark.parametrize("method,path", [
    ("GET", "/transactions/%00"),
    ("GET", "/transactions/SBX%00CAPTURED"),
    ("POST", "/transactions/%00/refund/review"),
    ("POST", "/transactions/%00/refund"),
    ("POST", "/webhooks/%00/resend"),
    ("POST", f"/settings/tokens/{PAST_64_BITS}/revoke"),
    ("POST", f"/settings/users/{PAST_64_BITS}/role"),
    ("POST", f"/settings/users/{PAST_64_BITS}/active"),
])
def test_dashboard_paths_that_can_name_nothing_are_not_found(admin, method, path):
    response = admin.client.open(path, method=method,
                                 data={"csrf_token": admin.csrf_token, "amount": "1", "role": "finance"})
    assert response.status_code == 404


@pytest.mark.parametrize("query", ["q=%00", "q=SBX%00", "q=" + "a" * 80 + "%00"])
def test_a_search_with_a_nul_is_a_problem_of_the_filter(admin, query):
    page = admin.client.get(f"/transactions?{query}")
    assert page.status_code == 200
    assert "Search text must not contain control characters" in page.get_data(as_text=True)
    assert admin.client.get(f"/transactions/export.csv?{query}").status_code == 400


def test_a_token_label_with_a_nul_is_a_field_error(admin):
    response = admin.client.post("/settings/tokens", data={"label": "ci\x00server",
                                                           "csrf_token": admin.csrf_token})
    assert response.status_code == 422
    assert "Label must not contain control characters" in response.get_data(as_text=True)


def test_signing_in_with_a_nul_in_the_e_mail_is_a_failed_sign_in(app):
    client = app.test_client()
    token = csrf_token_of(client.get("/login"))
    response = client.post("/login", data={"email": "admin\x00@shop.test", "password": "x" * 12,
                                           "csrf_token": token}, environ_base=fresh_address())
    assert response.status_code == 401
    assert "Incorrect e-mail or password." in response.get_data(as_text=True)


def test_checkout_of_a_number_that_can_name_nothing_is_not_found(app, merchant):
    client = app.test_client()
    assert client.get("/checkout/%00").status_code == 404
    created = client.post("/api/v1/transactions", json=payment_body(),
                          headers={"Authorization": f"Bearer {merchant.sandbox_token}"})
    token = csrf_token_of(client.get(f"/checkout/{created.get_json()['transactionId']}"))
    response = client.post("/checkout/%00", data={"decision": "approve", "csrf_token": token})
    assert response.status_code == 404


def test_an_inbox_key_that_can_name_nothing_is_not_found(app):
    response = app.test_client().post("/inbox/%00", data=b"{}")
    assert (response.status_code, json.loads(response.get_data())) == (404, {"error": "Inbox not found"})


def test_the_inbox_logs_a_delivery_with_nul_bytes_as_replacement_characters(app, merchant):
    inbox_key = merchant.inbox_url.rsplit("/", 1)[1]
    response = app.test_client().post(f"/inbox/{inbox_key}", data=b'{"a": "x\x00y"}',
                                      headers={"webhook-id": "msg\x00nul"})
    assert (response.status_code, json.loads(response.get_data())) == (
        401, {"error": "Invalid webhook signature"})
    with app.extensions["paydesk"].uow(write=False) as uow:
        logged = uow.conn.execute(select(inbox_messages.c.body, inbox_messages.c.webhook_id)
                                  .where(inbox_messages.c.merchant_id == merchant.merchant_id)).one()
    assert tuple(logged) == ('{"a": "x\ufffdy"}', "msg\ufffdnul")


@pytest.mark.parametrize("next_page,location", HOSTILE_NEXT)
def test_sign_in_goes_only_to_a_page_of_this_site_as_a_browser_reads_next(app, merchant, next_page,
                                                                         location):
    client = app.test_client()
    token = csrf_token_of(client.get(f"/login?next={next_page}"))
    response = client.post(f"/login?next={next_page}", environ_base=fresh_address(), data={
        "email": add_user(app, merchant.merchant_id, "support"), "password": PASSWORD,
        "csrf_token": token})
    assert (response.status_code, response.headers["Location"]) == (303, location)
