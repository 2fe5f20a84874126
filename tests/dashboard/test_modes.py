"""Live or sandbox is in the URL: /path is live, /test/path sandbox, for everyone who opens it."""
from __future__ import annotations

import re
import uuid

import pytest

from app.store.merchants import create_merchant
from tests.conftest import Api, payment_body

from .conftest import PASSWORD, SANDBOX, Browserless, add_user

BANNER = "Sandbox: test data only"


def _switch(html: str) -> dict[str, tuple[str, bool]]:
    """The switch's links: label -> (href, whether it is the mode shown)."""
    nav = re.search(r'<nav class="mode-switch" aria-label="Data shown">(.*?)</nav>', html, re.S).group(1)
    return {label: (href.replace("&amp;", "&"), 'aria-current="true"' in current) for href, current, label in
            re.findall(r'<a href="([^"]*)" data-mode="\w+" ?([^>]*)>(\w+)</a>', nav)}


def _payment(api: Api) -> str:
    created = api.post("/transactions", payment_body(reference=f"mode-{uuid.uuid4().hex[:8]}"))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def test_the_same_page_answers_in_each_mode_by_its_url(finance):
    live, sandbox = finance.get("/transactions"), finance.get(f"{SANDBOX}/transactions")
    assert (live.status_code, sandbox.status_code) == (200, 200)
    assert BANNER not in live.text and BANNER in sandbox.text
    assert "SBX-CAPTURED" not in live.text and "SBX-CAPTURED" in sandbox.text


def test_the_mode_is_not_remembered_between_pages(finance):
    assert BANNER in finance.get(f"{SANDBOX}/transactions").text
    assert BANNER not in finance.get("/transactions").text  # the plain URL is live, whatever came before


def test_links_and_redirects_of_a_sandbox_page_stay_in_the_sandbox(finance):
    page = finance.get(f"{SANDBOX}/transactions").text
    assert f'<a class="mono" href="{SANDBOX}/transactions/SBX-CAPTURED"' in page
    assert f'<a href="{SANDBOX}/webhooks"' in page and f'<a class="brand" href="{SANDBOX}/transactions">' in page
    # Finance lands on the Overview, in the mode of the URL.
    assert finance.get(f"{SANDBOX}/").headers["Location"] == f"{SANDBOX}/overview"
    assert finance.get("/").headers["Location"] == "/overview"


def test_the_switch_keeps_a_list_page_and_marks_the_mode_shown(finance):
    """The page number is where in one mode's list the page is: the other list opens at its start."""
    assert _switch(finance.get("/webhooks/inbox?page=2").text) == {
        "Live": ("/webhooks/inbox", True), "Sandbox": (f"{SANDBOX}/webhooks/inbox", False)}


def test_the_switch_keeps_the_search_and_filters_but_not_the_lists_cursor(finance):
    page = finance.get(f"{SANDBOX}/transactions?q=abc&status=Captured&older=Zm9v&kind=").text
    assert _switch(page) == {
        "Live": ("/transactions?q=abc&status=Captured", False),
        "Sandbox": (f"{SANDBOX}/transactions?q=abc&status=Captured", True)}
    assert _switch(finance.get("/overview?days=90").text)["Sandbox"] == (f"{SANDBOX}/overview?days=90", False)
    assert _switch(finance.get("/overview?from=2026-01-01&to=2026-01-31").text)["Sandbox"] == (
        f"{SANDBOX}/overview?from=2026-01-01&to=2026-01-31", False)


@pytest.mark.parametrize("query", ["mode=sandbox", "_external=1&_scheme=javascript", "_anchor=x&_method=POST"])
def test_a_query_naming_what_builds_the_link_is_carried_as_plain_text(finance, query):
    """The mode is the URL's prefix, and _external, _scheme, _anchor and _method are url_for's own
    words: a query using them is the page's query like any other, never how the link is built."""
    page = finance.get(f"/transactions?q=abc&{query}")
    assert page.status_code == 200
    assert _switch(page.text) == {
        "Live": (f"/transactions?q=abc&{query}", True),
        "Sandbox": (f"{SANDBOX}/transactions?q=abc&{query}", False)}


