"""The list shows refunds and the customer; a customer's page has every transaction of its
customerReference (or e-mail), the totals, refunds and declines explained; a payment's timeline."""
from __future__ import annotations

import re
import uuid

import pytest
from sqlalchemy import event

from app.api.request_log import flush_request_log
from app.store import listing
from tests.conftest import payment_body

from .conftest import SANDBOX, switch_to_sandbox


@pytest.fixture
def sandbox_finance(finance):
    switch_to_sandbox(finance)
    return finance


def _billing(reference: str, email: str, first="Ada", last="Lovelace") -> dict:
    return {"firstName": first, "lastName": last, "email": email, "customerReference": reference}


def _pay(sandbox, billing: dict, amount=100, currency="EUR", outcome: dict | None = None) -> str:
    created = sandbox.post("/transactions", payment_body(amount=amount, currency=currency, billing=billing))
    assert created.status_code == 200, created.text
    tx_no = created.json()["transactionId"]
    if outcome:
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", outcome).status_code == 200
    return tx_no


def _refund(sandbox, tx_no: str, amount) -> str:
    refunded = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": amount})
    assert refunded.status_code == 200, refunded.text
    return refunded.json()["refundTxNo"]


CAPTURED = {"status": "Captured"}
DECLINED = {"status": "Declined", "declineReason": "Insufficient Funds"}


def _row_of(html: str, tx_no: str) -> str:
    return html.split(f">{tx_no}</a>", 1)[1].split("</tr>", 1)[0]


