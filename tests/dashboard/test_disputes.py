"""The Disputes pages: the queue by deadline in words, who may see them, the dispute page with
its payment's story, the evidence form and the confirmed acceptance. Both databases."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from babel.dates import format_date

from app.dashboard.formatting import Display, code_words, deadline_words
from app.store.tables import audit_log, disputes
from app.util import utcnow

from .conftest import switch_to_sandbox

NOW = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize("text, words", [
    ("needs_response", "Needs response"), ("under_review", "Under review"), ("won", "Won"),
    ("product_not_received", "Product not received"),
    ("Captured", "Captured"),  # a transaction's status is already a word
    ("Customer says the goods never came", "Customer says the goods never came"),  # a sentence, as sent
    (None, ""),
])
def test_a_machine_word_is_shown_in_words(text, words):
    assert code_words(text) == words


@pytest.mark.parametrize("due, words", [
    (NOW + timedelta(days=3), "due in 3 days, 30 Nov 2026"),
    (NOW + timedelta(hours=2), "due today, 27 Nov 2026"),
    (NOW + timedelta(days=1), "due tomorrow, 28 Nov 2026"),
    (NOW - timedelta(days=1), "overdue by 1 day, 26 Nov 2026"),
    (NOW - timedelta(days=2), "overdue by 2 days, 25 Nov 2026"),
    (None, "no deadline given"),
])
def test_a_deadline_in_words(due, words):
    assert deadline_words(due, NOW) == words


def test_a_deadline_counts_the_readers_calendar_days_in_their_locale():
    # 23:00 UTC on 28 Nov is already the 29th in Berlin: two days away there, tomorrow in UTC.
    due = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
    assert deadline_words(due, NOW, Display("de-DE", "Europe/Berlin")) == "due in 2 days, 29.11.2026"
    assert deadline_words(due, NOW, Display("en-US", "UTC")) == "due tomorrow, Nov 28, 2026"


def _dispute(sandbox, captured_payment, app, due_in_days: int | None = None) -> tuple[str, str]:
    tx_no = captured_payment(100)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
    [found] = [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]
    if due_in_days is not None:
        with app.extensions["paydesk"].uow() as uow:
            uow.conn.execute(update(disputes).where(disputes.c.dispute_no == found["disputeId"])
                             .values(due_by=utcnow() + timedelta(days=due_in_days)))
            uow.commit()
    return tx_no, found["disputeId"]


@pytest.fixture
def finance_in_sandbox(finance):
    switch_to_sandbox(finance)
    return finance


def test_the_queue_lists_open_disputes_by_deadline_in_words(finance_in_sandbox, sandbox, captured_payment, app):
    _, later_one = _dispute(sandbox, captured_payment, app, due_in_days=5)
    _, sooner = _dispute(sandbox, captured_payment, app, due_in_days=2)
    _, won = _dispute(sandbox, captured_payment, app)
    assert sandbox.post(f"/sandbox/disputes/{won}/outcome", {"outcome": "won"}).status_code == 200
    with app.extensions["paydesk"].uow() as uow:  # evidence owed to the provider, not sent yet
        uow.conn.execute(update(disputes).where(disputes.c.dispute_no == sooner).values(action="submit_evidence"))
        uow.commit()
    page = finance_in_sandbox.get("/disputes")
    assert page.status_code == 200
    text = page.text
    open_part = text.split('id="closed-title"')[0]
    assert open_part.index(sooner) < open_part.index(later_one)
    assert won not in open_part and won in text
    due = utcnow() + timedelta(days=2)
    # The day as en-GB writes it (CLDR: "5 Sept", not strftime's "5 Sep").
    assert f"due in 2 days, {format_date(due, 'd MMM', locale='en_GB')}" in text
    # the menu counts the one still to answer (not the one whose evidence is on its way, nor the won)
    assert ('<a href="/test/disputes" aria-current="page" title="1 needing a response: 1 in sandbox">Disputes '
            '<span class="nav-count">1</span>') in text
    # The API's words in people's words: needs_response, the provider's fraudulent.
    assert '<span class="badge badge-needs_response">Needs response</span>' in open_part
    assert '<td data-label="Reason">Fraudulent</td>' in open_part
    assert '<span class="badge badge-won">Won</span>' in text
    assert "needs_response<" not in text and ">fraudulent<" not in text
    assert '<span class="muted small">sending to Simulator</span>' in open_part  # named as its page names it
    owed = finance_in_sandbox.get(f"/disputes/{sooner}").text
    assert "<dt>Being sent</dt><dd>Evidence, to Simulator</dd>" in owed
    assert "This dispute cannot be answered any more (needs response, its evidence being sent)." in owed


def test_support_and_payouts_roles_do_not_see_disputes(dashboard, merchant):
    for role in ("support", "payouts"):
        client = dashboard(merchant.merchant_id, role)
        assert client.get("/disputes").status_code == 403
        assert ">Disputes</a>" not in client.get("/transactions").text


def test_the_dispute_page_tells_the_payments_story_and_offers_the_draft(
        finance_in_sandbox, sandbox, captured_payment, app):
    tx_no, dispute_no = _dispute(sandbox, captured_payment, app, due_in_days=3)
    page = finance_in_sandbox.get(f"/disputes/{dispute_no}")
    assert page.status_code == 200
    text = page.text
    assert "due in 3 days" in text
    assert f'href="/test/transactions/{tx_no}"' in text
    assert ">Timeline</h2>" in text and "Webhook deliveries" in text and "Refunds" in text
    assert f"Dispute {dispute_no} of 100.00 EUR opened: Fraudulent" in text  # the payment's timeline has it
    # Paydesk's draft: the customer's details on one line each, typed as what they are (the
    # browser offers the user's own details for none of them), the story in a text area.
    assert ('<input aria-describedby="customerName-hint" autocomplete="off" id="customerName" maxlength="5000" '
            'name="customerName" spellcheck="false" type="text" value="Ada Lovelace">') in text
    for name, kind in (("customerEmail", "email"), ("customerPhone", "tel"), ("serviceDate", "text")):
        assert re.search(rf'<input [^>]*autocomplete="off" id="{name}"[^>]* type="{kind}"', text), name
    assert re.search(r'<textarea [^>]*id="productDescription"[^>]* rows="3"', text)
    assert re.search(r'<textarea [^>]*id="uncategorizedText"[^>]* rows="8">\s*Payment ', text)
    assert f"Payment {tx_no} (reference" in text
    assert "Submit evidence" in text and "Accept dispute" in text


def test_evidence_is_saved_then_submitted(finance_in_sandbox, sandbox, captured_payment, app):
    _, dispute_no = _dispute(sandbox, captured_payment, app)
    saved = finance_in_sandbox.post(f"/disputes/{dispute_no}/evidence", {
        "customerName": "Ada Lovelace", "productDescription": "A teapot", "step": "save"})
    assert saved.status_code == 303
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert shown["evidence"] == {"customerName": "Ada Lovelace", "productDescription": "A teapot"}
    assert shown["status"] == "needs_response"
    assert "Evidence draft saved." in finance_in_sandbox.get(saved.headers["Location"]).text

    submitted = finance_in_sandbox.post(f"/disputes/{dispute_no}/evidence", {
        "customerName": "Ada Lovelace", "productDescription": "A teapot", "step": "submit"})
    assert submitted.status_code == 303
    page = finance_in_sandbox.get(submitted.headers["Location"]).text
    assert "Evidence submitted: the dispute is under review." in page
    assert "Submit evidence" not in page  # nothing more to answer
    assert sandbox.get(f"/disputes/{dispute_no}").json()["evidenceSubmittedBy"].startswith("finance-")


def test_a_service_date_that_is_no_date_is_shown_on_its_field(finance_in_sandbox, sandbox, captured_payment, app):
    _, dispute_no = _dispute(sandbox, captured_payment, app)
    refused = finance_in_sandbox.post(f"/disputes/{dispute_no}/evidence", {"serviceDate": "soon", "step": "save"})
    assert refused.status_code == 422
    assert "Service date must be a date, YYYY-MM-DD" in refused.text


def test_accepting_needs_its_confirmation(finance_in_sandbox, sandbox, captured_payment, app):
    tx_no, dispute_no = _dispute(sandbox, captured_payment, app)
    unconfirmed = finance_in_sandbox.post(f"/disputes/{dispute_no}/accept", {})
    assert unconfirmed.status_code == 422
    assert "Tick the box to accept the dispute." in unconfirmed.text
    assert sandbox.get(f"/disputes/{dispute_no}").json()["status"] == "needs_response"

    accepted = finance_in_sandbox.post(f"/disputes/{dispute_no}/accept", {"confirm": "y"})
    assert accepted.status_code == 303
    assert "Dispute accepted." in finance_in_sandbox.get(accepted.headers["Location"]).text
    assert sandbox.get(f"/disputes/{dispute_no}").json()["status"] == "accepted"
    with app.extensions["paydesk"].uow(write=False) as uow:
        actor = uow.conn.execute(select(audit_log.c.actor).where(
            audit_log.c.target == dispute_no, audit_log.c.action == "dispute.accept")).scalar_one()
    assert actor.startswith("finance-")
    again = finance_in_sandbox.post(f"/disputes/{dispute_no}/accept", {"confirm": "y"})
    assert f"Cannot accept dispute {dispute_no}: its status is accepted" in finance_in_sandbox.get(
        again.headers["Location"]).text


PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def test_a_file_is_added_through_the_dispute_page(finance_in_sandbox, sandbox, captured_payment, app):
    _, dispute_no = _dispute(sandbox, captured_payment, app)
    page = finance_in_sandbox.get(f"/disputes/{dispute_no}").text
    assert 'enctype="multipart/form-data"' in page and 'type="file"' in page and "No files." in page
    added = finance_in_sandbox.post(f"/disputes/{dispute_no}/files", {"kind": "receipt"},
                                    files={"file": ("receipt.pdf", PDF, "application/pdf")})
    assert added.status_code == 303, added.text
    page = finance_in_sandbox.get(added.headers["Location"]).text
    assert "File receipt.pdf kept; it goes to simulator with the evidence." in page
    assert "Receipt: receipt.pdf" in page and "not sent yet" in page
    [shown] = sandbox.get(f"/disputes/{dispute_no}").json()["files"]
    assert (shown["kind"], shown["size"], shown["createdBy"][:8]) == ("receipt", len(PDF), "finance-")

    refused = finance_in_sandbox.post(f"/disputes/{dispute_no}/files", {"kind": "receipt"},
                                      files={"file": ("notes.pdf", b"plain text", "application/pdf")})
    assert refused.status_code == 422
    assert "File must be a PDF, PNG or JPEG" in refused.text
    no_token = finance_in_sandbox.post(f"/disputes/{dispute_no}/files", {"kind": "receipt"}, csrf=False,
                                       files={"file": ("receipt.pdf", PDF, "application/pdf")})
    assert no_token.status_code in (400, 403)
    assert len(sandbox.get(f"/disputes/{dispute_no}").json()["files"]) == 1
    # Over the dashboard's usual 1 MB body limit, under the file's 4 MB.
    large = finance_in_sandbox.post(f"/disputes/{dispute_no}/files", {"kind": "uncategorized_file"},
                                    files={"file": ("scan.pdf", PDF + b"0" * (2 * 1024 * 1024), "application/pdf")})
    assert large.status_code == 303
    assert len(sandbox.get(f"/disputes/{dispute_no}").json()["files"]) == 2


def test_a_disputed_payment_s_page_names_its_dispute_at_the_top(
        finance_in_sandbox, dashboard, merchant, sandbox, captured_payment, app):
    tx_no, dispute_no = _dispute(sandbox, captured_payment, app, due_in_days=3)

    text = finance_in_sandbox.get(f"/transactions/{tx_no}").text

    notice = re.search(r'<p class="alert alert-warning" id="disputes-notice">(.*?)</p>', text, re.S).group(1)
    assert f'<a class="mono" href="/test/disputes/{dispute_no}">{dispute_no}</a>' in notice
    assert "Needs response" in notice and "due in 3 days" in notice and ">100.00</span>" in notice
    assert text.index('id="disputes-notice"') < text.index('class="detail-grid"')  # above the details
    # support reads it too, without a link to a page it may not open
    support = dashboard(merchant.merchant_id, "support")
    switch_to_sandbox(support)
    seen = re.search(r'id="disputes-notice">(.*?)</p>', support.get(f"/transactions/{tx_no}").text, re.S).group(1)
    assert dispute_no in seen and "/disputes/" not in seen
    # a payment never disputed has no notice
    assert 'id="disputes-notice"' not in finance_in_sandbox.get(f"/transactions/{captured_payment(5)}").text
