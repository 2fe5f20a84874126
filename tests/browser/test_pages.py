"""Every page at a desktop width and on a phone: a proper title, no sideways scrolling, a label
for every input, no card or section touching the one under it, one height for one-line fields and buttons. Set DASHBOARD_SCREENSHOTS=<dir> to keep a screenshot of each for review."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.dashboard.wrapping import WHOLE_REFERENCE
from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user
from tests.support.request_log import logged

from .accessibility import parts_scrolling_sideways
from .conftest import sign_in, to_sandbox

WIDTHS = {"desktop": 1280, "phone": 390}
# Every page is looked at in these too: a laptop's half screen and a tablet, where tables scrolled
# sideways inside their cards (settings' users by 289 px at 700) between the two layouts above.
EVERY_PAGE_WIDTHS = {**WIDTHS, "half screen": 1100, "tablet": 900, "small tablet": 700}
UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea')]
    .filter(el => el.type !== 'hidden')
    .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                  && !el.getAttribute('aria-labelledby'))
    .map(el => el.outerHTML.slice(0, 120))"""
# Blocks one under another with less than 8 px between them (side by side ones are not compared).
TOUCHING = """() => [...document.querySelectorAll('main section, main .card, main .empty-state, main .table-wrap')]
    .flatMap(el => {
      const next = el.nextElementSibling;
      if (!next || !next.matches('section, .card, .empty-state, .table-wrap, h2')) return [];
      const a = el.getBoundingClientRect(), b = next.getBoundingClientRect();
      if (!a.height || !b.height || b.left >= a.right || a.left >= b.right) return [];
      const name = e => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}.${[...e.classList].join('.')}`;
      return b.top - a.bottom < 8 ? [`${name(el)} -> ${name(next)}: ${b.top - a.bottom}px`] : [];
    })"""

# One-line fields (text inputs and drop-downs) of unlike heights: a filter row's Status drop-down
# sat 2 px short of the Search box beside it. Each height with a field that has it.
FIELD_HEIGHTS = """() => Object.fromEntries([...document.querySelectorAll(
      'main input:not([type=hidden]):not([type=checkbox]):not([type=radio]):not([type=file]), main select:not([size]),'
      + ' main .button:not(.small)')]
    .filter(el => el.offsetParent && !el.closest('.row-form, .input-suffix'))
    .map(el => [el.getBoundingClientRect().height.toFixed(1), `${el.tagName.toLowerCase()}#${el.id}`]))"""


@pytest.fixture
def pages(server, merchant, sandbox, live):
    """Paths worth a look, with data on them: a refunded payment, a payout, a declined payment, the
    refund's logged request (its answer a long line of JSON)."""
    payment = sandbox.post("/transactions", {
        "amount": 1234.5, "currency": "EUR", "reference": "ORDER-LAYOUT-CHECK-WITH-A-LONG-REFERENCE",
        "statementDescriptor": "SHOP", "callbackUrl": merchant.inbox_url,
        "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                    "customerReference": "c-1"},
        "payment": {"paymentMethod": "card"}}).json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{payment}/outcome", {"status": "Captured"})
    sandbox.post("/transactions/refund", {"txNo": payment, "amount": 34.5, "reason": "Damaged item"})
    refund_request = logged(server.app, merchant, path="/api/v1/transactions/refund")[0].id
    endpoint = sandbox.post("/webhook-endpoints", {"url": "https://merchant.example/orders",
                                                   "enabledEvents": ["payment.captured"]}).json()["id"]
    return [SANDBOX + path for path in (
        "/transactions", "/transactions?q=nothing-matches-this", f"/transactions/{payment}",
        "/transactions/SBX-DECLINED", "/payouts/new", "/webhooks", "/webhooks/inbox", "/audit",
        "/settings", "/reconciliation", "/approvals", "/batches", "/disputes", "/transactions/UNKNOWN-TX", "/customer?reference=c-1", "/overview", "/overview?days=90", "/developers",
        f"/developers/requests/{refund_request}", f"/settings/webhook-endpoints/{endpoint}")]


@pytest.mark.parametrize("screen", EVERY_PAGE_WIDTHS)
def test_every_page_fits_the_screen_and_labels_its_inputs(page: Page, server, merchant, pages, screen):
    page.set_viewport_size({"width": EVERY_PAGE_WIDTHS[screen], "height": 900})
    page.goto(f"{server.url}/login")
    _check(page, "login", screen)
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    to_sandbox(page)
    for path in pages:
        page.goto(server.url + path)
        _check(page, path, screen)


