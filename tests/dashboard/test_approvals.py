"""Four eyes in the dashboard: thresholds and limits set by an admin, refunds and payouts above the
threshold left for a second user, decided on the Approvals page or the transaction's page, audited."""
from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select

from app.store.tables import audit_log, transactions

from .conftest import Browserless, add_user, switch_to_sandbox
from .test_payouts import _form as payout_form

HTMX = {"HX-Request": "true"}


def _htmx_post(client, path, data):
    return client.post(path, data, headers={"HX-Request": "true", "X-CSRFToken": client.csrf}, csrf=False)


@pytest.fixture
def dashboard(dashboard, server):
    """The conftest's factory, with the server at hand for _signed_in."""
    dashboard.server = server
    return dashboard


@pytest.fixture
def admin(dashboard, merchant):
    client = dashboard(merchant.merchant_id, "admin")
    switch_to_sandbox(client)
    return client


def _signed_in(server, merchant, role, *, sandbox: bool = True) -> Browserless:
    """A new user of the merchant with the role, signed in (client.email is theirs)."""
    client = Browserless(server.url)
    client.email = add_user(server.app, merchant.merchant_id, role)
    assert client.login(client.email).status_code == 303
    if sandbox:
        switch_to_sandbox(client)
    return client


def _user(dashboard, merchant, role):
    return _signed_in(dashboard.server, merchant, role)


def _threshold(admin, currency: str, amount: str):
    admin.get("/settings/approvals")
    response = admin.post("/settings/approvals/thresholds", {"currency": currency, "amount": amount})
    assert response.status_code == 303, response.text
    return response


def _flash(client, response) -> str:
    return html.unescape(client.get(response.headers["Location"]).text)


def _totals(app, merchant, tx_no):
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(transactions).where(
            transactions.c.tx_no == tx_no, transactions.c.merchant_id == merchant.merchant_id)).one()
    return row.refund_reserved_minor, row.refund_captured_minor, row.refund_held_minor


def _audit(app, merchant, action):
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                        audit_log.c.action == action)
                                .order_by(audit_log.c.id)).all()


def _approval_id(page: str) -> str:
    """The id of the (first) request a page offers to decide."""
    return re.search(r"/approvals/(\d+)/(?:approve|reject)", page).group(1)


def test_an_admin_sets_a_threshold_and_it_is_audited(admin, app, merchant):
    _threshold(admin, "EUR", "50")
    page = admin.get("/settings/approvals").text
    assert "50.00" in page and "Needs approval above" in page
    entry, = _audit(app, merchant, "approval.threshold")
    assert (entry.target, entry.amount_minor, entry.currency) == ("EUR", 5000, "EUR")
    assert entry.detail == '{"from": "none", "to": "50.00 EUR"}'
    refused = admin.post("/settings/approvals/thresholds", {"currency": "EUR", "amount": "1.005"})
    assert refused.status_code == 422
    assert "The threshold must be an amount above 0 in EUR, like 100.00" in refused.text


