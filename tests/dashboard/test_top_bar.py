"""The top bar of every page: its search (the transactions list's filter, a few options) and
the Approvals item's count of requests waiting for the user in each mode."""
from __future__ import annotations

import re
import uuid

import pytest

from tests.conftest import payment_body

from .conftest import SANDBOX, Browserless, add_user
from .test_approvals import _htmx_post, _threshold

HTMX = {"HX-Request": "true"}


def _signed_in(server, merchant, role) -> Browserless:
    client = Browserless(server.url)
    client.email = add_user(server.app, merchant.merchant_id, role)
    assert client.login(client.email).status_code == 303
    return client


def test_the_search_box_is_on_every_page_and_finds_a_payment_by_part_of_its_reference(
        server, merchant, live):
    reference = f"invoice-{uuid.uuid4().hex[:10]}"
    tx_no = live.post("/transactions", payment_body(reference=reference, amount=75.5)).json()["transactionId"]
    support = _signed_in(server, merchant, "support")
    for path in ("/transactions", "/webhooks", "/audit", "/account"):
        assert '<input id="quick-search" name="q" type="search"' in support.get(path).text
    found = support.get(f"/search?q={reference[3:12]}", headers=HTMX)
    assert found.status_code == 200 and "HX-Request" in found.headers["Vary"]
    options = re.findall(r'<li role="option" id="([\w-]+)" aria-selected="false"\s+'
                         r'(?:class="quick-all"\s+)?data-href="([^"]+)"', found.text)
    assert options == [("quick-option-1", f"/transactions/{tx_no}"),
                       ("quick-option-all", f"/transactions?q={reference[3:12]}")]
    assert 'data-announce="1 transaction found: arrow keys to choose, Enter to open"' in found.text
    assert "Payment · 75.50 EUR · Pending" in found.text


def test_the_search_finds_nothing_of_the_other_mode_and_says_so(server, merchant, sandbox):
    sandbox_ref = f"only-sandbox-{uuid.uuid4().hex[:8]}"
    sandbox.post("/transactions", payment_body(reference=sandbox_ref))
    finance = _signed_in(server, merchant, "finance")
    none = finance.get(f"/search?q={sandbox_ref}", headers=HTMX)
    assert "No transaction matches “" + sandbox_ref + "”: search the list" in none.text
    assert 'data-announce="No transaction matches: Enter searches the transactions list"' in none.text
    assert "quick-option-1" in finance.get(f"{SANDBOX}/search?q={sandbox_ref}", headers=HTMX).text
    assert finance.get("/search?q=", headers=HTMX).text.strip() == ""
    bad = finance.get("/search?q=a%01b", headers=HTMX)
    assert "Search text must not contain control characters" in bad.text


def test_without_javascript_the_search_opens_the_list(server, merchant):
    support = _signed_in(server, merchant, "support")
    opened = support.get("/search?q=abc")
    assert (opened.status_code, opened.headers["Location"]) == (302, "/transactions?q=abc")
    signed_out = Browserless(server.url).get("/search?q=abc")
    assert signed_out.status_code == 302 and signed_out.headers["Location"].startswith("/login")
    assert Browserless(server.url).get("/search?q=abc", headers=HTMX).status_code == 401


@pytest.mark.parametrize("role", ["support", "finance", "payouts", "admin"])
def test_every_role_searches(server, merchant, role):
    assert "quick-option-all" in _signed_in(server, merchant, role).get("/search?q=SBX", headers=HTMX).text


def _nav_approvals(html: str) -> str:
    return re.search(r'<a href="[^"]*approvals"[^>]*>.*?</a>', html, re.S).group(0)


def test_the_approvals_item_counts_what_waits_for_the_user_in_each_mode(server, merchant,
                                                                        captured_payment):
    admin = _signed_in(server, merchant, "admin")
    asker, approver = _signed_in(server, merchant, "finance"), _signed_in(server, merchant, "finance")
    admin.prefix = asker.prefix = SANDBOX
    _threshold(admin, "EUR", "50")
    for _ in range(2):
        tx_no = captured_payment(100)
        review = _htmx_post(asker, f"/transactions/{tx_no}/refund/review", {"amount": "70.00"})
        key = review.text.split('name="request_key" value="')[1].split('"')[0]
        _htmx_post(asker, f"/transactions/{tx_no}/refund", {"amount": "70.00", "request_key": key})
    item = _nav_approvals(approver.get("/transactions").text)
    assert item == ('<a href="/approvals" title="2 waiting for you: 2 in sandbox">Approvals '
                    '<span class="nav-count">2</span>'
                    '<span class="visually-hidden"> waiting for you: 2 in sandbox</span></a>')
    # The requester's own requests wait for someone else; support approves nothing.
    assert 'class="nav-count"' not in _nav_approvals(asker.get("/transactions").text)
    live_page = approver.get("/approvals").text
    assert "Nothing awaits approval in live mode." in live_page
    assert ('2 requests wait for you in sandbox mode: <a href="/test/approvals">open the sandbox '
            'approvals</a>.') in live_page
    sandbox_page = approver.get(f"{SANDBOX}/approvals").text
    assert "awaiting-elsewhere" not in sandbox_page and "Nothing awaits approval" not in sandbox_page


def _nav_disputes(html: str) -> str:
    return re.search(r'<a href="[^"]*disputes"[^>]*>.*?</a>', html, re.S).group(0)


def test_the_disputes_item_counts_those_needing_a_response_in_each_mode(server, merchant, sandbox,
                                                                        captured_payment):
    finance = _signed_in(server, merchant, "finance")
    assert _nav_disputes(finance.get("/transactions").text) == '<a href="/disputes">Disputes</a>'
    disputed = []
    for _ in range(2):
        tx_no = captured_payment(100)
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
        disputed.append(tx_no)

    item = _nav_disputes(finance.get("/transactions").text)

    assert item == ('<a href="/disputes" title="2 needing a response: 2 in sandbox">Disputes '
                    '<span class="nav-count">2</span>'
                    '<span class="visually-hidden"> needing a response: 2 in sandbox</span></a>')
    # one answered (evidence on its way to the provider) and one closed: none left to answer
    ids = {d["txNo"]: d["disputeId"] for d in sandbox.get("/disputes?limit=200").json()["disputes"]}
    assert sandbox.post(f"/disputes/{ids[disputed[0]]}/accept").status_code == 200
    assert sandbox.post(f"/sandbox/disputes/{ids[disputed[1]]}/outcome", {"outcome": "won"}).status_code == 200
    assert _nav_disputes(finance.get(f"{SANDBOX}/transactions").text) == '<a href="/test/disputes">Disputes</a>'