def _check(page: Page, path: str, screen: str) -> None:
    folder = os.environ.get("DASHBOARD_SCREENSHOTS")
    if folder:
        name = path.strip("/").replace("/", "_").replace("?", "_") or "login"
        page.screenshot(path=str(Path(folder) / f"{name}-{screen}.png"), full_page=True)
    expect(page).to_have_title(re.compile(r".+ · Paydesk$"))
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{path} scrolls sideways by {overflow}px on {screen}"
    assert parts_scrolling_sideways(page) == [], f"{path} has parts scrolling sideways on {screen}"
    assert page.evaluate(UNLABELLED) == [], f"{path} has inputs without labels"
    assert page.evaluate(TOUCHING) == [], f"{path} has blocks touching on {screen}"
    heights = page.evaluate(FIELD_HEIGHTS)
    assert len(heights) <= 1, f"{path} has one-line fields and buttons of {len(heights)} heights on {screen}: {heights}"


def test_the_new_tokens_fields_line_up_and_its_button_sits_under_them(page: Page, server, merchant):
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.goto(f"{server.url}/settings")
    tokens = page.locator("#tokens")
    tops = {round(tokens.get_by_text(label, exact=True).bounding_box()["y"])
            for label in ("Expires on", "Allowed networks", "Daily limits")}
    assert len(tops) == 1, tops
    button = tokens.get_by_role("button", name="Create live token").bounding_box()
    hints = [tokens.locator(f"#{name}-hint").bounding_box() for name in ("expires_on", "networks", "limits")]
    assert button["y"] >= max(hint["y"] + hint["height"] for hint in hints)


# A form's button and the fields in its row: level with the fields' boxes, or on a row of its own.
BUTTON_BESIDE_FIELDS = """selector => {
  const form = document.querySelector(selector), button = form.querySelector('button[type=submit]');
  const b = button.getBoundingClientRect();
  const beside = [...form.querySelectorAll('input:not([type=hidden]), select')].map(f => f.getBoundingClientRect())
    .filter(f => f.top < b.bottom && b.top < f.bottom);
  return beside.map(f => Math.round(f.top - b.top));
}"""


@pytest.mark.parametrize("screen", WIDTHS)
@pytest.mark.parametrize("path, form", [("/developers", "main form.filters"), ("/transactions", "main form.filters"),
                                        ("/settings", "#time-zone form"), ("/webhooks", "main form.filters")])
def test_a_forms_button_is_level_with_the_fields_beside_it(page: Page, server, merchant, screen, path, form):
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.goto(server.url + path)
    offsets = page.evaluate(BUTTON_BESIDE_FIELDS, form)
    assert set(offsets) <= {0}, f"{path} on {screen}: fields beside the button start {offsets} px from its top"


def test_a_notification_s_sandbox_box_is_level_with_its_drop_down(page: Page, server, merchant):
    page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}/account")
    for kind in ("approval_waiting", "dispute_due"):
        drop_down = page.locator(f"#delivery-{kind}").bounding_box()
        box = page.locator(f"#sandbox-{kind}").bounding_box()
        middle = drop_down["y"] + drop_down["height"] / 2
        assert abs(box["y"] + box["height"] / 2 - middle) <= 1, (kind, drop_down, box)


# Each short reference's lines on the transactions page: "ORDER-1005" broken at its hyphen reads
# as two references (it was, at 1,280 px: the created time held its column to one line).
BROKEN_REFERENCES = """longest => [...document.querySelectorAll('td.ref')].flatMap(cell => {
  const text = cell.firstChild, range = document.createRange();
  if (text.textContent.length > longest) return [];
  range.selectNodeContents(text);
  const lines = new Set([...range.getClientRects()].map(rect => Math.round(rect.top)));
  return lines.size > 1 ? [`${text.textContent} on ${lines.size} lines`] : [];
})"""


@pytest.mark.parametrize("width", [390, 700, 900, 1025, 1100, 1280, 1440])
def test_the_transactions_list_shows_every_row_whole_at_every_width(page: Page, server, merchant, sandbox, width):
    """A laptop's half screen or a tablet (641 to 1,200 px) scrolled the list sideways, its
    created times and decline reasons out of sight; a short reference broke at its hyphen."""
    declined = None
    for number in range(1001, 1004):
        made = sandbox.post("/transactions", payment_body(amount=75.5, reference=f"ORDER-{number}")).json()
        sandbox.post(f"/sandbox/transactions/{made['transactionId']}/outcome",
                     {"status": "Declined", "declineReason": "Insufficient Funds"} if number == 1002
                     else {"status": "Captured"})
        if number == 1002:
            declined = made["transactionId"]
        if number == 1003:
            refund = sandbox.post("/transactions/refund", {"txNo": made["transactionId"], "amount": 20})
            assert refund.status_code == 200, refund.text
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.goto(f"{server.url}{SANDBOX}/transactions")
    row = page.locator("tbody tr", has_text="ORDER-1002")
    expect(row.get_by_role("link", name=declined).filter(visible=True)).to_have_count(1)
    expect(row.get_by_text("Insufficient Funds").filter(visible=True)).to_have_count(1)
    assert page.evaluate(BROKEN_REFERENCES, WHOLE_REFERENCE) == []
    assert parts_scrolling_sideways(page) == []
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
