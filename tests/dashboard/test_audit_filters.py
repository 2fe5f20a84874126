"""The audit log's filters (user, action, days, TxNo) in a shareable URL, and its CSV export."""
from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime

import pytest
from flask import url_for
from sqlalchemy import insert

from app.dashboard import audit as audit_view
from app.store.tables import audit_log

DAY_1 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
DAY_2 = datetime(2026, 3, 2, 23, 59, 59, tzinfo=UTC)
DAY_3 = datetime(2026, 3, 3, 0, 0, 0, tzinfo=UTC)


def _path(app, endpoint: str, **values) -> str:
    with app.test_request_context():
        return url_for(endpoint, **values)


@pytest.fixture
def entries(app, merchant) -> dict[str, str]:
    """Audit entries of the merchant, by a name for each: who, what, when and about which TxNo."""
    rows = {
        "ada_refund": dict(actor="ada@shop.test", action="refund.create", target="RFD-AAA",
                           amount_minor=1050, currency="EUR", at=DAY_1,
                           detail=json.dumps({"originalTxNo": "PAY-111", "reason": "Damaged"})),
        "ada_note": dict(actor="ada@shop.test", action="note.add", target="PAY-111", at=DAY_2,
                         detail=json.dumps({"note": "Customer called, twice"})),
        "bob_payout": dict(actor="Bob@Shop.test", action="payout.create", target="POU-222",
                           amount_minor=99900, currency="NGN", at=DAY_2),
        "api_refund": dict(actor="api:pd_live_abc", action="refund.create", target="RFD-BBB",
                           amount_minor=5, currency="EUR", at=DAY_3,
                           detail=json.dumps({"originalTxNo": "PAY-1111", "reason": None})),
        "hostile": dict(actor="=cmd|' /C calc'!A0", action="token.create", target="+44123",
                        at=DAY_3, detail=json.dumps({"label": '-2+3, "quoted"\nnext line',
                                                     "other": "@SUM(A1)"})),
        "sandbox_only": dict(actor="ada@shop.test", action="refund.create", target="RFD-SBX",
                             at=DAY_1, mode="sandbox"),
    }
    with app.extensions["paydesk"].uow() as uow:
        for row in rows.values():
            uow.conn.execute(insert(audit_log).values(
                merchant_id=merchant.merchant_id, mode=row.pop("mode", "live"), ip="203.0.113.9", **row))
        uow.commit()
    return {name: row["target"] for name, row in rows.items()}


@pytest.fixture
def support(dashboard, merchant):
    return dashboard(merchant.merchant_id, "support")


def listed(app, client, entries, **filters) -> set[str]:
    """The names of the fixture's entries the audit page shows with these filters."""
    response = client.get(_path(app, "dashboard.audit", **filters))
    assert response.status_code == 200
    return _targets_shown(response.text, entries)


def _targets_shown(page: str, entries) -> set[str]:
    """The names of the entries whose target is in a Target cell (details link TxNos too)."""
    cells = " ".join(re.findall(r'data-label="Target">(.*?)</td>', page, re.S))
    return {name for name, target in entries.items() if f">{target}<" in cells}


def test_no_filter_lists_the_modes_entries(app, support, entries):
    assert listed(app, support, entries) == {"ada_refund", "ada_note", "bob_payout", "api_refund", "hostile"}


def test_user_filter_matches_any_part_of_the_actor_in_any_case(app, support, entries):
    assert listed(app, support, entries, user="ADA@") == {"ada_refund", "ada_note"}
    assert listed(app, support, entries, user="bob") == {"bob_payout"}
    assert listed(app, support, entries, user="api:") == {"api_refund"}
    assert listed(app, support, entries, user="%") == set()  # LIKE's wildcards are literal


