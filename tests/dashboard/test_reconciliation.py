"""The Reconciliation pages: finance and admin only; settlements with totals and exceptions, a
settlement's lines and results, its CSV export, the missing payments, a payment's fee. Both databases."""
from __future__ import annotations

import re

import pytest

from .conftest import switch_to_sandbox


@pytest.mark.parametrize("role, status", [("support", 403), ("payouts", 403), ("finance", 200), ("admin", 200)])
def test_only_finance_and_admin_open_reconciliation(dashboard, merchant, role, status):
    client = dashboard(merchant.merchant_id, role)

    assert client.get("/reconciliation").status_code == status
    nav = client.get("/transactions").text
    assert ('href="/reconciliation"' in nav) is (status == 200)


def settle(sandbox, **body):
    ran = sandbox.post("/sandbox/settlements/run", body or None)
    assert ran.status_code == 200, ran.text
    return ran.json()["settlements"][-1]


def test_the_list_shows_totals_and_exceptions(finance, sandbox, captured_payment):
    tx_no = captured_payment(amount=200)
    settlement = settle(sandbox, amountDiffersFor=tx_no)
    switch_to_sandbox(finance)

    page = finance.get("/reconciliation").text

    row = re.search(rf'<tr>.*?{settlement["providerSettlementId"]}.*?</tr>', page, re.S).group(0)
    assert "Simulator" in row
    assert ">699.00</span>" in row  # 5 fixtures of 100.00 and 199.00 of the short payment
    assert "<strong>1</strong>" in row  # one exception
    assert '<span class="tag">Pending</span>' in row  # the provider's word for its status, in words
    assert "Missing from every settlement" in page


def test_a_settlement_s_page_shows_each_line_s_result(finance, sandbox, captured_payment):
    tx_no = captured_payment(amount=200)
    settlement = settle(sandbox, amountDiffersFor=tx_no)
    switch_to_sandbox(finance)

    page = finance.get(f"/reconciliation/{settlement['id']}")

    assert page.status_code == 200
    row = re.search(rf'<tr>(?:(?!</tr>).)*?{tx_no}.*?</tr>', page.text, re.S).group(0)
    assert "<strong>Amount differs</strong>" in row and ">199.00</span>" in row
    # what Paydesk holds for it, so the reader sees the difference without opening the payment
    assert re.search(r'Paydesk has (<span[^>]*>)+200\.00</span>', row)
    assert page.text.count('<span class="tag">Matched</span>') == 5
    assert "<dt>Status</dt><dd>Pending</dd>" in page.text
    assert finance.get("/reconciliation/stl_999999999").status_code == 404


def test_the_csv_export_has_every_line_guarded_for_spreadsheets(finance, sandbox, captured_payment):
    tx_no = captured_payment(amount=200)
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 20}).json()["refundTxNo"]
    settlement = settle(sandbox)
    switch_to_sandbox(finance)

    export = finance.get(f"/reconciliation/{settlement['id']}/export.csv")

    assert export.status_code == 200 and export.headers["Content-Type"].startswith("text/csv")
    lines = export.text.splitlines()
    assert lines[0] == ('"Provider transaction id","Reference","Type","Direction","Gross","Fee","Net",'
                        '"Currency","TxNo","Result","Paydesk amount","Paydesk currency"')
    [refund_line] = [line for line in lines if refund in line]
    assert refund_line.endswith(f'"{refund}","refund","debit","20.00","0.00","20.00","EUR","{refund}","matched",'
                                '"20.00","EUR"')
    assert len(lines) == 1 + 7  # five fixtures, the payment and its refund


def test_a_payment_s_page_shows_its_fee_once_settled(finance, sandbox, captured_payment):
    tx_no = captured_payment(amount=200)
    switch_to_sandbox(finance)
    assert "Provider fee" not in finance.get(f"/transactions/{tx_no}").text

    settle(sandbox)

    page = finance.get(f"/transactions/{tx_no}").text
    assert "Provider fee" in page and ">3.10</span>" in page
