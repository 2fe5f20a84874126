"""The dashboard speaks its users' words, not the API's (issue 13, item 8): field errors, hints,
headings and dialogs name fields as the forms label them."""
from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user

from .conftest import open_new_payout, sign_in, to_sandbox

API_WORDS = re.compile(r"Billing\.|Payment\.[A-Z]|UserDefinedField|TOKEN_CACHE_SECONDS|Status response")


def test_payout_errors_name_the_forms_fields(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))
    open_new_payout(page)
    page.get_by_label("Payout method").select_option(label="NGN bank payout")
    page.get_by_label("Amount", exact=True).fill("100")
    page.get_by_role("button", name="Review payout").click()

    summary = page.locator("#error-summary")
    expect(summary).to_contain_text("Customer first name is required")
    assert not API_WORDS.search(page.locator("main").inner_text()), page.locator("main").inner_text()

    page.get_by_label("Reference", exact=True).fill("WORDS-1")
    page.get_by_label("First name").fill("Ada")
    page.get_by_label("Last name").fill("Lovelace")
    page.get_by_label("E-mail").fill("ada@example.com")
    page.get_by_label("Customer reference").fill("cust-1")
    page.get_by_role("button", name="Review payout").click()
    expect(summary).to_contain_text("Account holder is required for payouts")
    expect(summary).to_contain_text("Account number is required for payouts")
    assert not API_WORDS.search(page.locator("main").inner_text()), page.locator("main").inner_text()


def test_the_transaction_page_and_the_token_dialog_use_no_api_names(page: Page, server, merchant, sandbox):
    created = sandbox.post("/transactions", payment_body(amount=40))
    tx_no = created.json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    expect(page.get_by_role("heading", name="Details")).to_be_visible()
    expect(page.locator("#refund-panel")).to_contain_text("Optional; kept with the refund")
    assert not API_WORDS.search(page.locator("main").inner_text())

    page.goto(f"{server.url}{SANDBOX}/settings")
    revoke = page.locator("form[data-confirm^='Revoke token']").first
    seconds = server.app.config["TOKEN_CACHE_SECONDS"]
    expect(revoke).to_have_attribute(
        "data-confirm", re.compile(rf"Requests using it are refused within {seconds:g} seconds\.$"))



def test_the_sandbox_banner_is_in_a_landmark_and_error_links_are_24_px_targets(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))
    to_sandbox(page)
    banner = page.get_by_role("note")
    assert banner.evaluate("e => e.closest('header, main, nav, footer, aside, [role=region]') !== null")
    open_new_payout(page)
    page.get_by_role("button", name="Review payout").click()
    links = page.locator("#error-summary a")
    expect(links.first).to_be_visible()
    assert all(box["height"] >= 24 for box in (link.bounding_box() for link in links.all()))
