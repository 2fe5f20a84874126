"""The Cancel payment button: who sees it, a confirm step, the service's outcome as a flash message."""
from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from app.payments import settlement
from app.payments.provider import ProviderUnavailable
from app.providers.simulator import SimulatorProvider
from app.store.merchants import create_merchant
from app.store.tables import audit_log
from tests.conftest import Api, payment_body

from .conftest import SANDBOX, switch_to_sandbox

BUTTON = '<button type="submit" class="button danger-outline">Cancel payment</button>'
CONFIRM = '<button type="submit" class="button danger" id="confirm-cancel" data-focus-after-swap>Confirm cancel</button>'
DECLINE_BANNER = "<strong>Decline reason:</strong> Payment Cancelled By User"
HTMX = {"HX-Request": "true"}


def _payment(sandbox, *outcomes: str) -> str:
    created = sandbox.post("/transactions", payment_body())
    assert created.status_code == 200, created.text
    tx_no = created.json()["transactionId"]
    for status in outcomes:
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": status}).status_code == 200
    return tx_no


def _in_sandbox(dashboard, merchant, role: str):
    client = dashboard(merchant.merchant_id, role)
    switch_to_sandbox(client)
    return client


def _htmx_post(client, path: str, data: dict):
    return client.post(path, data, headers={**HTMX, "X-CSRFToken": client.csrf}, csrf=False)


@pytest.fixture
def finance_in_sandbox(dashboard, merchant):
    return _in_sandbox(dashboard, merchant, "finance")


@pytest.mark.parametrize("role", ["finance", "admin"])
@pytest.mark.parametrize("outcomes", [(), ("Authorized",)])
def test_finance_and_admin_see_the_button_on_pending_and_authorized_payments(dashboard, merchant, sandbox,
                                                                             role, outcomes):
    tx_no = _payment(sandbox, *outcomes)
    page = _in_sandbox(dashboard, merchant, role).get(f"/transactions/{tx_no}")
    assert page.status_code == 200
    assert BUTTON in page.text
    assert f'action="{SANDBOX}/transactions/{tx_no}/cancel"' in page.text


@pytest.mark.parametrize("role", ["support", "payouts"])
def test_other_roles_do_not_see_the_button(dashboard, merchant, sandbox, role):
    tx_no = _payment(sandbox)
    page = _in_sandbox(dashboard, merchant, role).get(f"/transactions/{tx_no}")
    assert page.status_code == 200
    assert "Cancel payment" not in page.text


@pytest.mark.parametrize("outcomes", [("Captured",), ("Declined",), ("Failed",)])
def test_the_button_is_not_shown_once_the_payment_is_past_pending_or_authorized(finance_in_sandbox, sandbox,
                                                                               outcomes):
    tx_no = _payment(sandbox, *outcomes)
    page = finance_in_sandbox.get(f"/transactions/{tx_no}")
    assert page.status_code == 200
    assert "Cancel payment" not in page.text


def test_the_button_is_not_shown_on_a_payout(finance_in_sandbox, sandbox):
    payout = sandbox.post("/transactions", payment_body(
        transactionAction="PAYMENT", currency="KES",
        payment={"paymentMethod": "mobile-money-payout", "holder": "Wanjiku", "accountNumber": "+254712345678"}))
    page = finance_in_sandbox.get(f"/transactions/{payout.json()['transactionId']}")
    assert page.status_code == 200
    assert "Cancel payment" not in page.text


def test_the_button_asks_for_confirmation_and_changes_nothing(finance_in_sandbox, sandbox):
    tx_no = _payment(sandbox)
    review = _htmx_post(finance_in_sandbox, f"/transactions/{tx_no}/cancel", {})
    assert review.status_code == 200
    assert review.text.lstrip().startswith('<section class="card cancel-panel" id="cancel-panel"')
    assert CONFIRM in review.text
    assert '<input type="hidden" name="step" value="confirm">' in review.text
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_without_javascript_the_confirm_step_is_the_whole_page(finance_in_sandbox, sandbox):
    tx_no = _payment(sandbox)
    review = finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {})
    assert review.status_code == 200
    assert review.text.lstrip().startswith("<!doctype html>")
    assert CONFIRM in review.text
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_confirming_cancels_and_the_page_shows_declined_with_a_flash_message(finance_in_sandbox, sandbox, app,
                                                                           merchant):
    tx_no = _payment(sandbox)
    done = finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"})
    assert (done.status_code, done.headers["Location"]) == (303, f"{SANDBOX}/transactions/{tx_no}")
    status = sandbox.status(tx_no)
    assert (status["Status"], status["DeclineReason"]) == ("Declined", "Payment Cancelled By User")
    page = finance_in_sandbox.get(f"/transactions/{tx_no}").text
    assert (f'<div class="alert alert-success" role="status">Payment {tx_no} is cancelled: '
            "Declined, Payment Cancelled By User.</div>") in page
    assert '<span class="badge badge-declined">Declined</span>' in page
    assert DECLINE_BANNER in page
    assert "Cancel payment" not in page
    with app.extensions["paydesk"].uow(write=False) as uow:
        audit = uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                         audit_log.c.action == "payment.cancel")).one()
    assert (audit.target, audit.mode) == (tx_no, "sandbox")
    assert audit.actor.startswith("finance-") and audit.actor.endswith("@shop.test")


