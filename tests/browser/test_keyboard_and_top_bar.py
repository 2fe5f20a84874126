"""The top bar and the keyboard, acted out in Chromium at a phone's and a desktop's width: the
search on every page ("/", arrow keys, Enter, Escape), Escape cancelling confirm steps, Tab
order that follows what is seen, the mode switch keeping the page and its search, the
Approvals count and the notification choices. And the measure the issue asks for: a payment
found by part of its reference from any page, and partly refunded, in at most 6 actions."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from app.payments.approvals import request_refund
from app.payments.model import Caller, Mode
from app.payments.schemas import parse_refund
from app.store.approvals import set_threshold
from app.util import utcnow
from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user

from .accessibility import review_a_payout
from .conftest import htmx_settled, sign_in

WIDTHS = {"phone": 390, "desktop": 1366}


@pytest.fixture(params=list(WIDTHS))
def screen(request, page: Page) -> str:
    """The test runs at a phone's width and at a desktop's."""
    page.set_viewport_size({"width": WIDTHS[request.param], "height": 900})
    return request.param


class Actions:
    """Counts what the user does: each key pressed and each click; typed text is not counted."""

    def __init__(self, page: Page):
        self.page, self.count = page, 0

    def press(self, key: str) -> None:
        self.count += 1
        self.page.keyboard.press(key)

    def click(self, locator) -> None:
        self.count += 1
        locator.click()

    def type(self, text: str) -> None:
        self.page.keyboard.type(text, delay=20)


def _captured(sandbox, reference: str, amount=100) -> str:
    tx_no = sandbox.post("/transactions", payment_body(reference=reference, amount=amount)).json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    return tx_no


def _options(page: Page):
    return page.locator("#quick-results [role=option]")


def test_find_a_payment_by_part_of_its_reference_from_any_page_and_refund_part_in_six_actions(
        page: Page, server, merchant, sandbox, screen):
    reference = f"ORD-{uuid.uuid4().hex[:6].upper()}-2026"
    tx_no = _captured(sandbox, reference)
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}{SANDBOX}/webhooks")  # any page
    page.wait_for_load_state("load")
    act = Actions(page)
    act.press("/")
    expect(page.locator("#quick-search")).to_be_focused()
    act.type(reference[4:10])  # part of the reference
    expect(_options(page).first).to_have_attribute("aria-selected", "true")
    expect(page.locator("#quick-search")).to_have_attribute("aria-expanded", "true")
    act.press("Enter")
    expect(page).to_have_title(f"Payment {tx_no} · Paydesk")
    page.wait_for_load_state("load")
    act.click(page.get_by_role("link", name="Refund", exact=True))
    expect(page.locator("#refund-amount")).to_be_focused()
    act.type("20.00")  # the selected prefilled amount is replaced
    act.press("Enter")
    confirm = page.get_by_role("button", name="Confirm refund of 20.00 EUR")
    expect(confirm).to_be_focused()
    act.click(confirm)
    expect(page.locator("#refund-panel")).to_contain_text("of 20.00 EUR is Captured.")
    assert act.count == 5, act.count  # "/", Enter, Refund, Enter, Confirm: within the 6 asked for
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_arrow_keys_move_through_the_results_enter_opens_escape_closes(page: Page, server, merchant,
                                                                      sandbox, screen):
    marker = uuid.uuid4().hex[:8]
    older = _captured(sandbox, f"arrow-{marker}-one")
    newer = _captured(sandbox, f"arrow-{marker}-two")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    page.goto(f"{server.url}{SANDBOX}/audit")
    page.wait_for_load_state("load")
    page.keyboard.press("/")
    page.keyboard.type(marker, delay=20)
    options = _options(page)
    expect(options).to_have_count(3)  # newest first, then "All results"
    expect(options.nth(0)).to_contain_text(newer)
    page.keyboard.press("ArrowDown")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    expect(options.nth(0)).to_have_attribute("aria-selected", "false")
    expect(page.locator("#quick-search")).to_have_attribute("aria-activedescendant", "quick-option-2")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # wraps round to the last: the whole list
    expect(options.nth(2)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Escape")
    expect(page.locator("#quick-results")).to_be_hidden()
    expect(page.locator("#quick-search")).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#quick-search")).to_be_focused()
    page.keyboard.type("-one", delay=20)
    expect(options).to_have_count(2)
    page.keyboard.press("Enter")
    expect(page).to_have_title(f"Payment {older} · Paydesk")


def test_slash_does_not_steal_typing_in_a_field(page: Page, server, merchant, screen):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    page.goto(f"{server.url}/transactions")
    page.wait_for_load_state("load")
    page.locator("#q").fill("")
    page.locator("#q").press_sequentially("a/b")
    expect(page.locator("#q")).to_have_value("a/b")
    expect(page.locator("#quick-search")).not_to_be_focused()


def test_escape_cancels_the_refund_confirm_and_the_cancel_confirm(page: Page, server, merchant, sandbox,
                                                                 screen):
    tx_no = _captured(sandbox, f"esc-{uuid.uuid4().hex[:8]}")
    pending = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    page.wait_for_load_state("load")
    panel = page.locator("#refund-panel")
    panel.get_by_label("Amount to refund", exact=False).fill("10.00")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_role("button", name="Confirm refund of 10.00 EUR")).to_be_focused()
    page.keyboard.press("Escape")
    expect(panel.get_by_role("button", name="Review refund")).to_be_visible()
    expect(panel.get_by_role("button", name="Confirm refund", exact=False)).to_have_count(0)
    expect(panel.get_by_label("Amount to refund", exact=False)).to_have_value("10.00")
    assert sandbox.status(tx_no)["Status"] == "Captured"

    page.goto(f"{server.url}{SANDBOX}/transactions/{pending}")
    page.wait_for_load_state("load")
    cancel = page.locator("#cancel-panel")
    cancel.get_by_role("button", name="Cancel payment").click()
    expect(cancel.get_by_role("button", name="Confirm cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#cancel-panel").get_by_role("button", name="Cancel payment")).to_be_visible()
    assert sandbox.status(pending)["Status"] == "Pending"


def test_escape_cancels_the_payout_review(page: Page, server, merchant, screen):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))
    page.goto(f"{server.url}{SANDBOX}/payouts/new")
    page.wait_for_load_state("load")
    review_a_payout(page)
    expect(page.locator("#confirm-payout")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#confirm-payout")).to_have_count(0)
    expect(page.get_by_label("Amount", exact=True)).to_have_value("25000")
    expect(page.get_by_role("button", name="Review payout")).to_be_visible()


def _focusable_boxes(page: Page) -> list[dict]:
    """The visible focusable elements of the payment's columns, in DOM (Tab) order, with their boxes."""
    return page.evaluate("""() => [...document.querySelectorAll(
        '.detail-grid a[href], .detail-grid button, .detail-grid input:not([type=hidden]), .detail-grid textarea, .detail-grid select')]
        .filter((e) => e.offsetParent !== null)
        .map((e) => { const r = e.getBoundingClientRect();
                      return {id: e.id || e.textContent.trim().slice(0, 30), x: r.x, y: r.y + window.scrollY,
                              side: !!e.closest('#tx-side')}; })""")


