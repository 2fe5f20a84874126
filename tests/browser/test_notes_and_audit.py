"""Support staff note a call on a payment and find it in the audit log; the audit log's filters
are a shareable URL, and its export downloads the filtered entries."""
from __future__ import annotations

import csv
import io
import uuid
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user

from .conftest import htmx_settled, sign_in, to_sandbox


def _payment(sandbox) -> str:
    created = sandbox.post("/transactions", payment_body(reference=f"NOTE-{uuid.uuid4().hex[:8]}"))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def test_support_adds_notes_newest_first_and_finds_them_in_the_audit_log(page: Page, server, merchant,
                                                                         sandbox):
    tx_no = _payment(sandbox)
    email = add_user(server.app, merchant.merchant_id, "support")
    sign_in(page, server.url, email)
    to_sandbox(page)
    page.get_by_label("Search", exact=True).fill(tx_no)
    page.locator("#results").get_by_role("link", name=tx_no).filter(visible=True).first.click()
    notes = page.locator("#notes")
    page.wait_for_load_state("load")  # htmx binds the note form, or Add note posts a whole page
    page.evaluate("window.notReloaded = true")

    notes.get_by_role("button", name="Add note").click()  # nothing written: refused, focus on the box
    expect(notes.locator("#note-error")).to_have_text("Write the note first")
    expect(notes.get_by_label("Add a note")).to_be_focused()

    notes.get_by_label("Add a note").fill("  Customer called: parcel is late  ")
    notes.get_by_role("button", name="Add note").click()
    expect(page.locator("#notes-status")).to_have_text("Note added.")
    first = notes.locator(".note").first
    expect(first).to_be_focused()
    expect(first.locator(".note-body")).to_have_text("Customer called: parcel is late")
    expect(first.locator(".note-meta")).to_contain_text(email)
    expect(notes.get_by_label("Add a note")).to_have_value("")
    htmx_settled(page)

    notes.get_by_label("Add a note").fill("Sent the tracking link")
    notes.get_by_role("button", name="Add note").click()
    expect(notes.locator(".note-body")).to_have_text(["Sent the tracking link",
                                                      "Customer called: parcel is late"])
    expect(notes.locator(".note").first).to_be_focused()
    assert page.evaluate("window.notReloaded") is True  # swapped in place

    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("Action", exact=True).select_option("note.add")
    page.get_by_label("TxNo").fill(tx_no)
    page.wait_for_load_state("load")  # dashboard.js drops the empty filters, or Apply sends them all
    page.get_by_role("button", name="Apply").click()
    rows = page.locator("table.data tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("Sent the tracking link")
    expect(rows.first).to_contain_text(email)
    expect(page).to_have_url(f"{server.url}{SANDBOX}/audit?action=note.add&tx_no={tx_no}")  # only what is set


def test_an_audit_filter_link_opens_the_same_entries_and_exports_them(page: Page, server, merchant,
                                                                      sandbox, browser):
    tx_no = _payment(sandbox)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10}).json()["refundTxNo"]
    other = _payment(sandbox)
    assert sandbox.post(f"/sandbox/transactions/{other}/outcome", {"status": "Captured"}).status_code == 200
    sandbox.post("/transactions/refund", {"txNo": other, "amount": 5})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("User").fill("api:")
    page.get_by_label("TxNo").fill(tx_no.lower())
    page.wait_for_load_state("load")  # dashboard.js drops the empty filters, or Apply sends them all
    page.get_by_role("button", name="Apply").click()
    rows = page.locator("table.data tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text(refund)
    expect(page.get_by_label("User")).to_have_value("api:")
    shared = page.url
    assert shared == f"{server.url}{SANDBOX}/audit?user=api%3A&tx_no={tx_no.lower()}"

    colleague = browser.new_page()  # a colleague of the same merchant opens the shared link
    sign_in(colleague, server.url, add_user(server.app, merchant.merchant_id, "support"))
    to_sandbox(colleague)
    colleague.goto(shared)
    expect(colleague.locator("table.data tbody tr")).to_have_count(1)
    expect(colleague.locator("table.data tbody tr")).to_contain_text(refund)
    with colleague.expect_download() as download:
        colleague.get_by_role("link", name="Export CSV").click()
    rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert rows[0] == ["When (UTC)", "Who", "Action", "Target", "Amount", "Currency", "From (IP)", "Details"]
    assert [(r[2], r[3], r[4], r[5]) for r in rows[1:]] == [("refund.create", refund, "10.00", "EUR")]
    assert download.value.suggested_filename.startswith("paydesk-sandbox-audit-")
    colleague.close()
