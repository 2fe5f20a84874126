"""Webhook pages: deliveries with their attempts, Resend (audited), and the inbox log."""
from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
import requests
from sqlalchemy import select, update
from standardwebhooks.webhooks import Webhook

from app.dashboard import webhooks as webhook_pages
from app.store.tables import audit_log, transactions, webhook_events
from app.webhooks.log import DELIVERY_STATES
from tests.conftest import payment_body

from .conftest import SANDBOX, switch_to_sandbox


@pytest.fixture
def event(sandbox, merchant):
    """A captured sandbox payment whose webhook goes to the merchant's inbox; returns its txNo."""
    created = sandbox.post("/transactions", payment_body(callbackUrl=merchant.inbox_url))
    tx_no = created.json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    return tx_no


@pytest.fixture
def sandbox_finance(finance):
    switch_to_sandbox(finance)
    return finance


def test_deliveries_list_the_event_its_state_and_payload(sandbox_finance, event):
    page = sandbox_finance.get("/webhooks").text
    assert "payment.captured" in page and event in page
    assert f"&#34;txNo&#34;: &#34;{event}&#34;" in page  # the exact body sent, indented
    detail = sandbox_finance.get(f"/transactions/{event}").text
    assert "payment.captured" in detail


def test_resend_queues_a_new_attempt_and_is_audited(sandbox_finance, event, app, merchant):
    page = sandbox_finance.get("/webhooks").text
    webhook_id = page.split('id="delivery-', 1)[1].split('"', 1)[0]
    answer = sandbox_finance.post(f"/webhooks/{webhook_id}/resend", csrf=False,
                                  headers={"HX-Request": "true", "X-CSRFToken": sandbox_finance.csrf})
    assert answer.status_code == 200
    assert answer.text.lstrip().startswith(f'<article class="delivery" id="delivery-{webhook_id}"')
    assert "Queued: the worker sends it again within seconds." in answer.text
    with app.extensions["paydesk"].uow(write=False) as uow:
        audit = uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                         audit_log.c.action == "webhook.resend")).one()
    assert audit.target == webhook_id and audit.actor.startswith("finance-") and audit.mode == "sandbox"
    assert sandbox_finance.post("/webhooks/msg_unknown/resend").status_code == 404


@pytest.mark.parametrize("back,location", [
    (SANDBOX + "/webhooks?page=2", SANDBOX + "/webhooks?page=2"),
    ("/\t/evil.example/path", SANDBOX + "/webhooks"),
    ("/\\evil.example", SANDBOX + "/webhooks"),
    (" https://evil.example/", SANDBOX + "/webhooks"),
])
def test_resend_goes_back_only_to_a_page_of_this_site(sandbox_finance, event, back, location):
    page = sandbox_finance.get("/webhooks").text
    webhook_id = page.split('id="delivery-', 1)[1].split('"', 1)[0]
    answer = sandbox_finance.post(f"/webhooks/{webhook_id}/resend", {"back": back})
    assert (answer.status_code, answer.headers["Location"]) == (303, location)


def test_the_inbox_shows_verified_invalid_and_duplicate_messages(sandbox_finance, merchant):
    body = json.dumps({"txNo": f"TEST-{uuid.uuid4().hex[:6]}", "status": "Captured"})
    msg_id = f"msg_{uuid.uuid4().hex[:12]}"
    now = datetime.now(UTC)
    signature = Webhook(merchant.sandbox_webhook_secret).sign(msg_id, now, body)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": signature, "Content-Type": "application/json"}
    assert requests.post(merchant.inbox_url, data=body, headers=headers, timeout=30).status_code == 204
    requests.post(merchant.inbox_url, data=body, headers=headers, timeout=30)
    requests.post(merchant.inbox_url, data="forged", headers={**headers, "webhook-id": "msg_forged"},
                  timeout=30)
    page = sandbox_finance.get("/webhooks/inbox").text
    assert merchant.inbox_url in page
    assert page.count("Signature verified") == 2 and page.count("Signature invalid") == 1
    assert page.count('<span class="state state-pending">Duplicate</span>') == 1
    assert msg_id in page and "Webhook-Signature" in page