def test_the_switch_on_a_transaction_opens_the_other_modes_list_searched_for_its_reference(finance):
    """A transaction number belongs to one mode: the other mode's list, searched for the
    transaction's reference (the same order made in both modes is found), is the nearest page."""
    assert _switch(finance.get(f"{SANDBOX}/transactions/SBX-CAPTURED").text) == {
        "Live": ("/transactions?q=sandbox-sbx-captured", False),
        "Sandbox": (f"{SANDBOX}/transactions?q=sandbox-sbx-captured", True)}
    unknown = finance.get("/transactions/PAY-NONE")
    assert unknown.status_code == 404
    assert _switch(unknown.text)["Sandbox"] == (f"{SANDBOX}/transactions", False)


def test_the_mode_switch_is_no_longer_a_form(finance):
    page = finance.get("/transactions").text
    assert 'name="mode"' not in page
    assert finance.post("/mode", {"mode": "sandbox"}).status_code == 404


def test_a_live_url_of_a_sandbox_transaction_links_to_it_there(finance):
    response = finance.get("/transactions/SBX-CAPTURED")
    assert response.status_code == 404
    assert "There is no such transaction in live mode." in response.text
    assert (f'This transaction is in sandbox mode: <a href="{SANDBOX}/transactions/SBX-CAPTURED">'
            "open it there</a>.") in response.text
    refunds = finance.get("/transactions/SBX-CAPTURED/refunds")
    assert refunds.status_code == 404 and "open it there" in refunds.text


def test_a_sandbox_url_of_a_live_transaction_links_to_it_there(finance, live):
    tx_no = _payment(live)
    response = finance.get(f"{SANDBOX}/transactions/{tx_no}")
    assert response.status_code == 404
    assert "There is no such transaction in sandbox mode." in response.text
    assert (f'This transaction is in live mode: <a href="/transactions/{tx_no}">open it there</a>.'
            in response.text)
    assert finance.get(f"/transactions/{tx_no}").status_code == 200


def test_another_merchants_transaction_is_a_plain_not_found_in_both_modes(finance, server):
    with server.app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", server.app.config["BASE_URL"])
        uow.commit()
    tx_no = _payment(Api(server.url, other.sandbox_token))
    for path in (f"/transactions/{tx_no}", f"{SANDBOX}/transactions/{tx_no}"):
        response = finance.get(path)
        assert response.status_code == 404
        assert "There is nothing here in this mode." in response.text
        assert "open it there" not in response.text and "such transaction" not in response.text


def test_a_shared_sandbox_link_opens_after_sign_in(server, merchant):
    client = Browserless(server.url)
    shared = f"{SANDBOX}/transactions/SBX-CAPTURED"
    to_login = client.get(shared)
    assert to_login.headers["Location"] == f"/login?next={shared}"
    client.get(to_login.headers["Location"])
    signed_in = client.post(to_login.headers["Location"],
                            {"email": add_user(server.app, merchant.merchant_id, "support"),
                             "password": PASSWORD})
    assert (signed_in.status_code, signed_in.headers["Location"]) == (303, shared)
    page = client.get(shared)
    assert page.status_code == 200 and BANNER in page.text


def test_sign_in_without_a_target_opens_live(server, merchant):
    client = Browserless(server.url)
    client.get("/login")
    signed_in = client.post("/login", {"email": add_user(server.app, merchant.merchant_id, "support"),
                                       "password": PASSWORD})
    assert signed_in.headers["Location"] == "/transactions"
    assert BANNER not in client.get("/transactions").text


@pytest.mark.parametrize("path", ["/transactions", "/transactions/SBX-CAPTURED", "/payouts/new",
                                  "/settings"])
def test_htmx_requests_and_forms_of_sandbox_pages_stay_in_the_sandbox(dashboard, merchant, path):
    """The JavaScript builds no paths: every hx- URL and form of a sandbox page is a sandbox URL
    (except signing out, which has one URL)."""
    admin = dashboard(merchant.merchant_id, "admin")
    page = admin.get(SANDBOX + path).text
    hx_urls = re.findall(r'hx-(?:get|post|put|delete|patch)="([^"]+)"', page)
    actions = set(re.findall(r'<form[^>]* action="([^"]+)"', page)) - {"/logout"}
    assert hx_urls or actions, "the page has neither htmx requests nor forms"
    assert all(url.startswith(SANDBOX + "/") for url in [*hx_urls, *actions]), (hx_urls, actions)