def test_tab_order_follows_what_is_seen_and_the_header_reaches_the_refund(page: Page, server, merchant,
                                                                         sandbox, screen):
    tx_no = _captured(sandbox, f"tab-{uuid.uuid4().hex[:8]}")
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}{SANDBOX}/transactions/{tx_no}")
    page.wait_for_load_state("load")
    boxes = _focusable_boxes(page)
    details = [b for b in boxes if not b["side"]]
    side = [b for b in boxes if b["side"]]
    assert details and side and boxes == details + side  # the panels come last in Tab order
    if screen == "phone":  # one column: every next stop is further down the page
        tops = [round(b["y"]) for b in boxes]
        assert tops == sorted(tops), boxes
    else:  # two columns: the panels' column, read after the details', is to their right
        assert min(b["x"] for b in side) > max(b["x"] for b in details), boxes
    # The header's Refund link: the first stop after the payment's identifiers, into the panel.
    header_refund = page.locator("#header-refund")
    if screen != "phone":  # beside the status on the right, not with the status halfway across
        status, refund = page.locator("#tx-status").bounding_box(), header_refund.bounding_box()
        assert 0 <= refund["x"] - (status["x"] + status["width"]) <= 24, (status, refund)
    header_refund.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#refund-amount")).to_be_focused()
    expect(page.locator("#refund-amount")).to_be_in_viewport()


def test_the_mode_switch_keeps_the_search_typed_and_the_overviews_range(page: Page, server, merchant, screen):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}/transactions")
    page.wait_for_load_state("load")
    page.locator("#q").press_sequentially("SBX-DECLINED", delay=20)
    expect(page).to_have_url(f"{server.url}/transactions?q=SBX-DECLINED")
    htmx_settled(page)
    page.get_by_role("navigation", name="Data shown").get_by_role("link", name="Sandbox").click()
    expect(page).to_have_url(f"{server.url}{SANDBOX}/transactions?q=SBX-DECLINED")
    expect(page.locator("#q")).to_have_value("SBX-DECLINED")
    expect(page.locator("#results")).to_contain_text("SBX-DECLINED")
    page.goto(f"{server.url}/overview?days=90")
    page.get_by_role("navigation", name="Data shown").get_by_role("link", name="Sandbox").click()
    expect(page).to_have_url(f"{server.url}{SANDBOX}/overview?days=90")
    # A transaction has no twin: the other mode's list, searched for its reference.
    page.goto(f"{server.url}{SANDBOX}/transactions/SBX-CAPTURED")
    page.get_by_role("navigation", name="Data shown").get_by_role("link", name="Live").click()
    expect(page).to_have_url(f"{server.url}/transactions?q=sandbox-sbx-captured")
    expect(page.locator("#q")).to_have_value("sandbox-sbx-captured")


