"""Notes on a transaction: who and when, trimmed, within a length, never empty; newest first on its
page, each one also in the audit log; only on the caller's own merchant's and mode's transactions."""
from __future__ import annotations

import json
import uuid

import pytest
from flask import url_for
from sqlalchemy import select

from app.payments.notes import MAX_NOTE_LENGTH, NoteRefused, note_text
from app.store.tables import audit_log, transaction_notes
from tests.conftest import payment_body

from .conftest import SANDBOX, switch_to_sandbox

HTMX = {"HX-Request": "true"}


def _path(app, endpoint: str, **values) -> str:
    with app.test_request_context():
        return url_for(endpoint, **values)


@pytest.fixture
def payment(sandbox) -> str:
    created = sandbox.post("/transactions", payment_body(reference=f"notes-{uuid.uuid4().hex[:8]}"))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


@pytest.fixture
def support(dashboard, merchant):
    client = dashboard(merchant.merchant_id, "support")
    switch_to_sandbox(client)
    return client


def _add(app, client, tx_no: str, body: str, htmx: bool = True):
    return client.post(_path(app, "dashboard.add_transaction_note", tx_no=tx_no), {"body": body},
                       headers=HTMX if htmx else None)


@pytest.mark.parametrize("text, stored", [("  Customer called about delivery \n", "Customer called about delivery"),
                                          ("two\nlines", "two\nlines"), ("x" * MAX_NOTE_LENGTH, "x" * MAX_NOTE_LENGTH)])
def test_a_note_is_stored_trimmed(text, stored):
    assert note_text(text) == stored


@pytest.mark.parametrize("text, message", [
    ("", "Write the note first"), ("   \n\t ", "Write the note first"), (None, "Write the note first"),
    ("x" * (MAX_NOTE_LENGTH + 1), "A note is at most 1,000 characters (this one has 1,001)"),
    ("bell\x07", "A note must not contain control characters"),
])
def test_empty_too_long_or_unstorable_notes_are_refused(text, message):
    with pytest.raises(NoteRefused) as refused:
        note_text(text)
    assert str(refused.value) == message


def test_support_adds_notes_shown_newest_first_with_who_and_when(app, support, payment, merchant):
    first = _add(app, support, payment, "  Customer called: parcel late  ")
    assert first.status_code == 200
    assert "HX-Request" in first.headers["Vary"]
    second = _add(app, support, payment, "Sent tracking link")
    html, timeline = second.text.split('<section class="card" id="history"')  # notes, status; timeline
    assert html.lstrip().startswith('<section class="card notes" id="notes"')
    # The timeline comes along out of band, the new note on top.
    assert timeline.startswith(' aria-labelledby="history-title" hx-swap-oob="true">')
    assert '<span class="tag">Note</span>' in timeline
    assert timeline.index("Sent tracking link") < timeline.index("Customer called: parcel late")
    assert html.index("Sent tracking link") < html.index("Customer called: parcel late")
    assert '<p class="note-body">Customer called: parcel late</p>' in html  # trimmed
    assert html.count('class="note-author">support-') == 2
    assert html.count(" UTC</time>") == 2
    assert '<li class="note" tabindex="-1" data-focus-after-swap>' in html  # focus goes to the new note
    assert html.count("data-focus-after-swap") == 1
    assert '<p id="notes-status" class="visually-hidden" role="status" hx-swap-oob="true">Note added.</p>' in html
    page = support.get(_path(app, "dashboard.transaction", tx_no=payment)).text
    assert page.index("Sent tracking link") < page.index("Customer called: parcel late")
    assert "data-focus-after-swap" not in page.split('id="notes"')[1].split("</section>")[0]


def test_each_note_writes_an_audit_row_shown_in_the_audit_log(app, support, payment, merchant):
    assert _add(app, support, payment, "Refund promised by phone").status_code == 200
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                       audit_log.c.action == "note.add")).one()
    assert (row.target, row.mode, json.loads(row.detail)) == (
        payment, "sandbox", {"note": "Refund promised by phone"})
    assert row.actor.startswith("support-") and row.actor.endswith("@shop.test")
    audit_page = support.get(_path(app, "dashboard.audit", action="note.add")).text
    assert f'>{payment}</a>' in audit_page
    assert '<span class="audit-action" data-action="note.add">Note added</span>' in audit_page
    assert "Refund promised by phone" in audit_page


def test_a_refused_note_says_why_keeps_the_text_and_stores_nothing(app, support, payment, merchant):
    empty = _add(app, support, payment, "   ")
    assert empty.status_code == 422
    assert '<ul class="field-errors" id="note-error"><li>Write the note first</li></ul>' in empty.text
    assert 'aria-invalid="true" data-focus-after-swap' in empty.text
    too_long = _add(app, support, payment, "y" * 1001)
    assert too_long.status_code == 422
    assert "A note is at most 1,000 characters (this one has 1,001)" in too_long.text
    assert ">" + "y" * 1001 + "</textarea>" in too_long.text
    with app.extensions["paydesk"].uow(write=False) as uow:
        assert uow.conn.execute(select(transaction_notes).where(
            transaction_notes.c.merchant_id == merchant.merchant_id)).all() == []
        assert uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                        audit_log.c.action == "note.add")).all() == []


def test_without_javascript_the_form_adds_the_note_and_returns_to_the_page(app, support, payment):
    response = _add(app, support, payment, "Plain form note", htmx=False)
    assert response.status_code == 303
    assert response.headers["Location"] == SANDBOX + _path(app, "dashboard.transaction", tx_no=payment) + "#notes"
    page = support.get(response.headers["Location"]).text
    assert "Note added." in page and "Plain form note" in page
    refused = _add(app, support, payment, "", htmx=False)
    assert refused.status_code == 422
    assert refused.text.startswith("<!doctype html>") and "Write the note first" in refused.text


@pytest.mark.parametrize("role", ["support", "finance", "payouts", "admin"])
def test_every_role_may_add_notes_and_sees_the_form(app, dashboard, merchant, payment, role):
    client = dashboard(merchant.merchant_id, role)
    switch_to_sandbox(client)
    assert '<label for="note-body">Add a note</label>' in client.get(
        _path(app, "dashboard.transaction", tx_no=payment)).text
    assert _add(app, client, payment, f"{role} was here").status_code == 200


def test_a_note_is_only_added_in_the_transactions_own_mode(app, dashboard, merchant, payment):
    live = dashboard(merchant.merchant_id, "support")  # signs in to live
    response = _add(app, live, payment, "wrong mode")
    assert response.status_code == 404
    assert _add(app, live, "PAY-DOES-NOT-EXIST", "nowhere").status_code == 404
    assert _add(app, live, "not a number!", "nowhere").status_code == 404


def test_a_sandbox_reset_removes_its_fixtures_notes_too(app, dashboard, merchant):
    admin = dashboard(merchant.merchant_id, "admin")
    switch_to_sandbox(admin)
    assert _add(app, admin, "SBX-CAPTURED", "note on a fixture").status_code == 200
    assert admin.post(_path(app, "dashboard.reset_sandbox")).status_code == 303
    page = admin.get(_path(app, "dashboard.transaction", tx_no="SBX-CAPTURED")).text
    assert "note on a fixture" not in page and "No notes yet." in page
