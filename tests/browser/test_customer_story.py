"""Issue 33, acted as the user at 390 px and 1366 px: the list shows refunds and the customer, the
customer page explains declines (in at most 3 clicks from the customer's e-mail), a payment's
timeline tells its story and follows a refund and a note without a reload, and the audit log reads
in words, links what it names and breaks no word in the middle."""
from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Locator, Page, expect

from app.payments.model import Caller, Mode
from tests.conftest import payment_body
from tests.dashboard.conftest import add_user

from .conftest import htmx_settled, open_in_mode, sign_in

WIDTHS = {"phone": 390, "desktop": 1366}
TELL = ("Your bank declined the payment for insufficient funds. Please use another card or try again "
        "once funds are available.")


class Clicks:
    """The clicks a person makes, counted (typing is not a click)."""

    def __init__(self):
        self.count = 0

    def __call__(self, target: Locator) -> None:
        self.count += 1
        target.click()


def _customer(sandbox, tag: str) -> tuple[str, str, str]:
    """A customer with a captured payment partly refunded and a declined one: (e-mail, captured,
    declined)."""
    email = f"grace.{tag}@navy-example.org"
    billing = {"firstName": "Grace", "lastName": f"Hopper{tag}", "email": email,
               "customerReference": f"cust-{tag}"}
    captured = sandbox.post("/transactions", payment_body(amount=75.5, billing=billing)).json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{captured}/outcome", {"status": "Captured"}).status_code == 200
    assert sandbox.post("/transactions/refund", {"txNo": captured, "amount": 20}).status_code == 200
    declined = sandbox.post("/transactions", payment_body(amount=40, billing=billing)).json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{declined}/outcome",
                        {"status": "Declined", "declineReason": "Insufficient Funds"}).status_code == 200
    return email, captured, declined


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS)
def test_why_a_customer_was_declined_from_their_e_mail_in_at_most_3_clicks(page: Page, server, merchant,
                                                                          sandbox, width):
    tag = uuid.uuid4().hex[:6]
    email, captured, declined = _customer(sandbox, tag)
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    open_in_mode(page, server.url, "/overview", "sandbox")  # finance starts on the Overview
    page.wait_for_load_state("load")
    click = Clicks()

    click(page.get_by_role("navigation", name="Main").get_by_role("link", name="Transactions"))
    page.wait_for_load_state("load")
    page.get_by_label("Search", exact=True).press_sequentially(email.upper(), delay=20)
    rows = page.locator("#results tbody tr")
    expect(rows).to_have_count(2)
    # The list says what the refund did and who the customer is, at this width too.
    expect(rows.filter(has_text=captured)).to_contain_text("Partially refunded · 20.00 EUR")
    # ... once: under the reference on a phone, in its own column on a desktop (roles skip hidden parts).
    expect(rows.filter(has_text=captured).get_by_role("link", name=f"Grace Hopper{tag}")).to_have_count(1)
    click(page.locator("#results").get_by_role("link", name=f"Grace Hopper{tag}").first)

    expect(page).to_have_title(f"Customer Grace Hopper{tag} · Paydesk")
    declines = page.locator("#customer-declines")
    expect(declines).to_contain_text(declined)
    expect(declines.locator(".decline-tell")).to_have_text(f"Tell the customer: “{TELL}”")
    expect(declines.locator(".decline-tell")).to_be_visible()
    assert click.count == 2  # at most 3: Transactions, the customer's name
    # The other way: the declined payment's own page, also 2 clicks from the list.
    page.go_back()
    click(page.locator("#results").get_by_role("link", name=declined).first)
    expect(page.locator("#tx-decline .decline-tell")).to_have_text(f"Tell the customer: “{TELL}”")
    assert click.count == 3


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS)
def test_the_timeline_follows_a_refund_and_a_note_without_a_reload(page: Page, server, merchant, sandbox,
                                                                   width):
    tag = uuid.uuid4().hex[:6]
    _, captured, _ = _customer(sandbox, tag)
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    open_in_mode(page, server.url, f"/transactions/{captured}", "sandbox")
    page.wait_for_load_state("load")
    page.evaluate("window.notReloaded = true")
    timeline = page.locator("#history .timeline-entry")
    expect(page.locator("#history h2")).to_have_text("Timeline")
    expect(timeline.first).to_contain_text("refund.captured to https://merchant.example/webhooks")
    expect(timeline.filter(has_text="Refund RFD-")).to_have_count(2)  # issued, then captured
    expect(timeline.last).to_contain_text("Payment created")

    panel = page.locator("#refund-panel")
    panel.get_by_label("Amount to refund", exact=False).fill("5")
    panel.get_by_label("Reason").fill("Late delivery")
    panel.get_by_role("button", name="Review refund").click()
    panel.get_by_role("button", name="Confirm refund", exact=False).click()
    expect(timeline.filter(has_text="of 5.00 EUR issued: Late delivery")).to_have_count(1)
    htmx_settled(page)

    notes = page.locator("#notes")
    notes.get_by_label("Add a note").fill(f"Customer called {tag}")
    notes.get_by_role("button", name="Add note").click()
    expect(timeline.first).to_contain_text(f"Customer called {tag}")
    assert page.evaluate("window.notReloaded") is True

    # A refund's entry opens the refund's own page.
    entry = timeline.filter(has_text="of 5.00 EUR issued").first
    refund_no = re.search(r"RFD-[0-9A-F]+", entry.inner_text()).group(0)
    entry.get_by_role("link", name=refund_no).click()
    expect(page).to_have_title(f"Refund {refund_no} · Paydesk")
    # Nothing scrolls sideways at this width.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


