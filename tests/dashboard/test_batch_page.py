"""The batch page as its user reads it: row statuses in words. Both databases."""
from __future__ import annotations

import re

from .conftest import switch_to_sandbox

FILE = ("method,amount,currency,bank,holder,account,reference,email\r\n"
        "ng-bank-payout,15000.00,NGN,058,Ada Obi,0123456785,salary-ada,ada@example.com\r\n"
        "ng-bank-payout,abc,NGN,058,Chi Eze,0123456785,salary-chi,chi@example.com\r\n").encode()


def test_the_review_shows_each_rows_status_in_words(dashboard, merchant):
    payouts = dashboard(merchant.merchant_id, "payouts")
    switch_to_sandbox(payouts)
    checked = payouts.post("/batches", {"kind": "payout"}, files={"file": ("salaries.csv", FILE, "text/csv")},
                           allow_redirects=True)
    assert checked.status_code == 200, checked.text
    statuses = re.findall(r'<td data-label="Status">([^<]*)</td>', checked.text)
    assert statuses == ["Invalid", "Valid"]  # the API's and the results file's invalid, valid
    assert "Amount must be a number" in checked.text


def test_the_upload_asks_what_the_file_holds_only_of_a_role_that_may_make_both(dashboard, merchant):
    admin = dashboard(merchant.merchant_id, "admin").get("/batches").text
    assert "<legend>What the file holds</legend>" in admin
    assert 'type="radio" name="kind" value="payout" checked' in admin
    assert 'type="radio" name="kind" value="refund"' in admin
    assert ">CSV file (UTF-8, first line names the columns)</label>" in admin
    for role, kind in (("payouts", "payout"), ("finance", "refund")):
        page = dashboard(merchant.merchant_id, role).get("/batches").text
        assert "What the file holds" not in page and 'type="radio"' not in page, role
        assert f'<input type="hidden" name="kind" value="{kind}">' in page
        assert f">CSV file of {kind}s (UTF-8, first line names the columns)</label>" in page


def test_a_review_longer_than_the_page_says_which_rows_are_not_shown(dashboard, merchant, monkeypatch):
    from app.dashboard import batches as batch_pages

    monkeypatch.setattr(batch_pages, "MAX_SHOWN_ROWS", 1)  # the page's limit, as a 1,001-row file meets it
    payouts = dashboard(merchant.merchant_id, "payouts")
    switch_to_sandbox(payouts)
    checked = payouts.post("/batches", {"kind": "payout"}, files={"file": ("salaries.csv", FILE, "text/csv")},
                           allow_redirects=True)

    assert re.findall(r'<td data-label="Status">([^<]*)</td>', checked.text) == ["Invalid"]  # errors first
    assert "1 more row is not shown here: the rows with errors come first." in checked.text
    assert "results file" not in checked.text  # there is none until the batch runs
