"""The transactions list: search as you type, filters, keyset pages, CSV export, fragments for htmx."""
from __future__ import annotations

import csv
import io
import re
import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from flask import url_for

from app.payments.model import Caller, Mode
from app.store import listing as store
from tests.conftest import payment_body

from .conftest import SANDBOX, switch_to_sandbox


def _create(sandbox, reference: str, amount=100) -> str:
    created = sandbox.post("/transactions", payment_body(reference=reference, amount=amount))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


@pytest.fixture
def sandbox_finance(finance):
    switch_to_sandbox(finance)
    return finance


def _tx_nos(html: str, candidates) -> set[str]:
    """The candidates listed as rows (a row's TxNo column), not only named (a refund's payment)."""
    return {tx_no for tx_no in candidates if f'<a class="mono" href="/test/transactions/{tx_no}">' in html
            or f'<a class="mono" href="/transactions/{tx_no}">' in html}


def test_search_finds_part_of_a_reference_in_any_case_and_an_exact_tx_no(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    wanted = _create(sandbox, f"Order-{tag}-Blue")
    other = _create(sandbox, f"Order-{tag}-Red")
    found = sandbox_finance.get(f"/transactions?q={tag}-blue").text
    assert _tx_nos(found, [wanted, other]) == {wanted}
    by_number = sandbox_finance.get(f"/transactions?q={other.lower()}").text
    assert _tx_nos(by_number, [wanted, other]) == {other}


def test_percent_and_underscore_in_a_search_are_literal(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    literal = _create(sandbox, f"{tag}-50%_off")
    lookalike = _create(sandbox, f"{tag}-50xxoff")
    assert _tx_nos(sandbox_finance.get(f"/transactions?q={tag}-50%25_").text,
                   [literal, lookalike]) == {literal}


def test_filters_narrow_by_status_kind_and_date(sandbox, sandbox_finance, server):
    tag = uuid.uuid4().hex[:6]
    pending = _create(sandbox, f"f-{tag}-1")
    captured = _create(sandbox, f"f-{tag}-2")
    sandbox.post(f"/sandbox/transactions/{captured}/outcome", {"status": "Captured"})
    refund = sandbox.post("/transactions/refund", {"txNo": captured, "amount": 5}).json()["refundTxNo"]
    everything = [pending, captured, refund]

    def listed(query: str) -> set[str]:
        return _tx_nos(sandbox_finance.get(f"/transactions?q=f-{tag}&{query}").text, everything)

    assert listed("status=Pending") == {pending}
    assert listed("kind=refund") == {refund}
    today = server.app.extensions["paydesk"].clock().date()
    assert listed(f"from={today}&to={today}") == set(everything)
    assert listed(f"from={today + timedelta(days=1)}") == set()
    bad = sandbox_finance.get(f"/transactions?q=f-{tag}&from=yesterday&status=Lost")
    assert ("Dates are written day/month/year, e.g. 29/10/2026 (from was &#39;yesterday&#39;)"
            in bad.text)
    assert "Unknown status &#39;Lost&#39;" in bad.text


def test_newest_first_in_keyset_pages_that_never_skip_or_repeat(app, sandbox, merchant):
    tag = uuid.uuid4().hex[:6]
    created = [_create(sandbox, f"k-{tag}-{i}") for i in range(7)]
    flt = store.TransactionFilter(search=f"k-{tag}")
    deps = app.extensions["paydesk"]
    seen, cursor = [], None
    while True:
        with deps.uow(write=False) as uow:
            page = store.list_transactions(uow.conn, Caller(merchant.merchant_id, Mode.SANDBOX, "test"),
                                           flt, older_than=cursor, limit=3)
        seen += [row.tx_no for row in page.rows]
        if page.older is None:
            break
        cursor = page.older
    assert seen == list(reversed(created))
    with deps.uow(write=False) as uow:
        back = store.list_transactions(uow.conn, Caller(merchant.merchant_id, Mode.SANDBOX, "test"),
                                       flt, newer_than=cursor, limit=3)
    assert [row.tx_no for row in back.rows] == list(reversed(created))[2:5]  # the page before the last


def test_the_page_links_carry_the_cursor_and_the_filters(sandbox, sandbox_finance, monkeypatch):
    monkeypatch.setattr(store, "PAGE_SIZE", 2)
    tag = uuid.uuid4().hex[:6]
    created = [_create(sandbox, f"p-{tag}-{i}") for i in range(3)]
    first = sandbox_finance.get(f"/transactions?q=p-{tag}").text
    assert _tx_nos(first, created) == set(created[1:])
    older = re.search(rf'href="({SANDBOX}/transactions\?older=[^"]+)" rel="next"', first).group(1).replace("&amp;", "&")
    assert older.endswith(f"&q=p-{tag}")
    second = sandbox_finance.get(older).text
    assert _tx_nos(second, created) == {created[0]}
    assert 'rel="prev"' in second and 'rel="next"' not in second


def test_htmx_gets_the_results_fragment_and_caches_keep_them_apart(sandbox_finance):
    page = sandbox_finance.get("/transactions?q=x")
    fragment = sandbox_finance.get("/transactions?q=x", headers={"HX-Request": "true"})
    assert page.text.startswith("<!doctype html>")
    assert fragment.text.lstrip().startswith('<section id="results"')
    assert "HX-Request" in fragment.headers["Vary"] and "HX-Request" in page.headers["Vary"]
    restore = sandbox_finance.get("/transactions?q=x", headers={"HX-Request": "true",
                                                                "HX-History-Restore-Request": "true"})
    assert restore.text.startswith("<!doctype html>")


def test_csv_export_streams_what_the_filters_select(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    first = _create(sandbox, f"=HYPERLINK(x)-{tag}", amount=1234.5)
    second = _create(sandbox, f"csv-{tag}")
    response = sandbox_finance.get(f"/transactions/export.csv?q={tag}")
    assert response.headers["Content-Type"].startswith("text/csv")
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="paydesk-sandbox-transactions-')
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0] == ["Created (UTC)", "TxNo", "Kind", "Status", "Amount", "Currency", "Reference",
                       "Decline reason", "Payment method", "Original TxNo", "Customer name",
                       "Customer e-mail", "Customer reference", "Provider transaction ID", "Refunded",
                       "Remaining refundable"]
    customer = ["", "Ada Lovelace", "ada@example.com", "cust-1"]
    assert [r[1:13] + r[14:] for r in rows[1:]] == [
        [second, "payment", "Pending", "100.00", "EUR", f"csv-{tag}", "", "card", *customer, "0.00", "0.00"],
        [first, "payment", "Pending", "1234.50", "EUR", f"'=HYPERLINK(x)-{tag}", "", "card", *customer,
         "0.00", "0.00"],
    ]


def test_csv_export_of_a_hostile_reference_is_quoted_text_to_the_byte(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    reference = f"x;=1+1;=cmd|' /C calc'!A0;{tag}"
    tx_no = _create(sandbox, reference)
    created = sandbox.get(f"/transactions/{tx_no}/status").json()["CreatedAt"]
    response = sandbox_finance.get(f"/transactions/export.csv?q={tag}")
    assert response.status_code == 200
    provider_id = sandbox.get(f"/transactions/{tx_no}/status").json()["ProviderTransactionId"] or ""
    assert response.content == (
        b'"Created (UTC)","TxNo","Kind","Status","Amount","Currency","Reference","Decline reason",'
        b'"Payment method","Original TxNo","Customer name","Customer e-mail","Customer reference",'
        b'"Provider transaction ID","Refunded","Remaining refundable"\r\n'
        + f'"{created[:10]} {created[11:19]}","{tx_no}","payment","Pending","100.00","EUR",'
          f'"x;\'=1+1;\'=cmd|\' /C calc\'!A0;{tag}","","card","","Ada Lovelace","ada@example.com",'
          f'"cust-1","{provider_id}","0.00","0.00"\r\n'.encode())


def test_csv_export_names_a_refunds_original_and_a_payments_refunded_and_remaining_amounts(
        sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    payment = _create(sandbox, f"rec-{tag}", amount=75.5)
    sandbox.post(f"/sandbox/transactions/{payment}/outcome", {"status": "Captured"})
    refund = sandbox.post("/transactions/refund", {"txNo": payment, "amount": 20}).json()["refundTxNo"]
    provider_id = sandbox.get(f"/transactions/{payment}/status").json()["ProviderTransactionId"]
    refund_provider_id = sandbox.get(f"/transactions/{refund}/status").json()["ProviderTransactionId"] or ""
    rows = list(csv.reader(io.StringIO(sandbox_finance.get(f"/transactions/export.csv?q=rec-{tag}").text)))
    assert [r[1:4] + r[9:] for r in rows[1:]] == [
        [refund, "refund", "Captured", payment, "", "", "", refund_provider_id, "", ""],
        [payment, "payment", "Captured", "", "Ada Lovelace", "ada@example.com", "cust-1", provider_id,
         "20.00", "55.50"],
    ]


def test_a_refund_row_names_its_payment_where_a_payment_names_its_customer(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    payment = _create(sandbox, f"rof-{tag}")
    sandbox.post(f"/sandbox/transactions/{payment}/outcome", {"status": "Captured"})
    refund = sandbox.post("/transactions/refund", {"txNo": payment, "amount": 20}).json()["refundTxNo"]
    html = sandbox_finance.get(f"/transactions?q=rof-{tag}").text
    [refund_row] = [r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if f">{refund}</a>" in r]
    link = f'<a class="mono small" href="/test/transactions/{payment}">{payment}</a>'
    assert f'<td class="hide-sm customer"><span class="muted small">Refund of</span> {link}</td>' in refund_row
    assert f'<span class="show-sm customer-inline"><span class="muted small">Refund of</span> {link}</span>' in refund_row
    [payment_row] = [r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if f">{payment}</a>" in r and r != refund_row]
    assert "Refund of" not in payment_row and "Ada Lovelace" in payment_row


def test_the_count_is_shown_above_rows_and_left_to_screen_readers_above_the_empty_card(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    _create(sandbox, f"cnt-{tag}")
    found = sandbox_finance.get(f"/transactions?q=cnt-{tag}").text
    assert '<p class="muted" role="status">' in found and "Nothing matches these filters" not in found
    none = sandbox_finance.get(f"/transactions?q=none-{tag}").text
    assert re.search(r'<p class="muted visually-hidden" role="status">\s*No transactions', none)
    assert "Nothing matches these filters" in none  # which the card says, once


def test_csv_export_adds_the_readers_local_time_last_when_asked(app, sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:6]
    tx_no = _create(sandbox, f"tz-{tag}")
    assert sandbox_finance.post("/account/display", {"locale": "de-DE",
                                                    "time_zone": "America/New_York"}).status_code == 303
    created = datetime.fromisoformat(
        sandbox.get(f"/transactions/{tx_no}/status").json()["CreatedAt"].replace("Z", "+00:00"))
    plain = list(csv.reader(io.StringIO(sandbox_finance.get(f"/transactions/export.csv?q=tz-{tag}").text)))
    local = list(csv.reader(io.StringIO(
        sandbox_finance.get(f"/transactions/export.csv?q=tz-{tag}&local_time=1").text)))
    assert local[0] == plain[0] + ["Created (America/New_York)"]
    assert local[1][:-1] == plain[1]  # the UTC column first and unchanged, amounts plain ('.')
    assert plain[1][0] == created.strftime("%Y-%m-%d %H:%M:%S") and plain[1][4] == "100.00"
    assert local[1][-1] == created.astimezone(ZoneInfo("America/New_York")).isoformat(
        sep=" ", timespec="seconds")


def test_amounts_are_written_for_people(sandbox, sandbox_finance):
    tx_no = _create(sandbox, f"big-{uuid.uuid4().hex[:6]}", amount=1234567.5)
    page = sandbox_finance.get(f"/transactions/{tx_no}").text
    assert '<span class="money-amount">1,234,567.50</span> <span class="money-currency">EUR</span>' in page


def test_sandbox_and_live_are_apart(sandbox, finance):
    tx_no = _create(sandbox, f"mode-{uuid.uuid4().hex[:6]}")
    assert finance.get(f"/transactions/{tx_no}").status_code == 404  # live first
    switch_to_sandbox(finance)
    page = finance.get(f"/transactions/{tx_no}")
    assert page.status_code == 200
    assert "Sandbox: test data only" in page.text


@pytest.mark.parametrize("query", ["older=99999999999999999999-1", "older=%C2%B2-1", "newer=1-%C2%B2",
                                   "older=-", "newer=abc"])
def test_malformed_cursors_show_the_first_page_not_an_error(sandbox_finance, query):
    response = sandbox_finance.get(f"/transactions?{query}")
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/webhooks?page=%C2%B2", "/webhooks?page=99999999999",
                                  "/audit?before=%C2%B2", "/audit?before=99999999999999999999"])
def test_malformed_page_numbers_are_ignored(finance, path):
    assert finance.get(path).status_code == 200


def test_a_pending_transaction_polls_its_progress_until_its_status_is_final(dashboard, merchant, sandbox):
    support = dashboard(merchant.merchant_id, "support")  # reading a page is all it takes
    switch_to_sandbox(support)
    tx_no = sandbox.post("/transactions", payment_body(callbackUrl=merchant.inbox_url)).json()["transactionId"]
    polling = f'hx-get="{SANDBOX}/transactions/{tx_no}/progress" hx-trigger="every 2s" hx-swap="outerHTML"'
    page = support.get(f"/transactions/{tx_no}").text
    assert polling in page and "Updates by itself" in page
    pending = support.get(f"/transactions/{tx_no}/progress", headers={"HX-Request": "true"})
    assert (pending.status_code, pending.text) == (204, "")

    declined = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome",
                            {"status": "Declined", "declineReason": "Insufficient Funds"})
    assert declined.status_code == 200
    final = support.get(f"/transactions/{tx_no}/progress", headers={"HX-Request": "true"})
    assert final.status_code == 200
    status = final.text.split("</div>", 1)[0]
    assert status.lstrip().startswith('<div id="tx-status" class="tx-status"')
    assert "hx-trigger" not in final.text  # the new status stops the polling
    assert f'data-announce="Payment {tx_no} is now Declined: Insufficient Funds."' in status
    assert ">Declined<" in status
    for part in ('id="tx-decline" hx-swap-oob="true"', 'id="status-fields" aria-labelledby="fields-title" hx-swap-oob="true"',
                 'id="history" aria-labelledby="history-title" hx-swap-oob="true"',
                 'id="deliveries" aria-labelledby="deliveries-title" hx-swap-oob="true"'):
        assert part in final.text
    assert "<strong>Decline reason:</strong> Insufficient Funds" in final.text
    # Support reads what it means and what to tell the customer (app/payments/declines.py).
    assert "The account or card did not have enough money available. Trying again can succeed." in final.text
    assert ("<strong>Tell the customer:</strong> “Your bank declined the payment for insufficient funds. "
            "Please use another card or try again once funds are available.”") in final.text
    assert polling not in support.get(f"/transactions/{tx_no}").text and "Updates by itself" not in final.text
    assert support.get("/transactions/PAY-NONE/progress").status_code == 404


def test_the_side_panels_follow_the_final_status(dashboard, merchant, sandbox):
    finance = dashboard(merchant.merchant_id, "finance")
    switch_to_sandbox(finance)
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    assert "Cancel payment" in finance.get(f"/transactions/{tx_no}").text
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    final = finance.get(f"/transactions/{tx_no}/progress", headers={"HX-Request": "true"}).text
    side = final.split('id="tx-side"', 1)[1]
    assert side.startswith(' hx-swap-oob="true"')
    assert "Review refund" in side and "Cancel payment" not in side
def _path(app, endpoint: str, **values) -> str:
    """The dashboard's own URL for the endpoint (pages may move; url_for knows where)."""
    with app.test_request_context():
        return url_for(endpoint, **values)


def _customer_payment(sandbox, first: str, last: str, email: str) -> str:
    billing = {"firstName": first, "lastName": last, "email": email, "customerReference": "c"}
    created = sandbox.post("/transactions", payment_body(billing=billing))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def test_search_finds_customers_by_e_mail_and_name_and_payments_by_provider_id(app, sandbox,
                                                                             sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    ada = _customer_payment(sandbox, "Ada", f"Lovelace{tag}", f"ada.{tag}@example.com")
    grace = _customer_payment(sandbox, "Grace", f"Hopper{tag}", f"grace.{tag}@navy.example")
    both = [ada, grace]

    def searched(term: str) -> set[str]:
        return _tx_nos(sandbox_finance.get(_path(app, "dashboard.transactions", q=term)).text, both)

    assert searched(f"ADA.{tag}@EXAMPLE") == {ada}
    assert searched(f"Ada.{tag}@Example.com") == {ada}  # a whole address, any case
    assert searched(f"{tag}@navy") == {grace}
    assert searched(f"Grace Hopper{tag}") == {grace}
    assert searched(f"lovelace{tag}") == {ada}
    assert searched(tag) == {ada, grace}
    assert searched(f"sim_{grace}") == {grace}  # the simulator's id for it
    assert searched(f"sim_{grace[:-1]}") == set()  # provider ids are matched whole
    page = sandbox_finance.get(_path(app, "dashboard.transactions", q=f"{tag}@navy")).text
    assert (f"1 transaction, newest first. Searched TxNo, reference, e-mail, name and provider id "
            f"for “{tag}@navy”.") in page


def test_the_search_hint_says_what_is_searched(app, sandbox_finance):
    page = sandbox_finance.get(_path(app, "dashboard.transactions")).text
    assert 'placeholder="Reference, customer e-mail or name, TxNo, provider id"' in page
    assert ("Any part of a reference, customer e-mail or name; a whole TxNo or provider transaction "
            "id. Results update as you type") in page
    assert "Searched TxNo" not in page


def test_the_day_fields_show_the_days_as_typed_and_refresh_the_list(sandbox_finance):
    page = sandbox_finance.get("/transactions?from=2026-03-01&to=nonsense").text
    fields = re.findall(r'<input id="(from|to)" name="\1"[^>]*>', page, flags=re.S)
    assert fields == ["from", "to"]
    for name, shown in (("from", "01/03/2026"), ("to", "nonsense")):
        tag = re.search(rf'<input id="{name}"[^>]*>', page, flags=re.S).group()
        assert f'value="{shown}"' in tag
        assert 'aria-describedby="days-hint"' in tag
        assert re.search(r'hx-get="[^"]*/transactions" hx-trigger="change"', tag)
    assert '<p class="hint days-hint" id="days-hint">Days in' in page
