"""The batch page as its user reads it: row statuses in words. Both databases."""
from __future__ import annotations

import html
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


def test_a_running_batchs_poll_redraws_only_what_moved(dashboard, merchant, server):
    """The page polls every 1.5 s while a batch runs: a poll that saw the batch as it is gets 204
    (nothing redrawn, its rows not read); once a row is made, the next poll redraws the rows."""
    from app.payments import batches

    payouts = dashboard(merchant.merchant_id, "payouts")
    switch_to_sandbox(payouts)
    checked = payouts.post("/batches", {"kind": "payout"}, files={"file": ("salaries.csv", FILE, "text/csv")},
                           allow_redirects=True)
    running = payouts.post(f"{checked.url.removeprefix(server.url)}/run", {}, allow_redirects=True)
    assert "Running: 0 of 1 rows done." in running.text
    poll = html.unescape(re.search(r'id="batch-progress"[^>]* hx-get="([^"]+)"', running.text).group(1))
    as_drawn = payouts.get(poll, headers={"HX-Request": "true"})
    assert (as_drawn.status_code, as_drawn.text) == (204, "")
    assert payouts.get(poll).status_code == 200  # not htmx's poll: the page, whatever it saw

    assert batches.run_due_batches(server.app.extensions["paydesk"]) == 1
    moved = payouts.get(poll, headers={"HX-Request": "true"})
    assert moved.status_code == 200
    assert "Done: 1 created, 0 failed, 1 skipped." in moved.text
    assert re.findall(r'<td data-label="Status">([^<]*)</td>', moved.text) == ["Pending", "Skipped"]
    assert "hx-get" not in moved.text.split('id="batch-progress"')[1].split(">")[0]  # done: no more polls


def test_a_made_rows_payout_that_moves_is_redrawn_though_no_row_did(dashboard, merchant, server, sandbox):
    """A made row shows its payout's status: the mark a poll compares moves with it, though no
    row's own state did."""
    from app.payments import batches
    from app.payments.model import Caller, Mode

    deps = server.app.extensions["paydesk"]
    payouts = dashboard(merchant.merchant_id, "payouts")
    switch_to_sandbox(payouts)
    checked = payouts.post("/batches", {"kind": "payout"}, files={"file": ("salaries.csv", FILE, "text/csv")},
                           allow_redirects=True)
    path = checked.url.removeprefix(server.url)
    payouts.post(f"{path}/run", {}, allow_redirects=True)
    assert batches.run_due_batches(deps) == 1

    def mark() -> str:
        return batches.progress_mark(deps, batches.get_batch(deps, Caller(merchant.merchant_id, Mode.SANDBOX,
                                                                          "test"), path.rsplit("/", 1)[1]))

    made = mark()
    made_links = r'data-label="Transaction"><a class="mono" href="[^"]+">([^<]+)</a>'
    [tx_no] = re.findall(made_links, payouts.get(path).text)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    assert mark() != made
    moved = payouts.get(f"{path}?seen={made}", headers={"HX-Request": "true"})
    assert moved.status_code == 200
    assert re.findall(r'<td data-label="Status">([^<]*)</td>', moved.text) == ["Captured", "Skipped"]
    assert payouts.get(f"{path}?seen={mark()}", headers={"HX-Request": "true"}).status_code == 204
