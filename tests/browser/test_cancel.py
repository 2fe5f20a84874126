"""Finance staff cancel a Pending payment from its page, after a confirm step."""
from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user

from .conftest import sign_in, to_sandbox


def test_finance_cancels_a_pending_payment_after_confirming(page: Page, server, merchant, sandbox):
    tx_no = sandbox.post("/transactions", payment_body(amount=100)).json()["transactionId"]
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    expect(page.locator("#tx-status")).to_contain_text("Pending")

    panel = page.locator("#cancel-panel")
    panel.get_by_role("button", name="Cancel payment").click()
    expect(panel).to_contain_text("Cancel payment order-")
    assert sandbox.status(tx_no)["Status"] == "Pending"  # asking is not doing
    page.evaluate("window.beforeTheCancel = true")
    panel.get_by_role("button", name="Confirm cancel").click()

    expect(page.get_by_role("status").filter(has_text="is cancelled")).to_have_text(
        f"Payment {tx_no} is cancelled: Declined, Payment Cancelled By User.")
    expect(page.locator("#tx-status")).to_contain_text("Declined")
    expect(page.locator(".decline-banner")).to_contain_text("Decline reason: Payment Cancelled By User")
    expect(page.locator(".decline-banner")).to_contain_text(
        "Tell the customer: “The payment was cancelled, so nothing was charged.")
    expect(page.locator("#cancel-panel")).to_have_count(0)
    assert page.evaluate("window.beforeTheCancel") is None  # the page was loaded afresh
    assert page.url == f"{server.url}{SANDBOX}/transactions/{tx_no}"
    status = sandbox.status(tx_no)
    assert (status["Status"], status["DeclineReason"]) == ("Declined", "Payment Cancelled By User")


def test_focus_and_the_announcer_follow_the_cancel_steps(page: Page, server, merchant, sandbox):
    tx_no = sandbox.post("/transactions", payment_body(amount=100)).json()["transactionId"]
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    panel = page.locator("#cancel-panel")
    panel.get_by_role("button", name="Cancel payment").click()
    confirm = panel.get_by_role("button", name="Confirm cancel")
    expect(confirm).to_be_focused()  # the next action
    assert page.evaluate("document.activeElement.id") == "confirm-cancel"
    expect(page.locator("#announcer")).to_contain_text("Cancel payment order-")
    expect(page.locator("#announcer")).to_contain_text("of 100.00 EUR?")

    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})  # paid meanwhile
    # The page notices the payment is no longer Pending by itself: the cancel panel goes, focus
    # (which was in it) goes to the new status, and the status is read out.
    status = page.locator("#tx-status")
    expect(status).to_contain_text("Captured", timeout=10_000)
    expect(page.locator("#cancel-panel")).to_have_count(0)
    expect(status).to_be_focused()
    expect(page.locator("#announcer")).to_have_text(f"Payment {tx_no} is now Captured.")