def test_a_resent_delivery_polls_until_its_new_attempt_is_made(sandbox_finance, event, app, merchant):
    from app.webhooks.dispatcher import deliver_due
    from app.webhooks.settings import DeliverySettings

    htmx = {"HX-Request": "true"}
    deliver_due(app.extensions["paydesk"], DeliverySettings.from_config(app.config),
                merchant.merchant_id)
    page = sandbox_finance.get("/webhooks").text
    webhook_id = page.split('id="delivery-', 1)[1].split('"', 1)[0]
    attempts = int(page.split('id="delivery-', 1)[1].split("<dt>Attempts</dt><dd>", 1)[1].split("<", 1)[0])
    assert "/progress" not in page  # nothing polls before a resend
    answer = sandbox_finance.post(f"/webhooks/{webhook_id}/resend", headers=htmx)
    progress = f"/webhooks/{webhook_id}/progress?after={attempts}"
    assert f'hx-get="{SANDBOX}{progress}" hx-trigger="every 2s"' in answer.text
    assert 'tabindex="-1" data-focus-after-swap data-announce>Queued' in answer.text
    waiting = sandbox_finance.get(progress, headers=htmx)
    assert (waiting.status_code, waiting.text) == (204, "")

    deliver_due(app.extensions["paydesk"], DeliverySettings.from_config(app.config),
                merchant.merchant_id)
    done = sandbox_finance.get(progress, headers=htmx)
    assert done.status_code == 200
    assert done.text.lstrip().startswith(f'<article class="delivery" id="delivery-{webhook_id}"')
    assert "hx-trigger" not in done.text  # the new attempt stops the polling
    assert f"Attempt {attempts + 1}: HTTP 204; the delivery is delivered." in done.text
    assert 'data-focus-if-lost data-announce>' in done.text
    assert '<details class="delivery-details" open>' in done.text
    assert sandbox_finance.get(f"/webhooks/{webhook_id}/progress?after=x").status_code == 404
    assert sandbox_finance.get("/webhooks/msg_unknown/progress?after=0").status_code == 404


def _delivery_in_state(sandbox, app, merchant, state: str) -> str:
    """A new captured payment's webhook, put in `state`; its webhook-id."""
    tx_no = sandbox.post("/transactions", payment_body(callbackUrl=merchant.inbox_url)).json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    with app.extensions["paydesk"].uow() as uow:
        row_id, webhook_id = uow.conn.execute(
            select(webhook_events.c.id, webhook_events.c.webhook_id)
            .join(transactions, transactions.c.id == webhook_events.c.transaction_id)
            .where(transactions.c.tx_no == tx_no)).one()
        uow.conn.execute(update(webhook_events).where(webhook_events.c.id == row_id).values(state=state))
        uow.commit()
    return webhook_id


def test_the_state_filter_shows_only_the_deliveries_in_that_state(sandbox_finance, sandbox, app, merchant,
                                                                 monkeypatch):
    ids = {state: _delivery_in_state(sandbox, app, merchant, state) for state in DELIVERY_STATES}
    for state in DELIVERY_STATES:
        page = sandbox_finance.get(f"/webhooks?state={state}").text
        assert {shown for shown, webhook_id in ids.items() if f'id="delivery-{webhook_id}"' in page} == {state}
        assert f'<option value="{state}" selected>{state.capitalize()}</option>' in page
    everything = sandbox_finance.get("/webhooks").text
    assert all(f'id="delivery-{webhook_id}"' in everything for webhook_id in ids.values())

    monkeypatch.setattr(webhook_pages, "PAGE_SIZE", 1)  # the pages keep the filter
    _delivery_in_state(sandbox, app, merchant, "pending")  # two pending: two pages of one
    paged = sandbox_finance.get("/webhooks?state=pending").text
    assert 'rel="next" href="/test/webhooks?state=pending&amp;page=2"' in paged
    assert 'rel="prev" href="/test/webhooks?state=pending&amp;page=1"' in sandbox_finance.get(
        "/webhooks?state=pending&page=2").text

    unknown = sandbox_finance.get("/webhooks?state=lost").text
    assert '<div class="alert alert-error" role="alert">Unknown state &#39;lost&#39;</div>' in unknown
    assert 'id="delivery-' not in unknown