def test_list_rows_say_partially_refunded_or_refunded_and_name_the_customer(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    billing = _billing(f"cust-{tag}", f"ada.{tag}@example.com")
    partly = _pay(sandbox, billing, amount=75.5, outcome=CAPTURED)
    _refund(sandbox, partly, 20)
    whole = _pay(sandbox, billing, amount=30, outcome=CAPTURED)
    _refund(sandbox, whole, 30)
    html = sandbox_finance.get(f"/transactions?q={tag}").text
    row = _text(_row_of(html, partly))
    assert "75.50 EUR" in row and "Partially refunded · 20.00 EUR" in row
    assert f'<a class="customer-link" href="{SANDBOX}/customer?reference=cust-{tag}">Ada Lovelace</a>' in html
    assert f"ada.<wbr>{tag}<wbr>@example.<wbr>com" in html  # the e-mail wraps at its parts only
    whole_row = _row_of(html, whole)
    assert '<span class="badge badge-refunded">Refunded</span>' in whole_row
    assert "Partially refunded" not in whole_row


def _text(html: str) -> str:
    """What a reader sees of some HTML: its text, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def test_the_customer_page_has_every_transaction_totals_refunds_and_declines(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    billing = _billing(f"cust-{tag}", f"Grace.{tag}@Example.com", "Grace", "Hopper")
    first = _pay(sandbox, billing, amount=100, outcome=CAPTURED)
    refund = _refund(sandbox, first, 25)
    declined = _pay(sandbox, billing, amount=40, outcome=DECLINED)
    expired = _pay(sandbox, billing, amount=15, outcome={"status": "Declined", "declineReason": "Transaction Expired"})
    kes = _pay(sandbox, billing, amount=500, currency="KES", outcome=CAPTURED)
    stranger = _pay(sandbox, _billing(f"other-{tag}", f"x.{tag}@example.com"), outcome=CAPTURED)

    page = sandbox_finance.get(f"/customer?reference=cust-{tag}")
    assert page.status_code == 200
    html = page.text
    assert "<title>Customer Grace Hopper · Paydesk</title>" in html
    assert stranger not in html
    listed = html.split('id="customer-transactions"')[1]
    assert [m for m in re.findall(r"(PAY-[0-9A-F]+)</a>", listed)] == [kes, expired, declined, first]  # newest first
    totals = html.split('id="customer-totals"')[1].split("</table>")[0]
    eur = totals.split('data-label="Currency">EUR</th>')[1].split("</tr>")[0]
    assert [(label, _text(cell)) for label, cell in re.findall(r'data-label="(\w+)">(.*?)</td>', eur)] == [
        ("Captured", "100.00 EUR"), ("Refunded", "25.00 EUR"), ("Net", "75.00 EUR"), ("Payments", "3"),
        ("Declined", "1"), ("Expired", "1")]  # an expired checkout is no decline, as on the Overview
    assert 'data-label="Currency">KES</th>' in totals
    refunds = html.split('id="customer-refunds"')[1].split("</section>")[0]
    assert f">{refund}</a>" in refunds and f">{first}</a>" in refunds
    declines = html.split('id="customer-declines"')[1].split("</section>")[0]
    assert f">{declined}</a>" in declines and "<strong>Decline reason:</strong> Insufficient Funds" in declines
    assert ("<strong>Tell the customer:</strong> “Your bank declined the payment for insufficient funds. "
            "Please use another card or try again once funds are available.”") in declines
    # The e-mail, any case, finds the same customer; each page links to the other.
    assert f'href="{SANDBOX}/customer?email=Grace.{tag}@Example.com"' in html
    by_email = sandbox_finance.get(f"/customer?email=grace.{tag}@example.COM").text
    assert _tx_set(by_email, [first, declined, kes, stranger]) == {first, declined, kes}
    assert f'href="{SANDBOX}/customer?reference=cust-{tag}"' in by_email


def _tx_set(html: str, candidates) -> set[str]:
    return {tx_no for tx_no in candidates if tx_no in html}


def test_the_customer_page_pages_by_keyset_keeping_the_customer(sandbox, sandbox_finance, monkeypatch):
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    tag = uuid.uuid4().hex[:8]
    billing = _billing(f"cust-{tag}", f"p.{tag}@example.com")
    created = [_pay(sandbox, billing) for _ in range(3)]
    first = sandbox_finance.get(f"/customer?reference=cust-{tag}").text
    listed = first.split('id="customer-transactions"')[1]
    assert _tx_set(listed, created) == set(created[1:])
    older = re.search(r'href="([^"]+)" rel="next"', listed).group(1).replace("&amp;", "&")
    assert older.startswith(f"{SANDBOX}/customer?older=") and older.endswith(f"&reference=cust-{tag}")
    second = sandbox_finance.get(older).text.split('id="customer-transactions"')[1]
    assert _tx_set(second, created) == {created[0]}
    assert 'rel="prev"' in second and 'rel="next"' not in second


def test_every_transaction_of_a_customer_links_to_its_page(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    tx_no = _pay(sandbox, _billing(f"cust-{tag}", f"l.{tag}@example.com"))
    page = sandbox_finance.get(f"/transactions/{tx_no}").text
    assert (f'<a class="button secondary small" href="{SANDBOX}/customer?reference=cust-{tag}">'
            "All of this customer’s transactions</a>") in page
    assert f'<a class="mono" href="{SANDBOX}/customer?reference=cust-{tag}">cust-{tag}</a>' in page
    assert f'href="{SANDBOX}/customer?email=l.{tag}@example.com"' in page


@pytest.mark.parametrize("query", ["", "?reference=", "?email=%00x", "?reference=" + "r" * 101])
def test_a_customer_page_names_a_customer(sandbox_finance, query):
    assert sandbox_finance.get("/customer" + query).status_code == 404


def test_an_unknown_customer_has_an_empty_page(sandbox_finance):
    page = sandbox_finance.get(f"/customer?reference=nobody-{uuid.uuid4().hex}")
    assert page.status_code == 200 and "No transactions of this customer" in page.text


def test_the_timeline_tells_the_payment_s_story_newest_first(sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    tx_no = _pay(sandbox, _billing(f"cust-{tag}", f"t.{tag}@example.com"), outcome=CAPTURED)
    refund = _refund(sandbox, tx_no, 20)
    noted = sandbox_finance.post(f"/transactions/{tx_no}/notes", {"body": f"Called {tag}"})
    assert noted.status_code == 303
    html = sandbox_finance.get(f"/transactions/{tx_no}").text
    story = html.split('<section class="card" id="history"')[1].split("</section>")[0]
    tags = re.findall(r'<span class="tag">(\w+)</span>\s*<span class="timeline-text">([^<]*)</span>', story)
    kinds = [kind for kind, _ in tags]
    # Newest first: the note, the refund's webhook and moves, the payment's capture, its creation.
    assert kinds[0] == "Note" and kinds[-1] == "Status"
    texts = [text for _, text in tags]
    assert texts[-1] == "Payment created"
    assert "Status changed (Captured by sandbox)" in texts
    assert f"Refund {refund} of 20.00 EUR issued" in texts
    assert "payment.captured to https://merchant.example/webhooks: Waiting to be delivered" in texts
    assert ("Webhook", "refund.captured to https://merchant.example/webhooks: Waiting to be delivered") in tags
    assert texts.index(f"Refund {refund} of 20.00 EUR issued") < texts.index("Status changed (Captured by sandbox)")
    assert f'<a href="{SANDBOX}/transactions/{refund}">{refund}</a>' in story  # the refund's page
    assert f"Called {tag}" in story and "Sandbox test helper" in story


def test_the_timeline_reads_the_same_few_queries_whatever_the_number_of_refunds(
        app, sandbox, sandbox_finance):
    tag = uuid.uuid4().hex[:8]
    billing = _billing(f"cust-{tag}", f"q.{tag}@example.com")
    one, five = _pay(sandbox, billing, outcome=CAPTURED), _pay(sandbox, billing, outcome=CAPTURED)
    _refund(sandbox, one, 1)
    for _ in range(5):
        _refund(sandbox, five, 1)
    engine = app.extensions["paydesk.engine"]
    counted = []

    def count(*_args):
        counted.append(1)

    def statements(tx_no: str) -> int:
        flush_request_log(app)  # the API requests above are written now, not while counting
        counted.clear()
        event.listen(engine, "before_cursor_execute", count)
        try:
            assert sandbox_finance.get(f"/transactions/{tx_no}").status_code == 200
        finally:
            event.remove(engine, "before_cursor_execute", count)
        return len(counted)

    assert statements(one) == statements(five)