def test_an_approver_in_live_is_told_of_the_request_waiting_in_sandbox(page: Page, server, merchant, sandbox,
                                                                      screen):
    deps = server.app.extensions["paydesk"]
    asker = Caller(merchant.merchant_id, Mode.SANDBOX, f"asker-{uuid.uuid4().hex[:6]}@shop.test")
    with deps.uow() as uow:
        set_threshold(uow.conn, asker, "EUR", Decimal("50"), utcnow())
        uow.commit()
    tx_no = _captured(sandbox, f"wait-{uuid.uuid4().hex[:8]}")
    request_refund(deps, asker, parse_refund({"txNo": tx_no, "amount": 70}), uuid.uuid4().hex)
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    item = page.get_by_role("navigation", name="Main").get_by_role("link", name="Approvals")
    expect(item).to_have_accessible_name("Approvals 1 waiting for you: 1 in sandbox")
    expect(item).to_have_attribute("title", "1 waiting for you: 1 in sandbox")
    expect(item.locator(".nav-count")).to_have_text("1")
    item.click()
    expect(page).to_have_url(f"{server.url}/approvals")
    notice = page.locator("#awaiting-elsewhere")
    expect(notice).to_contain_text("Nothing awaits approval in live mode.")
    notice.get_by_role("link", name="open the sandbox approvals").click()
    expect(page).to_have_url(f"{server.url}{SANDBOX}/approvals")
    expect(page.locator("#awaiting")).to_contain_text(tx_no)


def test_a_user_chooses_their_e_mail_notifications_on_the_account_page(page: Page, server, merchant, screen):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}/account")
    section = page.locator("#notifications")
    section.get_by_role("group", name="An approval waits for me").get_by_label("E-mail").select_option(
        label="At once")
    failed = section.get_by_role("group", name="A refund or payout failed")
    failed.get_by_label("E-mail").select_option(label="In the daily digest")
    failed.get_by_label("Sandbox too").check()
    section.get_by_role("button", name="Save notifications").click()
    expect(page.get_by_role("status").first).to_contain_text("Your e-mail notifications are saved.")
    expect(section.get_by_role("group", name="An approval waits for me").get_by_label("E-mail")).to_have_value(
        "immediate")
    expect(failed.get_by_label("E-mail")).to_have_value("digest")
    expect(failed.get_by_label("Sandbox too")).to_be_checked()
    expect(section.get_by_role("group", name="Webhook delivery keeps failing").get_by_label("E-mail")).to_have_value("")


def test_an_admins_sections_fit_one_row_on_a_laptop_and_wrap_on_a_phone(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    links = page.get_by_role("navigation", name="Main").get_by_role("link")

    def rows() -> int:
        return len({round(box["y"]) for box in (link.bounding_box() for link in links.all())})

    assert links.count() == 12
    page.set_viewport_size({"width": 1280, "height": 900})
    assert rows() == 1
    page.set_viewport_size({"width": 390, "height": 900})
    assert rows() > 1
    for link in links.all():  # wrapped, not cut off
        box = link.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390


def test_an_admin_s_menu_with_both_counts_is_one_row_on_a_desktop(page: Page, server, merchant, sandbox):
    deps = server.app.extensions["paydesk"]
    asker = Caller(merchant.merchant_id, Mode.SANDBOX, f"asker-{uuid.uuid4().hex[:6]}@shop.test")
    with deps.uow() as uow:
        set_threshold(uow.conn, asker, "EUR", Decimal("50"), utcnow())
        uow.commit()
    request_refund(deps, asker, parse_refund({"txNo": _captured(sandbox, f"w-{uuid.uuid4().hex[:8]}"),
                                              "amount": 70}), uuid.uuid4().hex)
    disputed = _captured(sandbox, f"d-{uuid.uuid4().hex[:8]}")
    assert sandbox.post(f"/sandbox/transactions/{disputed}/outcome", {"status": "Chargeback"}).status_code == 200
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.locator(".nav-count")).to_have_count(2)  # Disputes 1, Approvals 1
    tops = {round(box["y"]) for box in (link.bounding_box() for link in menu.get_by_role("link").all())}
    assert len(tops) == 1, f"the menu wraps: its links start at {sorted(tops)}"
