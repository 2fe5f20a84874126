"""Support staff find a customer's payments by e-mail or name, and a payment by the provider's id."""
from __future__ import annotations

import uuid

from playwright.sync_api import Page, expect

from tests.conftest import payment_body
from tests.dashboard.conftest import add_user

from .conftest import sign_in, to_sandbox


def _payment(sandbox, first: str, last: str, email: str) -> str:
    billing = {"firstName": first, "lastName": last, "email": email, "customerReference": "c"}
    created = sandbox.post("/transactions", payment_body(billing=billing))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def test_support_finds_payments_by_customer_e_mail_name_and_provider_id(page: Page, server, merchant,
                                                                       sandbox):
    tag = uuid.uuid4().hex[:6]
    ada = _payment(sandbox, "Ada", f"Byron{tag}", f"ada.{tag}@example.com")
    grace = _payment(sandbox, "Grace", f"Hopper{tag}", f"grace.{tag}@navy.example")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    to_sandbox(page)
    search = page.get_by_label("Search", exact=True)
    results = page.locator("#results tbody tr")

    search.press_sequentially(f"ADA.{tag}", delay=40)
    expect(page.locator("#results [role=status]")).to_have_text(
        f"1 transaction, newest first. Searched TxNo, reference, e-mail, name and provider id "
        f"for “ADA.{tag}”.")
    expect(results).to_have_count(1)
    expect(results).to_contain_text(ada)

    search.fill("")
    search.press_sequentially(f"grace hopper{tag}", delay=40)
    expect(page.locator("#results [role=status]")).to_contain_text(f"for “grace hopper{tag}”.")
    expect(results).to_have_count(1)
    expect(results).to_contain_text(grace)

    search.fill(f"sim_{ada}")
    search.press("Enter")
    expect(page.locator("#results [role=status]")).to_contain_text(f"for “sim_{ada}”.")
    expect(results).to_have_count(1)
    expect(results).to_contain_text(ada)
