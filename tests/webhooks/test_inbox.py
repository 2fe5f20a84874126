"""The merchant's inbox verifies what arrives with the merchant's secrets and logs all of it."""
from __future__ import annotations

import json
from datetime import UTC, datetime

import requests

from app.payments.model import Caller, Mode
from app.store.merchants import new_webhook_secret
from app.webhooks import endpoints, log
from app.webhooks.signing import signed_headers

BODY = json.dumps({"txNo": "RF-1", "status": "Captured", "transactionType": "Refund"})


def post(url: str, body: str, headers: dict) -> requests.Response:
    return requests.post(url, data=body.encode(), headers=headers, timeout=10)


def signed(secret: str, webhook_id: str = "msg_inbox_1", body: str = BODY) -> dict:
    return signed_headers(webhook_id, datetime.now(UTC), body, [secret])


def inbox(deps, merchant) -> list[log.InboxMessage]:
    with deps.uow(write=False) as uow:
        return log.list_inbox(uow.conn, Caller(merchant.merchant_id, Mode.SANDBOX, "test"))


def test_signed_delivery_is_accepted_stored_and_verified(merchant, deps):
    headers = signed(merchant.sandbox_webhook_secret)
    response = post(merchant.inbox_url, BODY, headers)
    assert (response.status_code, response.text) == (204, "")
    [message] = inbox(deps, merchant)
    assert message.body == BODY
    assert message.webhook_id == "msg_inbox_1"
    assert message.headers["Webhook-Signature"] == headers["webhook-signature"]
    assert (message.signature_valid, message.mode, message.duplicate) == (True, Mode.SANDBOX, False)


def test_live_secret_verifies_as_live(merchant, deps):
    post(merchant.inbox_url, BODY, signed(merchant.live_webhook_secret))
    [message] = inbox(deps, merchant)
    assert (message.signature_valid, message.mode) == (True, Mode.LIVE)


def test_same_webhook_id_again_is_flagged_duplicate(merchant, deps):
    assert post(merchant.inbox_url, BODY, signed(merchant.sandbox_webhook_secret)).status_code == 204
    assert post(merchant.inbox_url, BODY, signed(merchant.sandbox_webhook_secret)).status_code == 204
    post(merchant.inbox_url, BODY, signed(merchant.sandbox_webhook_secret, "msg_inbox_2"))
    newest, second, first = inbox(deps, merchant)
    assert [(m.webhook_id, m.duplicate) for m in (first, second, newest)] == [
        ("msg_inbox_1", False), ("msg_inbox_1", True), ("msg_inbox_2", False)]


def test_wrong_secret_or_tampered_body_is_logged_and_answered_401(merchant, deps):
    wrong = post(merchant.inbox_url, BODY, signed(new_webhook_secret(), "msg_wrong"))
    tampered_headers = signed(merchant.sandbox_webhook_secret, "msg_tampered")
    tampered = post(merchant.inbox_url, BODY.replace("Captured", "Declined"), tampered_headers)
    unsigned = post(merchant.inbox_url, BODY, {"Content-Type": "application/json"})
    for response in (wrong, tampered, unsigned):
        assert response.status_code == 401
        assert response.json() == {"error": "Invalid webhook signature"}
    messages = inbox(deps, merchant)
    assert [(m.webhook_id, m.signature_valid, m.mode) for m in messages] == [
        (None, False, None), ("msg_tampered", False, None), ("msg_wrong", False, None)]
    assert '"Declined"' in messages[1].body


def test_stale_timestamp_does_not_verify(merchant, deps):
    old = signed_headers("msg_old", datetime(2020, 1, 1, tzinfo=UTC), BODY,
                         [merchant.sandbox_webhook_secret])
    assert post(merchant.inbox_url, BODY, old).status_code == 401
    [message] = inbox(deps, merchant)
    assert message.signature_valid is False


def test_unknown_inbox_is_404(server):
    response = post(f"{server.url}/inbox/no-such-inbox", BODY, {})
    assert (response.status_code, response.json()) == (404, {"error": "Inbox not found"})


def test_body_over_256_kib_is_refused_unstored(merchant, deps):
    response = post(merchant.inbox_url, "x" * (256 * 1024 + 1), {})
    assert (response.status_code, response.json()) == (413, {"error": "Body larger than 256 KiB"})
    assert inbox(deps, merchant) == []



def _endpoint_at(deps, merchant, mode: Mode, url: str):
    """An endpoint of the merchant, made as the API makes one (its secret shown once)."""
    return endpoints.create_endpoint(deps, Caller(merchant.merchant_id, mode, "test"),
                                     {"url": url, "enabledEvents": ["*"]})


def test_a_delivery_signed_with_an_endpoint_pointing_here_is_accepted_in_its_mode(merchant, deps):
    """An endpoint set to the inbox's URL (the demo's receiver) signs with its own secret: the
    inbox verifies it too, so the endpoint's receiver check reads true against it."""
    made = _endpoint_at(deps, merchant, Mode.SANDBOX, merchant.inbox_url)
    assert post(merchant.inbox_url, BODY, signed(made.secret, "msg_endpoint")).status_code == 204
    [message] = inbox(deps, merchant)
    assert (message.webhook_id, message.signature_valid, message.mode) == ("msg_endpoint", True, Mode.SANDBOX)


def test_an_endpoint_pointing_elsewhere_does_not_sign_for_the_inbox(merchant, deps):
    elsewhere = _endpoint_at(deps, merchant, Mode.SANDBOX, "https://merchant.example/events")
    response = post(merchant.inbox_url, BODY, signed(elsewhere.secret, "msg_elsewhere"))
    assert (response.status_code, response.json()) == (401, {"error": "Invalid webhook signature"})
