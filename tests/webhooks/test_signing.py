"""Every delivery carries Standard Webhooks headers that the reference verifier accepts."""
from __future__ import annotations

import json

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.payments.model import Mode
from app.store.merchants import new_webhook_secret, rotate_webhook_secret
from app.webhooks.dispatcher import deliver_due
from tests.conftest import payment_body

from .conftest import enqueue_events, event_row


def test_sandbox_status_change_arrives_signed_and_verifies(sandbox, merchant, deps, settings,
                                                          receiver):
    created = sandbox.post("/transactions", payment_body(callbackUrl=receiver.url))
    tx_no = created.json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome",
                        {"status": "Captured"}).status_code == 200

    assert deliver_due(deps, settings) == 1
    [delivery] = receiver.wait_for(1)
    payload = Webhook(merchant.sandbox_webhook_secret).verify(delivery.body, delivery.headers)
    assert payload["txNo"] == tx_no
    assert payload["status"] == "Captured"
    assert payload["transactionType"] == "Payment"
    assert payload["originalTxNo"] is None
    assert delivery.headers["Content-Type"] == "application/json"
    assert delivery.headers["webhook-id"].startswith("msg_")
    assert delivery.headers["webhook-signature"].startswith("v1,")
    row = event_row(deps, delivery.headers["webhook-id"])
    assert (row.state, row.attempts, row.last_http_status) == ("delivered", 1, 204)
    assert delivery.body == row.payload


def test_tampered_body_does_not_verify(merchant, deps, settings, receiver):
    enqueue_events(deps, merchant.merchant_id, receiver.url)
    deliver_due(deps, settings)
    [delivery] = receiver.wait_for(1)
    body = json.loads(delivery.body)
    body["amount"] = 1_000_000
    with pytest.raises(WebhookVerificationError):
        Webhook(merchant.sandbox_webhook_secret).verify(json.dumps(body), delivery.headers)


def test_wrong_secret_does_not_verify(merchant, deps, settings, receiver):
    enqueue_events(deps, merchant.merchant_id, receiver.url)
    deliver_due(deps, settings)
    [delivery] = receiver.wait_for(1)
    for secret in (new_webhook_secret(), merchant.live_webhook_secret):
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(delivery.body, delivery.headers)


def test_live_events_are_signed_with_the_live_secret(merchant, deps, settings, receiver):
    enqueue_events(deps, merchant.merchant_id, receiver.url, mode=Mode.LIVE)
    deliver_due(deps, settings)
    [delivery] = receiver.wait_for(1)
    Webhook(merchant.live_webhook_secret).verify(delivery.body, delivery.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(merchant.sandbox_webhook_secret).verify(delivery.body, delivery.headers)


def test_after_rotation_both_old_and_new_secret_verify(merchant, deps, settings, receiver):
    with deps.uow() as uow:
        new_secret = rotate_webhook_secret(uow, merchant.merchant_id, Mode.SANDBOX)
        uow.commit()
    enqueue_events(deps, merchant.merchant_id, receiver.url)
    deliver_due(deps, settings)
    [delivery] = receiver.wait_for(1)
    assert len(delivery.headers["webhook-signature"].split(" ")) == 2
    Webhook(new_secret).verify(delivery.body, delivery.headers)
    Webhook(merchant.sandbox_webhook_secret).verify(delivery.body, delivery.headers)