def test_a_refund_above_the_threshold_waits_for_another_user(admin, dashboard, merchant, app,
                                                           captured_payment, sandbox):
    _threshold(admin, "EUR", "50")
    asker, approver = _user(dashboard, merchant, "finance"), _user(dashboard, merchant, "finance")
    tx_no = captured_payment(100)
    review = _htmx_post(asker, f"/transactions/{tx_no}/refund/review", {"amount": "70.00"})
    assert "Request approval for 70.00 EUR" in review.text
    assert "Above the approval threshold of" in review.text
    below = _htmx_post(asker, f"/transactions/{tx_no}/refund/review", {"amount": "50.00"})
    assert "Confirm refund of 50.00 EUR" in below.text  # at the threshold: no approval
    key = review.text.split('name="request_key" value="')[1].split('"')[0]
    for _ in range(2):  # a double click sends the form twice: one request
        done = _htmx_post(asker, f"/transactions/{tx_no}/refund", {"amount": "70.00", "request_key": key})
        assert done.status_code == 200
        assert "awaits another user&#39;s approval" in done.text
        assert '<dd id="awaiting-approval">' in done.text
    assert _totals(app, merchant, tx_no) == (0, 0, 7000)
    assert sandbox.status(tx_no)["Status"] == "Captured"
    page = asker.get(f"/transactions/{tx_no}").text
    assert "Refund approvals" in page and "Waiting for another user" in page
    # Awaiting and decided requests share the table: the column says which time it shows.
    assert ">Decided or expires</th>" in page and '<span class="muted small">Expires </span>' in page
    approval_id = _approval_id(approver.get(f"/transactions/{tx_no}").text)

    own = asker.post(f"/approvals/{approval_id}/approve", {"back": f"/transactions/{tx_no}"})
    assert own.status_code == 303
    assert "You asked for this one: another user must approve it." in _flash(asker, own)
    assert _totals(app, merchant, tx_no) == (0, 0, 7000)

    approved = approver.post(f"/approvals/{approval_id}/approve", {"back": f"/transactions/{tx_no}"})
    assert approved.headers["Location"] == f"/transactions/{tx_no}"
    assert "is Captured." in _flash(approver, approved)
    again = approver.post(f"/approvals/{approval_id}/approve")
    assert "This request is already approved." in _flash(approver, again)
    assert _totals(app, merchant, tx_no) == (7000, 7000, 0)
    assert len(_audit(app, merchant, "refund.create")) == 1
    assert [e.actor for e in _audit(app, merchant, "approval.request")] == [asker.email]
    assert len(_audit(app, merchant, "approval.approve")) == 1


def test_rejecting_in_the_dashboard_releases_the_held_amount(admin, dashboard, merchant, app,
                                                            captured_payment):
    _threshold(admin, "EUR", "50")
    asker, other = _user(dashboard, merchant, "finance"), _user(dashboard, merchant, "admin")
    tx_no = captured_payment(100)
    _htmx_post(asker, f"/transactions/{tx_no}/refund", {"amount": "70.00", "request_key": "k-reject"})
    listed = other.get("/approvals").text
    assert "Awaiting approval" in listed and tx_no in listed
    rejected = other.post(f"/approvals/{_approval_id(listed)}/reject", {"note": "Not agreed"})
    assert "Rejected: the refund of 70.00 EUR will not be made." in _flash(other, rejected)
    assert _totals(app, merchant, tx_no) == (0, 0, 0)
    assert len(_audit(app, merchant, "approval.reject")) == 1


def test_two_requests_that_together_exceed_the_remaining_amount_are_refused(admin, dashboard, merchant,
                                                                           captured_payment):
    _threshold(admin, "EUR", "10")
    first, second = _user(dashboard, merchant, "finance"), _user(dashboard, merchant, "finance")
    tx_no = captured_payment(100)
    _htmx_post(first, f"/transactions/{tx_no}/refund", {"amount": "60.00", "request_key": "k-1"})
    refused = _htmx_post(second, f"/transactions/{tx_no}/refund", {"amount": "50.00", "request_key": "k-2"})
    assert refused.status_code == 422
    assert "Refund amount (50.00) exceeds remaining refundable amount (40.00)" in refused.text


@pytest.mark.parametrize("role", ["support", "payouts"])
def test_a_role_that_cannot_refund_cannot_approve_a_refund(admin, dashboard, merchant, captured_payment,
                                                           role):
    _threshold(admin, "EUR", "10")
    asker = _user(dashboard, merchant, "finance")
    tx_no = captured_payment(100)
    _htmx_post(asker, f"/transactions/{tx_no}/refund", {"amount": "60.00", "request_key": "k-role"})
    approval_id = _approval_id(admin.get("/approvals").text)
    refused = _user(dashboard, merchant, role).post(f"/approvals/{approval_id}/approve")
    assert refused.status_code == 403
    assert "Your role does not allow this action." in refused.text


