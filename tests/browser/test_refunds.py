"""Finance staff refund from the transaction page; support staff cannot."""
from __future__ import annotations

import uuid
from datetime import timedelta

from playwright.sync_api import Page, expect

from app.payments import settlement
from tests.store.test_worker import deps_at

from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user

from .conftest import sign_in, to_sandbox, to_transactions


def _captured(sandbox, reference: str) -> str:
    created = sandbox.post("/transactions", payment_body(reference=reference, amount=100))
    tx_no = created.json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    return tx_no


def test_finance_finds_a_payment_by_reference_and_refunds_it_in_two_steps(page: Page, server, merchant,
                                                                          sandbox):
    tag = uuid.uuid4().hex[:8].upper()
    tx_no = _captured(sandbox, f"ORDER-{tag}-SHOES")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    to_transactions(page)
    page.get_by_label("Search", exact=True).press_sequentially(tag[2:7].lower(), delay=40)
    results = page.locator("#results tbody tr")
    expect(results).to_have_count(1)
    expect(results).to_contain_text(f"ORDER-{tag}-SHOES")
    expect(page).to_have_url(f"{server.url}{SANDBOX}/transactions?q={tag[2:7].lower()}")
    results.get_by_role("link", name=tx_no).filter(visible=True).first.click()
    expect(page).to_have_title(f"Payment {tx_no} · Paydesk")

    panel = page.locator("#refund-panel")
    expect(panel.get_by_label("Amount to refund (EUR)")).to_have_value("100.00")
    panel.get_by_label("Amount to refund (EUR)").fill("30.00")
    panel.get_by_label("Reason").fill("Damaged item")
    page.wait_for_load_state("load")  # htmx binds the refund form, or Review refund posts a whole page
    panel.get_by_role("button", name="Review refund").click()
    panel.get_by_role("button", name="Confirm refund of 30.00 EUR").click()
    expect(panel.locator("#remaining-refundable")).to_have_text("70.00 EUR")
    expect(panel.get_by_role("status")).to_contain_text("of 30.00 EUR is Captured.")
    expect(page.locator("#refunds tbody tr")).to_have_count(1)
    page.evaluate("window.notReloaded = true")

    panel.get_by_role("button", name="Refund in full (70.00 EUR)").click()
    panel.get_by_role("button", name="Confirm refund of 70.00 EUR").click()
    expect(panel.locator("#remaining-refundable")).to_have_text("0.00 EUR")
    expect(page.locator("#tx-status")).to_contain_text("Refunded")
    expect(page.locator("#refunds tbody tr")).to_have_count(2)
    assert page.evaluate("window.notReloaded") is True  # swapped in place, never reloaded
    assert sandbox.status(tx_no)["Status"] == "Refunded"

    page.go_back()  # the search is in the URL htmx pushed: back shows the same results
    expect(page.get_by_label("Search", exact=True)).to_have_value(tag[2:7].lower())
    rows = page.locator("#results tbody tr")
    expect(rows).to_have_count(3)  # refunds repeat their payment's reference
    expect(rows.filter(has_text=f"Refund of {tx_no}")).to_have_count(2)  # and name their payment
    expect(rows.filter(has_text=tx_no).filter(has_not_text="Refund of")).to_contain_text("Refunded")


def test_a_refund_above_the_remaining_amount_shows_the_message_and_changes_nothing(page: Page, server,
                                                                                  merchant, sandbox):
    tx_no = _captured(sandbox, f"ORDER-{uuid.uuid4().hex[:8]}")
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 60}).status_code == 200
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    panel = page.locator("#refund-panel")
    panel.get_by_label("Amount to refund (EUR)").fill("50")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_role("alert")).to_have_text(
        "Refund amount (50.00) exceeds remaining refundable amount (40.00)")
    expect(panel.locator("#remaining-refundable")).to_have_text("40.00 EUR")
    expect(panel.get_by_label("Amount to refund (EUR)")).to_have_value("50.00")
    page.reload()
    expect(page.locator("#refunds tbody tr")).to_have_count(1)
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_support_sees_no_refund_panel_and_a_forged_refund_is_refused(page: Page, server, merchant, sandbox):
    tx_no = _captured(sandbox, f"ORDER-{uuid.uuid4().hex[:8]}")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    expect(page.locator("#status-fields")).to_contain_text("Captured")
    expect(page.locator("#refund-panel")).to_have_count(0)
    expect(page.get_by_role("button", name="Review refund")).to_have_count(0)
    # The forged request comes from the page itself, with the session's valid CSRF token.
    status = page.evaluate("""async (url) => {
        const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
        const body = new URLSearchParams({amount: '100.00', csrf_token: token});
        const response = await fetch(url, {method: 'POST', body});
        return response.status;
    }""", f"/transactions/{tx_no}/refund")
    assert status == 403
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_a_pending_refund_turns_captured_on_the_page_without_a_reload(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/SBX-REFUND-ASYNC")
    panel = page.locator("#refund-panel")
    panel.get_by_label("Amount to refund (EUR)").fill("10.00")
    panel.get_by_role("button", name="Review refund").click()
    panel.get_by_role("button", name="Confirm refund of 10.00 EUR").click()
    rows = page.locator("#refunds tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Pending")
    expect(page.locator("#refunds")).to_contain_text("1 pending: this list updates by itself.")
    page.evaluate("window.notReloaded = true")

    later = deps_at(server.app, timedelta(seconds=3))
    while settlement.run_due_provider_checks(later):  # the worker's job
        pass

    expect(rows.first).to_contain_text("Captured", timeout=10_000)
    expect(page.locator("#refunds")).not_to_contain_text("pending")
    assert page.evaluate("window.notReloaded") is True
    expect(page.locator("#refunds")).not_to_have_attribute("hx-trigger", "every 2s")  # polling stopped


def test_focus_follows_the_refund_steps_instead_of_jumping_to_the_top(page: Page, server, merchant,
                                                                       sandbox):
    tx_no = _captured(sandbox, f"FOCUS-{uuid.uuid4().hex[:8]}")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    panel = page.locator("#refund-panel")

    panel.get_by_label("Amount to refund (EUR)").fill("ten")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_label("Amount to refund (EUR)")).to_be_focused()  # the field in error

    panel.get_by_label("Amount to refund (EUR)").fill("150.00")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_role("alert")).to_contain_text("cannot exceed original transaction amount")
    expect(panel.get_by_role("alert")).to_be_focused()  # the refusal

    panel.get_by_label("Amount to refund (EUR)").fill("30.00")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_role("button", name="Confirm refund of 30.00 EUR")).to_be_focused()  # next action

    page.keyboard.press("Enter")
    result = panel.get_by_role("status")
    expect(result).to_contain_text("of 30.00 EUR is Captured.")
    expect(result).to_be_focused()  # the result, announced (role=status) and where the keyboard is
    expect(page.locator("#announcer")).to_contain_text("of 30.00 EUR is Captured.")  # the page's one live region
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#refund-panel') !== null")
