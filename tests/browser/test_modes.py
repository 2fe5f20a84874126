"""Each page's URL says its mode: a sandbox link works for a colleague, the switch keeps the page."""
from __future__ import annotations

import uuid

from playwright.sync_api import Browser, Page, expect

from app.store.merchants import create_merchant
from tests.conftest import payment_body
from tests.dashboard.conftest import PASSWORD, SANDBOX, add_user

from .conftest import sign_in, to_sandbox, to_transactions


def _sign_in_on_the_form(page: Page, email: str) -> None:
    """Sign in on the login form the page was sent to (keeping where it was going)."""
    expect(page).to_have_title("Sign in · Paydesk")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def _switch(page: Page, label: str):
    return page.get_by_role("navigation", name="Data shown").get_by_role("link", name=label)


def test_a_sandbox_link_copied_by_one_user_opens_for_a_colleague(page: Page, browser: Browser, server,
                                                                 merchant, sandbox):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    to_transactions(page)
    page.locator("#results").get_by_role("link", name=tx_no).filter(visible=True).first.click()
    expect(page).to_have_title(f"Payment {tx_no} · Paydesk")
    shared = page.url
    assert shared == f"{server.url}{SANDBOX}/transactions/{tx_no}"

    colleague = browser.new_context()
    try:
        other_page = colleague.new_page()
        other_page.goto(shared)
        _sign_in_on_the_form(other_page, add_user(server.app, merchant.merchant_id, "support"))
        expect(other_page).to_have_title(f"Payment {tx_no} · Paydesk")
        assert other_page.url == shared
        expect(other_page.get_by_role("note")).to_contain_text("Sandbox: test data only")
        expect(other_page.locator("#tx-status")).to_contain_text("Pending")
    finally:
        colleague.close()


def test_the_same_link_is_not_found_for_another_merchants_user(page: Page, server, sandbox):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    with server.app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", server.app.config["BASE_URL"])
        uow.commit()
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    _sign_in_on_the_form(page, add_user(server.app, other.merchant_id, "admin"))
    expect(page).to_have_title("Not found · Paydesk")
    expect(page.get_by_role("main")).to_contain_text("There is nothing here in this mode.")
    expect(page.get_by_role("link", name="open it there")).to_have_count(0)


def test_switching_mode_on_the_list_keeps_the_list(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    expect(_switch(page, "Live")).to_have_attribute("aria-current", "true")
    to_sandbox(page)
    expect(page).to_have_url(f"{server.url}{SANDBOX}/transactions")
    expect(page).to_have_title("Transactions · Paydesk")
    expect(_switch(page, "Sandbox")).to_have_attribute("aria-current", "true")
    page.get_by_role("link", name="Webhooks").first.click()
    _switch(page, "Live").click()
    expect(page).to_have_url(f"{server.url}/webhooks")
    expect(page.get_by_role("note")).to_have_count(0)  # no sandbox banner


def test_switching_mode_on_a_transaction_opens_the_other_modes_list(page: Page, server, merchant):
    """Searched for the transaction's reference (the same order made in both modes is found)."""
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    page.goto(f"{server.url}{SANDBOX}/transactions/SBX-CAPTURED")
    _switch(page, "Live").click()
    expect(page).to_have_url(f"{server.url}/transactions?q=sandbox-sbx-captured")
    expect(page).to_have_title("Transactions matching “sandbox-sbx-captured” · Paydesk")


def test_a_live_url_of_a_sandbox_transaction_offers_the_link_there(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    page.goto(f"{server.url}/transactions/SBX-DECLINED")
    expect(page).to_have_title("Not found · Paydesk")
    expect(page.get_by_role("main")).to_contain_text("This transaction is in sandbox mode: open it there")
    page.get_by_role("link", name="open it there").click()
    expect(page).to_have_url(f"{server.url}{SANDBOX}/transactions/SBX-DECLINED")
    expect(page).to_have_title("Payment SBX-DECLINED · Paydesk")
