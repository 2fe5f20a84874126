"""GET /api/v1/webhooks lists events with their attempts; POST .../resend queues a manual attempt."""
from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select

from app.payments.model import Caller, Mode
from app.store.tables import audit_log
from app.payments.formats import iso_utc
from app.webhooks.dispatcher import deliver_due
from app.webhooks.resend import resend_event
from tests.conftest import Api, payment_body

from .conftest import attempts, event_row
from .receiver import Receiver


def captured_with_webhook(sandbox: Api, url: str) -> str:
    """A sandbox payment to `url`, moved to Captured (one webhook event); returns its txNo."""
    tx_no = sandbox.post("/transactions", payment_body(callbackUrl=url, amount=12.5)).json()[
        "transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome",
                        {"status": "Captured"}).status_code == 200
    return tx_no


def test_listing_by_tx_no_shows_the_event_payload_and_every_attempt(sandbox, deps, settings):
    with Receiver(status=500, answer=b"try later") as receiver:
        tx_no = captured_with_webhook(sandbox, receiver.url)
        deliver_due(deps, settings)
    response = sandbox.get(f"/webhooks?txNo={tx_no}")
    assert response.status_code == 200
    [webhook] = response.json()["webhooks"]
    row = event_row(deps, webhook["webhookId"])
    [delivery] = receiver.received
    assert webhook == {
        "webhookId": row.webhook_id,
        "eventType": "payment.captured",
        "txNo": tx_no,
        "url": receiver.url,
        "status": "Pending",
        "nextAttemptAt": iso_utc(row.next_attempt_at),
        "lastHttpStatus": 500,
        "lastError": None,
        "createdAt": iso_utc(row.created_at),
        "deliveredAt": None,
        "payload": json.loads(row.payload),
        "attempts": [{
            "attemptNo": 1,
            "startedAt": webhook["attempts"][0]["startedAt"],
            "durationMs": webhook["attempts"][0]["durationMs"],
            "httpStatus": 500,
            "error": None,
            "responseExcerpt": "try later",
            "manual": False,
            "requestHeaders": {name: delivery.headers[name] for name in (
                "Content-Type", "User-Agent", "webhook-id", "webhook-timestamp",
                "webhook-signature")},
        }],
    }
    assert webhook["payload"]["amount"] == 12.5
    assert '"amount": 12.50' in response.text  # exact, with the currency's digits


def test_listing_is_scoped_to_the_tokens_merchant_and_mode(sandbox, live, server, deps, settings,
                                                          receiver):
    tx_no = captured_with_webhook(sandbox, receiver.url)
    assert [w["txNo"] for w in sandbox.get("/webhooks").json()["webhooks"]] == [tx_no]
    assert live.get("/webhooks").json() == {"webhooks": []}
    missing = live.get(f"/webhooks?txNo={tx_no}")
    assert (missing.status_code, missing.json()) == (
        404, {"error": f"Transaction with TxNo {tx_no} not found"})


def test_listing_limit_is_checked(sandbox):
    for bad in ("0", "101", "ten", "²", "-1"):
        response = sandbox.get(f"/webhooks?limit={bad}")
        assert (response.status_code, response.json()) == (
            400, {"errors": {"Limit": ["Limit must be a whole number from 1 to 100"]}})


def test_resend_of_a_failed_event_makes_a_manual_attempt_and_is_audited(
        sandbox, merchant, deps, settings):
    with Receiver(status=410) as receiver:
        tx_no = captured_with_webhook(sandbox, receiver.url)
        deliver_due(deps, settings)
        [webhook] = sandbox.get(f"/webhooks?txNo={tx_no}").json()["webhooks"]
        assert webhook["status"] == "Failed"
        receiver.status = 204

        resent = sandbox.post(f"/webhooks/{webhook['webhookId']}/resend")
        assert resent.status_code == 202
        body = resent.json()
        assert (body["webhookId"], body["status"], body["lastHttpStatus"]) == (
            webhook["webhookId"], "Pending", 410)
        assert [a["attemptNo"] for a in body["attempts"]] == [1]
        assert deliver_due(deps, settings) == 1  # due at once

        first, second = receiver.wait_for(2)
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == webhook["webhookId"]
    assert first.body == second.body
    logged = attempts(deps, merchant, webhook["webhookId"])
    assert [(a.attempt_no, a.http_status, a.manual) for a in logged] == [
        (1, 410, False), (2, 204, True)]
    assert event_row(deps, webhook["webhookId"]).state == "delivered"
    with deps.uow(write=False) as uow:
        audit = uow.conn.execute(select(audit_log).where(
            audit_log.c.merchant_id == merchant.merchant_id,
            audit_log.c.action == "webhook.resend")).one()
    assert (audit.target, audit.mode, audit.actor) == (
        webhook["webhookId"], "sandbox", f"api:{merchant.sandbox_token[:12]}")
    assert audit.ip == "127.0.0.1"


def test_a_resend_starts_a_fresh_retry_schedule(sandbox, merchant, fake_deps, clock, settings):
    with Receiver(status=500) as receiver:
        tx_no = captured_with_webhook(sandbox, receiver.url)
        webhook_id = _webhook_id(sandbox, tx_no)
        for _ in range(3):
            clock.now = max(clock(), event_row(fake_deps, webhook_id).next_attempt_at)
            assert deliver_due(fake_deps, settings) == 1
        resend_event(fake_deps, Caller(merchant.merchant_id, Mode.SANDBOX, "test"), webhook_id)
        assert deliver_due(fake_deps, settings) == 1
    row = event_row(fake_deps, webhook_id)
    assert (row.attempts, row.state) == (4, "pending")
    wait = row.next_attempt_at - clock()
    assert timedelta(seconds=5) <= wait <= timedelta(seconds=5.5)  # the schedule's first step again
    assert [a.manual for a in attempts(fake_deps, merchant, webhook_id)] == [False] * 3 + [True]


def _webhook_id(sandbox: Api, tx_no: str) -> str:
    [webhook] = sandbox.get(f"/webhooks?txNo={tx_no}").json()["webhooks"]
    return webhook["webhookId"]


def test_resend_of_unknown_or_foreign_webhook_is_404(sandbox, live, receiver):
    tx_no = captured_with_webhook(sandbox, receiver.url)
    [webhook] = sandbox.get(f"/webhooks?txNo={tx_no}").json()["webhooks"]
    for client, webhook_id in ((sandbox, "msg_nope"), (live, webhook["webhookId"])):
        response = client.post(f"/webhooks/{webhook_id}/resend")
        assert (response.status_code, response.json()) == (
            404, {"error": f"Webhook {webhook_id} not found"})


def test_webhook_endpoints_need_a_token(server):
    anonymous = Api(server.url, "not-a-token")
    for response in (anonymous.get("/webhooks"), anonymous.post("/webhooks/msg_x/resend")):
        assert (response.status_code, response.json()) == (
            401, {"error": "Authentication Error", "message": "Invalid client credentials"})

