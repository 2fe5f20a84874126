"""Webhook endpoints (/api/v1/webhook-endpoints): each event goes to every subscribed, enabled
endpoint of its merchant and mode, signed with the endpoint's own secret, beside the
callbackUrl's delivery; secrets rotate with a grace period; another merchant's or mode's
endpoint is never seen."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.payments.events import EVENT_TYPES
from app.payments.formats import iso_utc
from app.store.merchants import create_merchant
from app.store.tables import webhook_endpoints
from app.webhooks.dispatcher import deliver_due
from app.webhooks.endpoints import fan_out
from tests.conftest import Api, payment_body

from .receiver import Receiver


def new_endpoint(api: Api, url: str, enabled_events=("*",), **extra) -> dict:
    response = api.post("/webhook-endpoints", {"url": url, "enabledEvents": list(enabled_events), **extra})
    assert response.status_code == 201, response.text
    return response.json()


def captured(api: Api, callback_url: str) -> str:
    tx_no = api.post("/transactions", payment_body(callbackUrl=callback_url, amount=12.5)).json()["transactionId"]
    assert api.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    return tx_no


def test_create_get_list_update_and_delete(sandbox, app):
    created = sandbox.post("/webhook-endpoints", {"url": "https://merchant.example/events",
                                                  "enabledEvents": ["refund.failed", "payout.failed"],
                                                  "description": "Finance alerts"})
    assert created.status_code == 201, created.text
    body = created.json()
    endpoint_id, secret = body["id"], body["secret"]
    assert endpoint_id.startswith("we_") and len(endpoint_id) == 27 and secret.startswith("whsec_")
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.public_id == endpoint_id)).one()
    shown = {"id": endpoint_id, "url": "https://merchant.example/events",
             "enabledEvents": ["refund.failed", "payout.failed"], "enabled": True,
             "description": "Finance alerts", "createdAt": iso_utc(row.created_at),
             "updatedAt": iso_utc(row.updated_at)}
    assert body == {**shown, "secret": secret}
    assert sandbox.get(f"/webhook-endpoints/{endpoint_id}").json() == shown  # never the secret again
    assert sandbox.get("/webhook-endpoints").json() == {"webhookEndpoints": [shown], "hasMore": False,
                                                        "nextCursor": None}
    patched = sandbox.session.patch(f"{sandbox.base_url}/api/v1/webhook-endpoints/{endpoint_id}",
                                    json={"enabled": False, "enabledEvents": ["*"]}, timeout=10)
    assert patched.status_code == 200, patched.text
    assert {k: patched.json()[k] for k in ("enabled", "enabledEvents", "url")} == {
        "enabled": False, "enabledEvents": ["*"], "url": "https://merchant.example/events"}
    by_post = sandbox.post(f"/webhook-endpoints/{endpoint_id}", {"description": None, "enabled": True})
    assert (by_post.json()["description"], by_post.json()["enabled"]) == (None, True)
    deleted = sandbox.session.delete(f"{sandbox.base_url}/api/v1/webhook-endpoints/{endpoint_id}", timeout=10)
    assert (deleted.status_code, deleted.json()) == (200, {"id": endpoint_id, "deleted": True})
    gone = sandbox.get(f"/webhook-endpoints/{endpoint_id}")
    assert (gone.status_code, gone.json()) == (404, {"error": f"Webhook endpoint {endpoint_id} not found"})
    assert sandbox.get("/webhook-endpoints").json()["webhookEndpoints"] == []


@pytest.mark.parametrize("body,errors", [
    ({}, {"Url": ["Url is required"], "EnabledEvents": ["EnabledEvents is required"]}),
    ({"url": "ftp://x.example/", "enabledEvents": ["*"]}, {"Url": ["Url must be an http or https URL with a host"]}),
    ({"url": "http://10.1.2.3/hook", "enabledEvents": ["*"]},
     {"Url": ["Url is refused: target address 10.1.2.3 is private and not in WEBHOOK_ALLOWED_NETWORKS"]}),
    ({"url": "https://x.example/", "enabledEvents": []},
     {"EnabledEvents": ['EnabledEvents must be a non-empty list of event types, or ["*"] for all']}),
    ({"url": "https://x.example/", "enabledEvents": ["payment.exploded"]},
     {"EnabledEvents": ["EnabledEvents has unknown event types: payment.exploded; the types are "
                        + ", ".join(EVENT_TYPES) + ', or ["*"] for all']}),
    ({"url": "https://x.example/", "enabledEvents": ["*", "refund.failed"]},
     {"EnabledEvents": ['"*" stands alone: it means every event type']}),
    ({"url": "https://x.example/", "enabledEvents": ["*"], "enabled": "yes", "secret": "mine"},
     {"Secret": ["Unknown field"], "Enabled": ["Enabled must be true or false"]}),
    ([], {"Body": ["Request body must be a JSON object"]}),
])
def test_bad_endpoint_fields_are_named(sandbox, body, errors):
    response = sandbox.post("/webhook-endpoints", body)
    assert (response.status_code, response.json()) == (400, {"errors": errors})


def test_an_event_goes_to_subscribed_endpoints_and_the_callback_url_each_signed_with_its_secret(
        sandbox, merchant, deps, settings):
    with Receiver() as callback, Receiver() as everything, Receiver() as refunds_only, Receiver() as disabled:
        all_events = new_endpoint(sandbox, everything.url)
        new_endpoint(sandbox, refunds_only.url, ["refund.failed"])
        off = new_endpoint(sandbox, disabled.url, ["payment.captured"], enabled=False)
        tx_no = captured(sandbox, callback.url)
        assert deliver_due(deps, settings) == 2
        [to_callback] = callback.wait_for(1)
        [to_endpoint] = everything.wait_for(1)
    assert refunds_only.received == [] and disabled.received == []
    [event] = sandbox.get(f"/events?txNo={tx_no}").json()["events"]
    assert to_endpoint.body == to_callback.body  # the same exact body
    assert json.loads(to_endpoint.body) == event["data"]
    assert '"amount": 12.50' in to_endpoint.body
    Webhook(all_events["secret"]).verify(to_endpoint.body, to_endpoint.headers)
    Webhook(merchant.sandbox_webhook_secret).verify(to_callback.body, to_callback.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(merchant.sandbox_webhook_secret).verify(to_endpoint.body, to_endpoint.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(off["secret"]).verify(to_endpoint.body, to_endpoint.headers)
    assert to_endpoint.headers["webhook-id"] != to_callback.headers["webhook-id"]
    assert [(d["endpointId"], d["url"], d["status"], d["attempts"]) for d in event["deliveries"]] == [
        (None, callback.url, "Delivered", 1), (all_events["id"], everything.url, "Delivered", 1)]
    # Each delivery has its own log and resend.
    [logged] = [w for w in sandbox.get(f"/webhooks?txNo={tx_no}").json()["webhooks"]
                if w["webhookId"] == to_endpoint.headers["webhook-id"]]
    assert (logged["url"], logged["status"], logged["attempts"][0]["httpStatus"]) == (everything.url, "Delivered", 204)


def test_fan_out_happens_once_and_skips_endpoints_made_after_the_event(sandbox, merchant, deps, settings):
    with Receiver() as callback, Receiver() as late:
        tx_no = captured(sandbox, callback.url)
        new_endpoint(sandbox, late.url)
        deliver_due(deps, settings)
        assert fan_out(deps) == 0
        callback.wait_for(1)
    assert late.received == []
    [event] = sandbox.get(f"/events?txNo={tx_no}").json()["events"]
    assert [d["endpointId"] for d in event["deliveries"]] == [None]


def test_after_rotation_deliveries_carry_both_signatures_until_the_grace_ends(sandbox, deps, settings, app):
    with Receiver() as receiver:
        endpoint = new_endpoint(sandbox, receiver.url)
        rotated = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/rotate-secret")
        assert rotated.status_code == 200, rotated.text
        new = rotated.json()
        assert new["secret"].startswith("whsec_") and new["secret"] != endpoint["secret"]
        assert {k: v for k, v in new.items() if k not in ("secret", "previousSecretExpiresAt", "updatedAt")} == {
            k: v for k, v in endpoint.items() if k not in ("secret", "updatedAt")}
        captured(sandbox, "https://merchant.example/webhooks")
        deliver_due(deps, settings, merchant_id=None)
        [delivery] = receiver.wait_for(1)
    signatures = delivery.headers["webhook-signature"].split(" ")
    assert len(signatures) == 2 and all(s.startswith("v1,") for s in signatures)
    Webhook(new["secret"]).verify(delivery.body, delivery.headers)
    Webhook(endpoint["secret"]).verify(delivery.body, delivery.headers)


def test_a_disabled_endpoint_stops_and_failed_deliveries_resend_since_a_time(sandbox, deps, settings, app):
    with Receiver(status=500) as receiver:
        endpoint = new_endpoint(sandbox, receiver.url)
        tx_no = captured(sandbox, "https://merchant.example/webhooks")
        deliver_due(deps, settings)
        receiver.wait_for(1)
        patched = sandbox.post(f"/webhook-endpoints/{endpoint['id']}", {"enabled": False})
        assert patched.json()["enabled"] is False
        [event] = sandbox.get(f"/events?txNo={tx_no}&deliveryFailed=true").json()["events"]
        [stopped] = [d for d in event["deliveries"] if d["endpointId"] == endpoint["id"]]
        assert (stopped["status"], stopped["lastError"]) == ("Failed", "Not sent: the endpoint was disabled")
        refused = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/resend-failed?since=2020-01-01")
        assert (refused.status_code, refused.json()) == (
            400, {"errors": {"Endpoint": ["Enable the endpoint before resending to it"]}})
        sandbox.post(f"/webhook-endpoints/{endpoint['id']}", {"enabled": True})
        receiver.status = 204
        later = iso_utc(deps.clock() + timedelta(hours=1))
        none = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/resend-failed?since={later}")
        assert (none.status_code, none.json()) == (202, {"resent": 0})
        resent = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/resend-failed?since=2020-01-01")
        assert (resent.status_code, resent.json()) == (202, {"resent": 1})
        deliver_due(deps, settings)
        receiver.wait_for(2)
    [event] = sandbox.get(f"/events?txNo={tx_no}").json()["events"]
    [delivery] = [d for d in event["deliveries"] if d["endpointId"] == endpoint["id"]]
    assert (delivery["status"], delivery["attempts"]) == ("Delivered", 2)
    missing = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/resend-failed")
    assert (missing.status_code, missing.json()) == (400, {"errors": {"Since": [
        "Since is required: a date (2026-11-30) or a UTC time (2026-11-30T12:00:00Z)"]}})


def test_another_merchants_or_modes_endpoint_is_not_found(sandbox, live, server, app):
    endpoint = new_endpoint(sandbox, "https://merchant.example/events")
    endpoint_id = endpoint["id"]
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {endpoint_id}", app.config["BASE_URL"])
        uow.commit()
    not_found = {"error": f"Webhook endpoint {endpoint_id} not found"}
    for stranger in (live, Api(server.url, other.sandbox_token)):
        base = f"{stranger.base_url}/api/v1/webhook-endpoints/{endpoint_id}"
        answers = [
            stranger.get(f"/webhook-endpoints/{endpoint_id}"),
            stranger.session.patch(base, json={"enabled": False}, timeout=10),
            stranger.post(f"/webhook-endpoints/{endpoint_id}", {"enabled": False}),
            stranger.session.delete(base, timeout=10),
            stranger.post(f"/webhook-endpoints/{endpoint_id}/rotate-secret"),
            stranger.post(f"/webhook-endpoints/{endpoint_id}/resend-failed?since=2020-01-01"),
        ]
        assert [(a.status_code, a.json()) for a in answers] == [(404, not_found)] * len(answers)
        assert stranger.get("/webhook-endpoints").json()["webhookEndpoints"] == []
    # and nothing changed
    assert sandbox.get(f"/webhook-endpoints/{endpoint_id}").json() == {
        k: v for k, v in endpoint.items() if k != "secret"}


def test_an_event_never_reaches_an_endpoint_of_the_other_mode_or_merchant(sandbox, live, server, app, deps,
                                                                        settings):
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {sandbox.session.headers['Authorization'][-8:]}",
                                app.config["BASE_URL"])
        uow.commit()
    with Receiver() as receiver:
        new_endpoint(live, receiver.url)
        new_endpoint(Api(server.url, other.sandbox_token), receiver.url)
        captured(sandbox, "https://merchant.example/webhooks")
        deliver_due(deps, settings)
    assert receiver.received == []
