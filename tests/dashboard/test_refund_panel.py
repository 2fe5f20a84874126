"""The refund panel: the service's rules and messages, a confirmation step, exact amounts, audit."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from app.payments.schemas import max_length
from app.store.tables import audit_log

from .conftest import SANDBOX, switch_to_sandbox

REMAINING = '<dd id="remaining-refundable"><span class="money"><span class="money-amount">{}</span>'
HTMX = {"HX-Request": "true"}


@pytest.fixture
def panel(finance):
    switch_to_sandbox(finance)
    return finance


def _htmx_post(client, path, data):
    return client.post(path, data, headers={"HX-Request": "true", "X-CSRFToken": client.csrf}, csrf=False)


def test_review_asks_for_confirmation_and_changes_nothing(panel, captured_payment, sandbox):
    tx_no = captured_payment(100)
    review = _htmx_post(panel, f"/transactions/{tx_no}/refund/review",
                        {"amount": "30.00", "reason": "Damaged"})
    assert review.status_code == 200
    assert "Confirm refund of 30.00 EUR" in review.text
    assert review.text.lstrip().startswith('<section class="card refund-panel" id="refund-panel"')
    assert sandbox.status(tx_no)["Status"] == "Captured"
    assert "No refunds." in panel.get(f"/transactions/{tx_no}").text


def test_the_panel_inputs_hold_what_the_api_holds(panel, captured_payment):
    page = panel.get(f"/transactions/{captured_payment(100)}").text
    assert f'name="reason" type="text" maxlength="{max_length("RefundRequest.reason")}"' in page
    assert f'name="description" rows="2" maxlength="{max_length("RefundRequest.description")}"' in page


def test_confirmed_refund_swaps_in_the_new_remaining_amount(panel, captured_payment):
    tx_no = captured_payment(100)
    done = _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "30.00", "reason": "Damaged"})
    assert done.status_code == 200
    assert REMAINING.format("70.00") in done.text
    assert "is Captured." in done.text
    assert 'id="tx-status" class="tx-status" hx-swap-oob="true"' in done.text  # status, refunds, history too
    full = _htmx_post(panel, f"/transactions/{tx_no}/refund/review", {"full": "1", "amount": "1"})
    assert "Confirm refund of 70.00 EUR" in full.text
    finished = _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "70.00"})
    assert REMAINING.format("0.00") in finished.text
    assert "Refunded in full: nothing left to refund." in finished.text
    assert '<span class="badge badge-refunded">Refunded</span>' in finished.text


@pytest.mark.parametrize("amount, message", [
    ("80", "Refund amount (80.00) exceeds remaining refundable amount (70.00)"),
    ("120", "Refund amount (120.00) cannot exceed original transaction amount (100.00)"),
    ("0", "Amount must be greater than 0"),
    ("-5", "Amount must be a number"),
    ("ten", "Amount must be a number"),
    ("", "Amount is required"),
    ("1.005", "Amount has more decimal places than EUR allows (2)"),
])
def test_errors_are_the_services_messages_and_change_nothing(panel, captured_payment, sandbox,
                                                             amount, message):
    tx_no = captured_payment(100)
    _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "30"})
    for step in ("refund/review", "refund"):
        answer = _htmx_post(panel, f"/transactions/{tx_no}/{step}", {"amount": amount})
        assert answer.status_code == 422
        assert message in answer.text
        assert REMAINING.format("70.00") in answer.text
    assert sandbox.status(tx_no)["Status"] == "Captured"
    refunds = panel.get(f"/transactions/{tx_no}").text.split('id="refunds"')[1].split("</section>")[0]
    assert refunds.count(f'href="{SANDBOX}/transactions/RFD-') == 1  # the first only



# Typed amounts the default decimal context would round (or underflow to zero): refused on
# the form with the field's message, shown back exactly as typed, nothing refunded.
TYPED_AMOUNTS = [
    ("10.000000000000000000000000000001", "Amount has too many decimal places"),
    ("99.999999999999999999999999999999", "Amount has too many decimal places"),
    ("9.99999999999999999999999999999999", "Amount has too many decimal places"),
    ("0.0000001", "Amount has too many decimal places"),
    ("1e-1000000000", "Amount must be a number"),
    ("1E+5", "Amount must be a number"),
    ("1" * 5000, "Amount must be at most 1000000000"),
    ("5" + "0" * 30 + ".00", "Amount must be at most 1000000000"),
]


@pytest.mark.parametrize("typed, message", TYPED_AMOUNTS)
def test_typed_amounts_are_never_rounded(panel, captured_payment, sandbox, typed, message):
    tx_no = captured_payment(10)
    for step in ("refund/review", "refund"):
        answer = _htmx_post(panel, f"/transactions/{tx_no}/{step}", {"amount": typed})
        assert answer.status_code == 422
        assert f'<ul class="field-errors" id="refund-amount-errors"><li>{message}</li></ul>' in answer.text
        assert f'name="amount" type="text" inputmode="decimal" autocomplete="off"\n                 value="{typed}"' in answer.text
    assert sandbox.status(tx_no)["Status"] == "Captured"
    assert "No refunds." in panel.get(f"/transactions/{tx_no}").text

def test_the_dashboard_gives_the_api_s_message_for_the_same_refund(panel, captured_payment, sandbox):
    tx_no = captured_payment(50)
    api = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 60})
    dashboard = _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "60"})
    assert api.json()["error"] in dashboard.text


def test_amounts_are_read_exactly(panel, captured_payment):
    tx_no = captured_payment(0.3)
    _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "0.1"})
    _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "0.1"})
    last = _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "0.10"})
    assert REMAINING.format("0.00") in last.text  # 0.1 + 0.1 + 0.1 is exactly 0.3


def test_not_captured_payments_explain_why_they_cannot_be_refunded(panel):
    page = panel.get("/transactions/SBX-PENDING").text
    assert "Only Captured payments can be refunded; this one is Pending." in page
    # nothing is refundable until it is Captured, so no "Remaining refundable" of its whole amount
    assert 'id="remaining-refundable"' not in page and "Remaining refundable" not in page
    declined = panel.get("/transactions/SBX-DECLINED").text
    assert '<strong>Decline reason:</strong> Insufficient Funds' in declined


def test_without_javascript_the_refund_redirects_back_to_the_page(panel, captured_payment):
    tx_no = captured_payment(100)
    review = panel.post(f"/transactions/{tx_no}/refund/review", {"amount": "40"})
    assert review.text.startswith("<!doctype html>") and "Confirm refund of 40.00 EUR" in review.text
    done = panel.post(f"/transactions/{tx_no}/refund", {"amount": "40"})
    assert done.status_code == 303
    assert done.headers["Location"] == f"{SANDBOX}/transactions/{tx_no}#refund"
    assert "of 40.00 EUR is Captured." in panel.get(f"/transactions/{tx_no}").text


def test_declined_refunds_say_so_and_free_their_amount(panel):
    answer = _htmx_post(panel, "/transactions/SBX-REFUND-DECLINED/refund", {"amount": "10"})
    assert "was Declined by the provider" in answer.text
    assert REMAINING.format("100.00") in answer.text


def test_each_refund_is_audited_with_the_user_and_address(panel, captured_payment, app, merchant):
    tx_no = captured_payment(100)
    _htmx_post(panel, f"/transactions/{tx_no}/refund", {"amount": "12.50", "reason": "Late"})
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                       audit_log.c.action == "refund.create")).one()
    assert row.actor.startswith("finance-") and row.ip == "127.0.0.1"
    assert (row.amount_minor, row.currency, row.mode) == (1250, "EUR", "sandbox")
    assert "refund.create" in panel.get("/audit").text


def _confirm_key(review_html: str) -> str:
    return review_html.split('name="request_key" value="')[1].split('"')[0]


def test_submitting_the_same_confirmation_twice_refunds_once(panel, captured_payment, sandbox):
    tx_no = captured_payment(100)
    review = panel.post(f"/transactions/{tx_no}/refund/review", {"amount": "40"})
    key = _confirm_key(review.text)
    first = panel.post(f"/transactions/{tx_no}/refund", {"amount": "40", "request_key": key})
    second = panel.post(f"/transactions/{tx_no}/refund", {"amount": "40", "request_key": key})
    assert first.status_code == second.status_code == 303
    page = panel.get(f"/transactions/{tx_no}").text
    assert page.count("40.00") >= 1
    assert REMAINING.format("60.00") in page  # one refund of 40.00, not two
    other_amount = panel.post(f"/transactions/{tx_no}/refund", {"amount": "10", "request_key": key})
    assert "This refund form was already used for another amount" in other_amount.text
    assert REMAINING.format("60.00") in panel.get(f"/transactions/{tx_no}").text


@pytest.mark.parametrize("step", ["refund/review", "refund"])
def test_a_refund_posted_on_a_refund_is_refused_not_a_server_error(panel, step):
    refund_no = _htmx_post(panel, "/transactions/SBX-CAPTURED/refund",
                           {"amount": "10.00", "reason": "Damaged"})
    assert refund_no.status_code == 200
    refund_tx = next(word for word in refund_no.text.split() if word.startswith("RFD-"))
    answer = _htmx_post(panel, f"/transactions/{refund_tx}/{step}", {"amount": "1.00"})
    assert answer.status_code == 422
    assert "Only payments can be refunded" in answer.text


def test_the_refunds_fragment_polls_while_a_refund_is_pending_and_stops_after(dashboard, merchant, sandbox,
                                                                           server):
    from datetime import timedelta

    from app.payments import settlement
    from tests.store.test_worker import deps_at

    support = dashboard(merchant.merchant_id, "support")  # reading refunds needs no refund permission
    switch_to_sandbox(support)
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 1}).json()
    polling = support.get("/transactions/SBX-REFUND-ASYNC/refunds", headers=HTMX)
    assert polling.status_code == 200
    assert 'hx-trigger="every 2s"' in polling.text and refund["refundTxNo"] in polling.text
    assert 'id="tx-status" class="tx-status" hx-swap-oob="true"' in polling.text

    later = deps_at(server.app, timedelta(seconds=3))
    while settlement.run_due_provider_checks(later):  # other tests' due work may come first
        pass
    settled = support.get("/transactions/SBX-REFUND-ASYNC/refunds", headers=HTMX)
    assert "hx-trigger" not in settled.text  # nothing Pending: the page stops asking
    assert support.get("/transactions/SBX-NONE/refunds").status_code == 404


def test_what_a_lost_dispute_took_back_is_a_line_of_the_arithmetic(panel, captured_payment, sandbox):
    tx_no = captured_payment(100)
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 30}).status_code == 200
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
    [dispute] = [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]
    assert sandbox.post(f"/sandbox/disputes/{dispute['disputeId']}/outcome", {"outcome": "lost"}).status_code == 200

    page = panel.get(f"/transactions/{tx_no}").text

    lost = f'<dt>Lost to disputes</dt><dd id="lost-to-disputes"><span class="money"><span class="money-amount">'
    assert lost + f'{dispute["amount"]:.2f}</span>' in page
