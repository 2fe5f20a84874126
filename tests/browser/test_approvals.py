"""Four eyes in a browser: a finance user asks for a refund above the threshold, a colleague in
another browser approves it from the Approvals page, and the payment shows the refund."""
from __future__ import annotations

import uuid
from decimal import Decimal

from playwright.sync_api import Browser, Page, expect

from app.payments.model import Caller, Mode
from app.store.approvals import set_threshold
from app.util import utcnow
from tests.conftest import payment_body
from tests.dashboard.conftest import add_user

from .conftest import sign_in, to_sandbox

SCREENSHOTS = "approvals"  # PNGs under the test's own tmp_path, never a shared /tmp path


def _captured(sandbox) -> str:
    created = sandbox.post("/transactions", payment_body(reference=f"ORDER-{uuid.uuid4().hex[:8]}", amount=100))
    tx_no = created.json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    return tx_no


def test_a_refund_above_the_threshold_is_made_when_a_colleague_approves_it(page: Page, browser: Browser,
                                                                           server, merchant, sandbox, tmp_path):
    deps = server.app.extensions["paydesk"]
    with deps.uow() as uow:
        set_threshold(uow.conn, Caller(merchant.merchant_id, Mode.SANDBOX, "admin@shop.test"), "EUR",
                      Decimal("50"), utcnow())
        uow.commit()
    tx_no = _captured(sandbox)
    asker = add_user(server.app, merchant.merchant_id, "finance")
    sign_in(page, server.url, asker)
    to_sandbox(page)
    page.goto(f"{server.url}/test/transactions/{tx_no}")
    panel = page.locator("#refund-panel")
    panel.get_by_label("Amount to refund (EUR)").fill("70.00")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.locator("#needs-approval")).to_contain_text("another user must approve this refund")
    panel.get_by_role("button", name="Request approval for 70.00 EUR").click()
    expect(panel.get_by_role("status")).to_contain_text("awaits another user's approval")
    expect(panel.locator("#awaiting-approval")).to_have_text("70.00 EUR")
    expect(panel.locator("#remaining-refundable")).to_have_text("30.00 EUR")
    expect(page.locator("#payment-approvals")).to_contain_text("Waiting for another user")
    expect(page.locator("#refunds tbody tr")).to_have_count(0)

    colleague = browser.new_context()  # another person, another browser
    other = colleague.new_page()
    try:
        sign_in(other, server.url, add_user(server.app, merchant.merchant_id, "finance"))
        to_sandbox(other)
        other.get_by_role("link", name="Approvals").click()
        expect(other).to_have_title("Approvals · Paydesk")
        other.wait_for_load_state("load")  # htmx binds the Approve button's confirmation
        row = other.locator("#awaiting tbody tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text(asker)
        for width in (1366, 390):
            other.set_viewport_size({"width": width, "height": 900})
            other.screenshot(path=tmp_path / f"{SCREENSHOTS}-list-{width}.png", full_page=True)
        other.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Approve").click()
        expect(other.get_by_role("status").first).to_contain_text("is Captured.")
        expect(other.locator("#decided tbody tr")).to_contain_text("Approved")
    finally:
        colleague.close()

    page.reload()
    expect(page.locator("#refunds tbody tr")).to_have_count(1)
    expect(page.locator("#remaining-refundable")).to_have_text("30.00 EUR")
    expect(page.locator("#payment-approvals")).to_contain_text("Approved")
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=tmp_path / f"{SCREENSHOTS}-transaction-{width}.png", full_page=True)
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_an_admin_sets_a_threshold_and_a_users_limit_which_the_refund_panel_enforces(page: Page, browser: Browser,
                                                                                     server, merchant, sandbox,
                                                                                     tmp_path):
    finance = add_user(server.app, merchant.merchant_id, "finance")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("link", name="Approvals and limits").click()
    expect(page).to_have_title("Approvals and limits · Paydesk")
    page.wait_for_load_state("load")
    thresholds = page.locator("#thresholds")
    thresholds.get_by_label("Currency").select_option("EUR")
    thresholds.get_by_label("Needs approval above").fill("500")
    thresholds.get_by_role("button", name="Save threshold").click()
    expect(page.get_by_role("status").first).to_contain_text("above 500.00 EUR now need a second user's approval")
    limits = page.locator("#limits")
    limits.get_by_label("User").select_option(label=f"{finance} (finance)")
    limits.get_by_label("Currency").select_option("EUR")
    limits.get_by_label("Largest refund").fill("20")
    limits.get_by_role("button", name="Save limits").click()
    expect(page.get_by_role("status").first).to_contain_text(f"{finance}'s EUR limits: refunds 20.00 EUR")
    expect(page.locator("#limits tbody tr")).to_contain_text(finance)
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=tmp_path / f"{SCREENSHOTS}-settings-{width}.png", full_page=True)

    tx_no = _captured(sandbox)
    colleague = browser.new_context()
    other = colleague.new_page()
    try:
        sign_in(other, server.url, finance)
        to_sandbox(other)
        other.goto(f"{server.url}/test/transactions/{tx_no}")
        panel = other.locator("#refund-panel")
        panel.get_by_label("Amount to refund (EUR)").fill("30.00")
        panel.get_by_role("button", name="Review refund").click()
        expect(panel.locator(".field-errors")).to_have_text(
            "Your refund limit is 20.00 EUR: 30.00 EUR is above it. Ask an admin to raise it, "
            "or a colleague whose limit allows it.")
        expect(panel.get_by_label("Amount to refund (EUR)")).to_be_focused()
    finally:
        colleague.close()
