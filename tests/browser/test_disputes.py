"""The dispute page in Chromium: its side column's tables fit the column; its evidence form's
one-line fields look like the others."""
from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user

from .conftest import sign_in


def _disputed_with_a_refund(sandbox) -> tuple[str, str]:
    """A payment partly refunded, then charged back: its refund's and its dispute's numbers."""
    tx_no = sandbox.post("/transactions", payment_body(amount=120)).json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    refund_no = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 20}).json()["refundTxNo"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"})
    [dispute_no] = [d["disputeId"] for d in sandbox.get("/disputes?limit=200").json()["disputes"]
                    if d["txNo"] == tx_no]
    return refund_no, dispute_no


def test_the_dispute_pages_refunds_fit_its_side_column(page: Page, server, merchant, sandbox):
    """The payment's refunds sit in the page's 380 px side column: as a table of five columns their
    status and date were cut off at its edge. Narrow, the table shows each refund as a card."""
    refund_no, dispute_no = _disputed_with_a_refund(sandbox)
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}{SANDBOX}/disputes/{dispute_no}")
    expect(page).to_have_title(f"Dispute {dispute_no} · Paydesk")
    page.wait_for_load_state("load")
    expect(page.get_by_text(re.compile(r"submit it to Simulator\."))).to_be_visible()  # its name, not its code
    refunds = page.locator("#refunds")
    expect(refunds.get_by_role("link", name=refund_no)).to_be_visible()
    column = refunds.bounding_box()
    for cell in (refunds.locator("td[data-label=Status] .badge"), refunds.locator("td[data-label=Issued] time")):
        box = cell.bounding_box()
        assert box["x"] + box["width"] <= column["x"] + column["width"], (cell, box, column)


def test_the_evidence_forms_one_line_fields_are_styled_like_its_others(page: Page, server, merchant, sandbox):
    """The customer's phone is a tel input, which the stylesheet once left unstyled (a 20 px box)."""
    _, dispute_no = _disputed_with_a_refund(sandbox)
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}{SANDBOX}/disputes/{dispute_no}")
    page.wait_for_load_state("load")
    name = page.get_by_label("Customer name").bounding_box()
    for label in ("Customer email", "Customer phone", "Service date"):
        box = page.get_by_label(label).bounding_box()
        assert (box["height"], box["width"]) == (name["height"], name["width"]), label
    # The evidence file's button is one of the page's buttons, not the browser's grey box.
    button = page.get_by_label("File", exact=True).evaluate(
        "e => { const s = getComputedStyle(e, '::file-selector-button'); return [s.borderRadius, s.fontWeight]; }")
    assert button == ["8px", "600"]