def test_a_users_refund_limit_is_enforced_with_a_clear_message(admin, dashboard, merchant, app,
                                                               captured_payment):
    finance = _user(dashboard, merchant, "finance")
    user_id = admin.get("/settings/approvals").text.split(f'">{finance.email} (finance)')[0] \
        .rsplit('value="', 1)[1]
    saved = admin.post("/settings/approvals/limits", {"user_id": user_id, "currency": "EUR",
                                                      "max_refund": "25", "max_payout": ""})
    assert saved.status_code == 303
    entry, = _audit(app, merchant, "user.limits")
    assert entry.target == finance.email
    tx_no = captured_payment(100)
    message = ("Your refund limit is 25.00 EUR: 30.00 EUR is above it. Ask an admin to raise it, "
               "or a colleague whose limit allows it.")
    for step in ("refund/review", "refund"):
        refused = _htmx_post(finance, f"/transactions/{tx_no}/{step}", {"amount": "30.00"})
        assert refused.status_code == 422
        assert html.escape(message) in refused.text
    assert _totals(app, merchant, tx_no) == (0, 0, 0)
    allowed = _htmx_post(finance, f"/transactions/{tx_no}/refund", {"amount": "25.00"})
    assert "is Captured." in allowed.text


def test_a_users_payout_limit_is_enforced(admin, dashboard, merchant):
    operator = _signed_in(dashboard.server, merchant, "payouts", sandbox=False)
    admin.prefix = ""  # back to live
    user_id = admin.get("/settings/approvals").text.split(f'">{operator.email} (payouts)')[0] \
        .rsplit('value="', 1)[1]
    admin.post("/settings/approvals/limits", {"user_id": user_id, "currency": "NGN",
                                              "max_refund": "", "max_payout": "1000"})
    refused = operator.post("/payouts", payout_form(amount="1000.01"))
    assert refused.status_code == 422
    assert "Your payout limit is 1000.00 NGN: 1000.01 NGN is above it." in html.unescape(refused.text)
    assert operator.post("/payouts", payout_form(amount="1000")).status_code == 303


def test_a_payout_above_the_threshold_is_made_when_another_user_approves(admin, dashboard, merchant, app):
    admin.prefix = ""  # back to live
    _threshold(admin, "NGN", "1000")
    asker = _signed_in(dashboard.server, merchant, "payouts", sandbox=False)
    approver = _signed_in(dashboard.server, merchant, "payouts", sandbox=False)
    form = payout_form(request_key="payout-key-1")
    review = html.unescape(asker.post("/payouts/review", form).text)
    assert "another user must approve this payout before it goes to the provider" in review
    assert ">Request approval</button>" in review
    for _ in range(2):  # the form sent twice: one request
        waiting = asker.post("/payouts", form)
        assert waiting.status_code == 303
        assert waiting.headers["Location"].startswith("/approvals#approval-")
    listed = approver.get("/approvals").text
    assert listed.count("/approve\"") == 1
    assert form["account_number"] not in listed and form["account_number"][-4:] in listed
    assert "awaits another user's approval" in _flash(asker, waiting)
    approved = approver.post(f"/approvals/{_approval_id(listed)}/approve")
    assert "Approved: payout POU-" in _flash(approver, approved)
    assert "This request is already approved." in _flash(
        approver, approver.post(f"/approvals/{_approval_id(listed)}/approve"))
    with app.extensions["paydesk"].uow(write=False) as uow:
        made = uow.conn.execute(select(transactions).where(
            transactions.c.merchant_id == merchant.merchant_id,
            transactions.c.reference == form["reference"])).all()
    assert len(made) == 1 and made[0].amount_minor == 15000050


def test_the_approvals_page_is_in_the_navigation_of_roles_that_can_approve(dashboard, merchant):
    for role in ("finance", "payouts", "admin"):
        assert 'href="/approvals"' in dashboard(merchant.merchant_id, role).get("/transactions").text
    support = dashboard(merchant.merchant_id, "support")
    assert 'href="/approvals"' not in support.get("/transactions").text
    assert support.get("/approvals").status_code == 403