def test_an_htmx_confirm_reloads_the_page(finance_in_sandbox, sandbox):
    tx_no = _payment(sandbox, "Authorized")
    done = _htmx_post(finance_in_sandbox, f"/transactions/{tx_no}/cancel", {"step": "confirm"})
    assert (done.status_code, done.headers["HX-Redirect"], done.text) == (204, f"{SANDBOX}/transactions/{tx_no}", "")
    assert sandbox.status(tx_no)["Status"] == "Declined"
    assert "is cancelled: Declined, Payment Cancelled By User." in finance_in_sandbox.get(
        f"/transactions/{tx_no}").text


def test_a_cancel_refused_at_confirmation_is_a_flash_error_and_changes_nothing(finance_in_sandbox, sandbox):
    tx_no = _payment(sandbox)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    refused = finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"})
    assert refused.status_code == 303
    page = finance_in_sandbox.get(f"/transactions/{tx_no}").text
    assert ('<div class="alert alert-error" role="status">Only Pending or Authorized transactions can be '
            "cancelled. Current status: Captured</div>") in page
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_a_cancel_refused_at_review_is_shown_in_the_panel(finance_in_sandbox, sandbox):
    tx_no = _payment(sandbox, "Captured")
    refused = _htmx_post(finance_in_sandbox, f"/transactions/{tx_no}/cancel", {})
    assert refused.status_code == 422
    assert ('<div class="alert alert-error" role="alert" id="cancel-error" tabindex="-1" data-focus-after-swap '
            'data-announce>Only Pending or Authorized '
            "transactions can be cancelled. Current status: Captured</div>") in refused.text
    assert "Confirm cancel" not in refused.text
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_an_unreachable_provider_is_a_flash_error_and_changes_nothing(finance_in_sandbox, sandbox, monkeypatch):
    tx_no = _payment(sandbox)

    def unreachable(_self, _tx):
        raise ProviderUnavailable("connect timeout")

    monkeypatch.setattr(SimulatorProvider, "cancel", unreachable)
    assert finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"}).status_code == 303
    page = finance_in_sandbox.get(f"/transactions/{tx_no}").text
    assert ('<div class="alert alert-error" role="status">The provider could not be reached; nothing was '
            "changed. Try again.</div>") in page
    assert BUTTON in page
    assert sandbox.status(tx_no)["Status"] == "Pending"


@pytest.mark.parametrize("role", ["support", "payouts"])
def test_other_roles_get_403_and_nothing_changes(dashboard, merchant, sandbox, role):
    tx_no = _payment(sandbox)
    client = _in_sandbox(dashboard, merchant, role)
    for step in ("", "confirm"):
        refused = client.post(f"/transactions/{tx_no}/cancel", {"step": step})
        assert refused.status_code == 403
        assert "Your role does not allow this action." in refused.text
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_a_post_without_the_csrf_token_is_refused(finance_in_sandbox, sandbox):
    tx_no = _payment(sandbox)
    refused = finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"}, csrf=False)
    assert refused.status_code == 400
    assert "This form has expired or did not come from Paydesk." in refused.text
    assert sandbox.status(tx_no)["Status"] == "Pending"


def test_another_merchants_payment_is_not_found_and_untouched(finance_in_sandbox, server):
    app = server.app
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    other_api = Api(server.url, other.sandbox_token)
    tx_no = _payment(other_api)
    refused = finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"})
    assert refused.status_code == 404
    assert "There is nothing here in this mode." in refused.text
    assert other_api.status(tx_no)["Status"] == "Pending"


def test_a_live_view_cannot_cancel_a_sandbox_payment(dashboard, merchant, sandbox):
    tx_no = _payment(sandbox)
    live_view = dashboard(merchant.merchant_id, "finance")
    assert live_view.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"}).status_code == 404
    assert sandbox.status(tx_no)["Status"] == "Pending"


REQUESTED_FLASH = '<div class="alert alert-success" role="status">Cancellation requested; the provider is being asked</div>'


def test_through_a_provider_behind_a_network_the_cancel_is_requested_and_the_page_shows_it_pending(
        finance_in_sandbox, sandbox, app, simulator_behind_a_network):
    deps = app.extensions["paydesk"]
    tx_no = _payment(sandbox)
    settlement.run_due_provider_checks(deps)  # a worker opens it at the provider
    done = finance_in_sandbox.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"})
    assert (done.status_code, done.headers["Location"]) == (303, f"{SANDBOX}/transactions/{tx_no}")
    status = sandbox.status(tx_no)
    assert (status["Status"], status["ProviderMessage"]) == ("Pending", "Cancellation requested; waiting for the provider")

    page = finance_in_sandbox.get(f"/transactions/{tx_no}").text
    assert REQUESTED_FLASH in page
    assert '<p class="cancel-requested" id="cancel-requested">Cancellation requested' in page
    assert "the provider is being asked." in page
    assert BUTTON not in page  # nothing more to ask for
    assert DECLINE_BANNER not in page

    settlement.run_due_provider_checks(deps)  # the worker asks the provider to void it
    page = finance_in_sandbox.get(f"/transactions/{tx_no}").text
    assert DECLINE_BANNER in page
    assert "cancel-requested" not in page and "Cancel payment" not in page