def test_action_filter_matches_one_action(app, support, entries):
    assert listed(app, support, entries, action="refund.create") == {"ada_refund", "api_refund"}
    assert listed(app, support, entries, action="note.add") == {"ada_note"}
    assert listed(app, support, entries, action="refund") == set()
    none = support.get(_path(app, "dashboard.audit", action="refund")).text
    assert '<p class="muted visually-hidden" role="status">No entries match the filters</p>' in none
    assert "Nothing matches these filters" in none  # the card says it to the eye, once


def test_date_range_takes_whole_utc_days_inclusive(app, support, entries):
    assert listed(app, support, entries, **{"from": "2026-03-02"}) == {
        "ada_note", "bob_payout", "api_refund", "hostile"}
    assert listed(app, support, entries, to="2026-03-02") == {"ada_refund", "ada_note", "bob_payout"}
    assert listed(app, support, entries, **{"from": "2026-03-02", "to": "2026-03-02"}) == {
        "ada_note", "bob_payout"}


def test_tx_no_filter_finds_the_transactions_entries_and_its_refunds(app, support, entries):
    assert listed(app, support, entries, tx_no="pay-111") == {"ada_refund", "ada_note"}
    assert listed(app, support, entries, tx_no="PAY-1111") == {"api_refund"}
    assert listed(app, support, entries, tx_no="POU-222") == {"bob_payout"}


def test_filters_combine_and_the_form_shows_them_again(app, support, entries):
    filters = {"user": "ada", "action": "note.add", "from": "2026-03-01", "to": "2026-03-03",
               "tx_no": "PAY-111"}
    response = support.get(_path(app, "dashboard.audit", **filters))
    assert _targets_shown(response.text, entries) == {"ada_note"}
    page = response.text
    assert 'id="user" name="user" type="search" value="ada"' in page
    assert '<option value="note.add" selected>Note added</option>' in page
    # The day as the user's locale types it.
    assert re.search(r'id="from" name="from" type="text" inputmode="numeric" autocomplete="off" maxlength="10" '
                     r'size="10"\s+value="01/03/2026"', page)
    day_fields = re.findall(r'<input id="(?:from|to)"[^>]*>', page, flags=re.S)
    assert len(day_fields) == 2 and 'value="03/03/2026"' in day_fields[1]
    assert not any("hx-get" in tag for tag in day_fields)  # the audit's filters apply on submit
    assert 'id="tx_no" name="tx_no" type="search" value="PAY-111"' in page
    assert "1 entry matching the filters, newest first" in page
    export = _path(app, "dashboard.export_audit", **filters).replace("&", "&amp;")
    assert f'href="{export}"' in page


def test_pages_keep_the_filters(app, support, entries, monkeypatch):
    monkeypatch.setattr(audit_view, "PAGE_SIZE", 1)
    page = support.get(_path(app, "dashboard.audit", user="ada")).text
    older = page.split('rel="next" href="')[1].split('"')[0].replace("&amp;", "&")
    assert "user=ada" in older
    assert listed(app, support, entries, **dict(p.split("=") for p in older.split("?")[1].split("&"))) \
        == {"ada_refund"}


def test_a_date_that_cannot_be_read_is_said_and_not_exported(app, support, entries):
    page = support.get(_path(app, "dashboard.audit", to="March")).text
    assert "Dates are written day/month/year, e.g. 29/10/2026 (to was &#39;March&#39;)" in page
    assert support.get(_path(app, "dashboard.export_audit", to="March")).status_code == 400


def test_export_is_the_filtered_entries_as_csv_quoted_and_safe_for_spreadsheets(app, support, entries):
    response = support.get(_path(app, "dashboard.export_audit", **{"from": "2026-03-03"}))
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    assert response.headers["Content-Disposition"].startswith('attachment; filename="paydesk-live-audit-')
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows == [
        ["When (UTC)", "Who", "Action", "Target", "Amount", "Currency", "From (IP)", "Details"],
        ["2026-03-03 00:00:00", "'=cmd|' /C calc'!A0", "token.create", "'+44123", "", "", "203.0.113.9",
         "label: -2+3, \"quoted\"\nnext line; other: @SUM(A1)"],
        ["2026-03-03 00:00:00", "api:pd_live_abc", "refund.create", "RFD-BBB", "0.05", "EUR",
         "203.0.113.9", "originalTxNo: PAY-1111; reason: "],
    ]
    assert '"label: -2+3, ""quoted""\nnext line; other: @SUM(A1)"' in response.text  # csv quoting


