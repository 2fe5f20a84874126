"""A person who follows a stale link or types an address gets a Paydesk page that says what went
wrong, with the same status code and headers werkzeug would have answered and the reference
support can look up; the API keeps its JSON errors."""
from __future__ import annotations

import requests


def test_an_unknown_address_answers_a_paydesk_page(finance):
    answer = finance.get("/no-such-page")
    assert answer.status_code == 404
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "<title>Page not found · Paydesk</title>" in answer.text
    assert "please check your spelling" in answer.text
    assert answer.headers["X-Request-Id"] in answer.text  # the reference support can look up


def test_a_form_address_opened_in_the_browser_keeps_its_allow_header(finance):
    answer = finance.get("/payouts")  # the payout form's POST target
    assert answer.status_code == 405
    assert set(answer.headers["Allow"].split(", ")) == {"OPTIONS", "POST"}
    assert "<title>This address takes no visits · Paydesk</title>" in answer.text
    assert "only takes what a Paydesk form sends" in answer.text


def test_a_role_that_may_not_see_a_page_is_told_so_on_a_page(dashboard, merchant):
    support = dashboard(merchant.merchant_id, "support")
    answer = support.get("/settings")
    assert answer.status_code == 403
    assert "<title>Not allowed · Paydesk</title>" in answer.text
    assert "Your role does not allow this action." in answer.text


def test_the_api_keeps_its_json_errors(server):
    answer = requests.get(f"{server.url}/api/v1/no-such-endpoint", timeout=10)
    assert answer.status_code == 404
    assert answer.json() == {"error": "Not found"}
