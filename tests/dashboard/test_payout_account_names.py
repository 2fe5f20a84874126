"""A Paystack payout's account named in the form: the request records it, a worker asks Paystack's
GET /bank/resolve, and the form (and the review's Confirm) waits for the name, never the request."""
from __future__ import annotations

import html
import re
import uuid

import pytest

from app.providers.account_resolutions import account_resolution_pass
from app.providers.bank_refresh import bank_list_pass
from app.worker import background_pass
from tests.e2e_providers import bodies
from tests.providers.fake_provider import RunningFakeProvider

from .test_payouts import nuban
from .test_provider_settings import connected_paystack

HTMX = {"HX-Request": "true"}
GTB = nuban("058")
NAMING = "Confirming the account holder's name with the bank…"


@pytest.fixture
def paystack():
    with RunningFakeProvider() as provider:
        provider.on("GET", "/bank", bodies.bank_list())
        provider.on("GET", "/bank/resolve", {"status": True, "message": "Account number resolved", "data": {
            "account_number": GTB, "account_name": "OKAFOR CHINEDU", "bank_id": 9}})
        yield provider


@pytest.fixture
def worker(worker_round, app):
    """run(until): worker rounds, each followed by the bank list and account name passes it
    started, until `until()` holds (at least two rounds: work asked for while a pass was already
    running is taken by the next pass). The live server is shared: earlier tests' accounts, their
    fakes gone, leave due lists and names that a pass may try before this test's."""
    def run(until) -> None:
        for round_number in range(1, 21):
            worker_round()
            for make in (bank_list_pass, account_resolution_pass):
                background_pass(app, make).wait(10)
            if round_number >= 2 and until():
                return
        raise AssertionError("20 worker rounds and still not done")
    return run


def _asked(paystack, path: str, **query: str):
    """A condition: Paystack has answered a GET of `path` with these query parameters (the pass
    stores the answer before it ends)."""
    return lambda: any(all(seen.query.get(name) == [value] for name, value in query.items())
                       for seen in paystack.requests_to("GET", path))


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)).strip())


def test_the_form_asks_again_until_a_worker_has_the_name_from_paystack(dashboard, app, merchant, paystack,
                                                                       worker):
    connected_paystack(dashboard(merchant.merchant_id, "admin"), app, merchant, paystack.url)
    operator = dashboard(merchant.merchant_id, "payouts")
    url = "/payouts/account-name"
    args = {"method": "paystack-bank-payout", "currency": "NGN", "bank": "058", "account_number": GTB,
            "holder": "Chinedu Okafor"}

    waiting = operator.get(url, params=args, headers=HTMX)
    assert _text(waiting.text) == NAMING
    assert 'hx-trigger="load delay:1s"' in waiting.text
    assert paystack.requests_to("GET", "/bank/resolve") == []  # not on the request's thread

    worker(until=_asked(paystack, "/bank/resolve"))
    named = operator.get(url, params=args, headers=HTMX)
    assert _text(named.text) == "Name at the bank: OKAFOR CHINEDU"  # the typed holder, word order aside
    operator.get(url, params=args, headers=HTMX)
    assert len(paystack.requests_to("GET", "/bank/resolve")) == 1  # kept: asked once


@pytest.mark.parametrize("extra", [{"mode": "sandbox"}, {"_external": "1", "_scheme": "javascript"}])
def test_asking_again_carries_the_forms_fields_only(dashboard, app, merchant, paystack, extra):
    """The next ask is built from the form's own fields: a query naming the URL's mode or one of
    url_for's words neither breaks the answer nor shapes where it asks next."""
    connected_paystack(dashboard(merchant.merchant_id, "admin"), app, merchant, paystack.url)
    operator = dashboard(merchant.merchant_id, "payouts")
    args = {"method": "paystack-bank-payout", "currency": "NGN", "bank": "058", "account_number": GTB,
            "holder": "Chinedu Okafor"}

    waiting = operator.get("/payouts/account-name", params=args | extra, headers=HTMX)
    assert waiting.status_code == 200
    again = html.unescape(re.search(r'hx-get="([^"]+)"', waiting.text).group(1))
    assert again == ("/payouts/account-name?method=paystack-bank-payout&currency=NGN&bank=058"
                     f"&account_number={GTB}&holder=Chinedu+Okafor")


def test_the_reviews_confirm_waits_for_the_name(dashboard, app, merchant, paystack, worker):
    connected_paystack(dashboard(merchant.merchant_id, "admin"), app, merchant, paystack.url)
    worker(until=_asked(paystack, "/bank", currency="NGN"))  # the account's bank lists, fetched and stored
    operator = dashboard(merchant.merchant_id, "payouts")
    review = operator.post("/payouts/review", {
        "method": "paystack-bank-payout", "currency": "NGN", "country": "NG", "bank": "058",
        "holder": "Chinedu Okafor", "account_number": GTB, "amount": "1000",
        "reference": f"po-{uuid.uuid4().hex[:10]}", "statement_descriptor": "PAYDESK",
        "callback_url": "https://merchant.example/hooks", "first_name": "", "last_name": "",
        "email": "chinedu@example.com", "customer_reference": "cust-7"})
    assert review.status_code == 200, _text(review.text)[:600]
    assert re.search(r'id="confirm-payout" data-focus-after-swap disabled '
                     r'aria-describedby="review-account-name"', review.text)
    assert f"Name at the bank {NAMING}" in _text(review.text)
    again = re.search(r'<dd id="review-account-name"[^>]*>\s*<span hx-get="([^"]+)"', review.text).group(1)

    worker(until=_asked(paystack, "/bank/resolve"))
    named = operator.get(again.replace("&amp;", "&"), headers=HTMX)
    assert 'data-holder="OKAFOR CHINEDU"' in named.text