def test_export_cells_starting_with_a_formula_character_are_text(app, support, entries):
    rows = list(csv.reader(io.StringIO(support.get(_path(app, "dashboard.export_audit")).text)))
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")), row


def test_export_of_every_entry_in_batches(app, support, entries, monkeypatch):
    monkeypatch.setattr("app.store.audit.EXPORT_BATCH", 2)
    rows = list(csv.reader(io.StringIO(support.get(_path(app, "dashboard.export_audit")).text)))
    assert [row[3] for row in rows[1:]] == ["'+44123", "RFD-BBB", "POU-222", "PAY-111", "RFD-AAA"]


def _row_of(page: str, target: str) -> str:
    return page.split(f">{target}<", 1)[0].rsplit("<tr>", 1)[1] + page.split(f">{target}<", 1)[1].split("</tr>", 1)[0]


def test_entries_read_in_words_and_link_to_what_they_name(app, support, entries):
    page = support.get(_path(app, "dashboard.audit", tx_no="PAY-111")).text
    refund = _row_of(page, "RFD-AAA")
    assert '<span class="audit-action" data-action="refund.create">Refund issued</span>' in refund
    assert ('<span class="muted">Original TxNo:</span> <a href="/transactions/PAY-111">PAY-111</a>') in refund
    assert '<span class="muted">Reason:</span> Damaged' in refund
    # Who links to that user's entries, the other filters kept; the e-mail wraps only at its parts.
    assert ('<a href="/audit?tx_no=PAY-111&amp;user=ada@shop.test" title="Only this user\'s entries">'
            'ada<wbr>@shop.<wbr>test</a>') in refund
    assert "originalTxNo" not in page and ">refund.create<" not in page


def test_an_empty_detail_is_not_shown(app, support, entries):
    page = support.get(_path(app, "dashboard.audit", user="api:")).text
    row = _row_of(page, "RFD-BBB")
    assert "Original TxNo:" in row and "Reason:" not in row


def test_a_details_json_values_read_as_words_not_as_python(app, dashboard, merchant):
    """A batch's run wrote its totals (an object) and whether it needed approval (a boolean): the
    page showed "Totals: {'NGN': '27000.50'}" and "Approval: False"."""
    with app.extensions["paydesk"].uow() as uow:
        uow.conn.execute(insert(audit_log).values(
            merchant_id=merchant.merchant_id, mode="live", actor="ada@shop.test", action="batch.run",
            target="BATWORDS", at=DAY_3, detail=json.dumps({
                "kind": "payout", "rows": 2, "totals": {"NGN": "27000.50", "EUR": "1234.00"},
                "approval": False, "reasons": ["a", "b"], "other": {"first": 1}})))
        uow.commit()
    admin = dashboard(merchant.merchant_id, "admin")
    row = _row_of(admin.get(_path(app, "dashboard.audit", user="ada@")).text, "BATWORDS")
    shown = re.sub(r"<[^>]+>", "", row)
    assert "Totals: 27,000.50 NGN, 1,234.00 EUR" in shown
    assert "Needs approval: no" in shown
    assert "Reasons: a, b" in shown and "Other: First: 1" in shown
    assert "{" not in shown and "[" not in shown and "False" not in shown
    rows = list(csv.reader(io.StringIO(admin.get(_path(app, "dashboard.export_audit", user="ada@")).text)))
    [exported] = [r for r in rows if r[3] == "BATWORDS"]
    assert exported[-1] == ("kind: payout; rows: 2; totals: 27000.50 NGN, 1234.00 EUR; approval: no; "
                            "reasons: a, b; other: First: 1")