# For each text node in the element: a word (a run of characters without a space or a hyphen)
# laid out on two lines was broken in the middle; <wbr> splits e-mails into nodes at their parts.
WORDS_BROKEN = """(root) => {
  const broken = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let node;
  while ((node = walker.nextNode())) {
    const text = node.textContent;
    let top = null;
    for (let i = 0; i < text.length; i++) {
      if (/[\\s-]/.test(text[i])) { top = null; continue; }
      range.setStart(node, i); range.setEnd(node, i + 1);
      const rects = range.getClientRects();
      if (!rects.length) continue;
      const here = Math.round(rects[0].top);
      if (top !== null && Math.abs(here - top) > 2) { broken.push(text.trim()); break; }
      top = here;
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS)
def test_the_audit_log_reads_in_words_links_the_original_and_breaks_no_word(page: Page, server, merchant,
                                                                            sandbox, width):
    tag = uuid.uuid4().hex[:6]
    _, captured, _ = _customer(sandbox, tag)
    deps = server.app.extensions["paydesk"]
    admin = Caller(merchant.merchant_id, Mode.SANDBOX, f"operations-admin-{tag}@a-shop-with-a-long-name.example",
                   "2001:db8:85a3::8a2e:370:7334")
    with deps.uow() as uow:
        uow.audit(admin, "user.two_factor_enable", target=f"finance-lead-{tag}@a-shop-with-a-long-name.example",
                  both_modes=True)
        uow.commit()
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    open_in_mode(page, server.url, "/audit", "sandbox")
    page.wait_for_load_state("load")
    table = page.locator("table.audit")
    expect(table).to_contain_text("Two-factor sign-in turned on")
    expect(table).not_to_contain_text("user.two_factor_enable")
    expect(table.locator("td", has_text="reason:")).to_have_count(0)
    assert page.evaluate(WORDS_BROKEN, table.element_handle()) == []
    # What the check finds: an e-mail in a cell that may break anywhere (the log's old rule).
    page.evaluate("""() => { const cell = document.createElement('p'); cell.id = 'old-rule';
        cell.style.cssText = 'width: 6rem; overflow-wrap: anywhere';
        cell.textContent = 'finance-lead@a-shop-with-a-long-name.example'; document.body.append(cell); }""")
    assert page.evaluate(WORDS_BROKEN, page.locator("#old-rule").element_handle()) != []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    # The filter is kept when a user's entries are opened from the Who column.
    page.get_by_label("Action", exact=True).select_option(label="Refund issued")
    page.get_by_role("button", name="Apply").click()
    row = table.locator("tbody tr").first
    expect(row).to_contain_text("Refund issued")
    row.get_by_role("link", name=captured).click()  # the refund's original, in its details
    expect(page).to_have_title(f"Payment {captured} · Paydesk")
