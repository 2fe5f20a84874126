"""Settings → Webhook endpoints: create (secret shown once), edit, disable, rotate, delete, the
endpoint page's success rate, last success and recent deliveries, and "Resend all failed since"."""
from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update
from standardwebhooks.webhooks import Webhook

from app.payments.model import Caller, Mode
from app.store.tables import audit_log, webhook_endpoints, webhook_events
from app.util import utcnow
from app.webhooks import endpoints
from app.webhooks.endpoints import fan_out
from tests.conftest import Api, payment_body

from .conftest import SANDBOX


@pytest.fixture
def admin(dashboard, merchant):
    return dashboard(merchant.merchant_id, "admin")


def _form(**overrides) -> dict:
    form = {"url": "https://merchant.example/events", "description": "Finance alerts",
            "events": ["refund.failed", "payout.failed"], "enabled": "y"}
    form.update(overrides)
    return form


def _revealed(response) -> str:
    return html.unescape(re.search(r'id="revealed" class="mono" type="text" value="([^"]+)"', response.text).group(1))


def _only_endpoint(app, merchant, mode=Mode.LIVE) -> endpoints.Endpoint:
    with app.extensions["paydesk"].uow(write=False) as uow:
        [found] = endpoints.list_endpoints(uow.conn, Caller(merchant.merchant_id, mode, "test"))
    return found


def test_create_shows_the_secret_once_and_lists_the_endpoint(admin, app, merchant):
    created = admin.post("/settings/webhook-endpoints", _form())
    assert created.status_code == 200, created.text
    assert created.headers["Cache-Control"] == "no-store"
    secret = _revealed(created)
    assert secret.startswith("whsec_")
    endpoint = _only_endpoint(app, merchant)
    assert (endpoint.url, endpoint.enabled_events, endpoint.description, endpoint.enabled) == (
        "https://merchant.example/events", ("refund.failed", "payout.failed"), "Finance alerts", True)
    listed = admin.get("/settings/webhook-endpoints")
    assert listed.status_code == 200
    assert endpoint.public_id in listed.text and "refund.failed, payout.failed" in listed.text
    assert secret not in listed.text and secret not in admin.get(
        f"/settings/webhook-endpoints/{endpoint.public_id}").text
    with app.extensions["paydesk"].uow(write=False) as uow:
        actions = uow.conn.execute(select(audit_log.c.action, audit_log.c.target).where(
            audit_log.c.merchant_id == merchant.merchant_id)).all()
    assert ("webhook_endpoint.create", endpoint.public_id) in actions


def test_bad_fields_are_shown_on_their_fields(admin):
    response = admin.post("/settings/webhook-endpoints", _form(url="ftp://nope", events=[]))
    assert response.status_code == 422
    assert 'id="url-errors"' in response.text and "Url must be an http or https URL with a host" in response.text
    assert "EnabledEvents must be a non-empty list of event types" in response.text
    assert 'aria-describedby="events-hint events-errors"' in response.text


def _offered(page_html: str) -> set[str]:
    return set(re.findall(r'name="events" type="checkbox" value="([^"]+)"', page_html))


def test_the_form_offers_the_types_paydesk_sends(admin):
    offered = _offered(admin.get("/settings/webhook-endpoints").text)
    assert {"*", "payment.captured", "payment.chargeback", "refund.failed", "payout.failed",
            "dispute.won"} <= offered
    # No rule moves a payment to Pending or Refunded, nor a refund to Chargeback: never sent.
    assert not offered & {"payment.pending", "payment.refunded", "refund.pending", "refund.chargeback",
                          "refund.authorized", "payout.refunded"}


def test_an_endpoint_taking_a_type_never_sent_keeps_it_when_saved_in_the_form(admin, app, merchant):
    admin.post("/settings/webhook-endpoints", _form(events=["refund.failed"]))
    endpoint = _only_endpoint(app, merchant)
    with app.extensions["paydesk"].uow() as uow:  # as the API allows: any of EVENT_TYPES
        uow.conn.execute(update(webhook_endpoints).where(webhook_endpoints.c.public_id == endpoint.public_id)
                         .values(enabled_events=json.dumps(["refund.failed", "refund.pending"])))
        uow.commit()
    page = f"/settings/webhook-endpoints/{endpoint.public_id}"
    shown = admin.get(page).text
    assert "refund.pending" in _offered(shown)
    assert re.search(r'value="refund.pending"[^>]*checked|checked[^>]*value="refund.pending"', shown)
    saved = admin.post(page, _form(events=["refund.failed", "refund.pending"]))
    assert saved.status_code == 303, saved.text
    assert _only_endpoint(app, merchant).enabled_events == ("refund.failed", "refund.pending")


def test_edit_disable_rotate_and_delete(admin, app, merchant):
    admin.post("/settings/webhook-endpoints", _form())
    endpoint = _only_endpoint(app, merchant)
    page = f"/settings/webhook-endpoints/{endpoint.public_id}"
    saved = admin.post(page, _form(url="https://merchant.example/v2", events=["*"], enabled=""))
    assert (saved.status_code, saved.headers["Location"]) == (303, page)
    changed = _only_endpoint(app, merchant)
    assert (changed.url, changed.enabled_events, changed.enabled) == ("https://merchant.example/v2", ("*",), False)
    assert "Disabled" in admin.get(page).text
    rotated = admin.post(f"{page}/rotate")
    assert rotated.status_code == 200 and _revealed(rotated).startswith("whsec_")
    deleted = admin.post(f"{page}/delete")
    assert (deleted.status_code, deleted.headers["Location"]) == (303, "/settings/webhook-endpoints")
    assert admin.get(page).status_code == 404


def _sandbox_endpoint_with_deliveries(admin, app, merchant, server, payments: int):
    """A sandbox endpoint for every event, made on the dashboard, and a delivery to it for each of
    `payments` Captured payments; the endpoint and the payments' numbers."""
    admin.prefix = SANDBOX
    admin.post("/settings/webhook-endpoints", _form(url="https://merchant.example/hook", events=["*"]))
    endpoint = _only_endpoint(app, merchant, Mode.SANDBOX)
    sandbox = Api(server.url, merchant.sandbox_token)
    made = []
    for _ in range(payments):
        tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
        made.append(tx_no)
    while fan_out(app.extensions["paydesk"]):
        pass
    return endpoint, made


def test_the_page_shows_success_rate_last_success_and_resends_failed_since(admin, app, merchant, server):
    endpoint, made = _sandbox_endpoint_with_deliveries(admin, app, merchant, server, payments=2)
    deps = app.extensions["paydesk"]
    delivered_at = utcnow()
    with deps.uow() as uow:  # one delivered, one given up
        rows = uow.conn.execute(select(webhook_events.c.id).where(webhook_events.c.endpoint_id == endpoint.row_id)
                                .order_by(webhook_events.c.id)).scalars().all()
        uow.conn.execute(update(webhook_events).where(webhook_events.c.id == rows[0]).values(
            state="delivered", attempts=1, delivered_at=delivered_at, last_http_status=204, next_attempt_at=None))
        uow.conn.execute(update(webhook_events).where(webhook_events.c.id == rows[1]).values(
            state="failed", attempts=8, last_http_status=500, next_attempt_at=None))
        uow.commit()
    page = admin.get(f"/settings/webhook-endpoints/{endpoint.public_id}")
    assert page.status_code == 200
    assert re.search(r'id="success-rate">50% \(1 of 2\)<', page.text)
    assert re.search(r'id="last-success"><time datetime="', page.text)
    assert all(tx_no in page.text for tx_no in made)
    since = (utcnow() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    resent = admin.post(f"/settings/webhook-endpoints/{endpoint.public_id}/resend-failed", {"since": since})
    assert resent.status_code == 303, resent.text
    with deps.uow(write=False) as uow:
        states = uow.conn.execute(select(webhook_events.c.state, webhook_events.c.next_attempt_manual).where(
            webhook_events.c.id.in_(rows)).order_by(webhook_events.c.id)).all()
    assert [tuple(s) for s in states] == [("delivered", False), ("pending", True)]
    bad = admin.post(f"/settings/webhook-endpoints/{endpoint.public_id}/resend-failed", {"since": "yesterday"})
    assert bad.status_code == 422 and "Give the time the failures began" in bad.text


def test_resend_failed_since_reads_the_time_in_the_readers_zone(admin, app, merchant, server):
    """Every time on the page is in the reader's zone; so is the time they type to resend from."""
    endpoint, _made = _sandbox_endpoint_with_deliveries(admin, app, merchant, server, payments=1)
    assert admin.post("/account/display", {"locale": "en-GB", "time_zone": "Asia/Tokyo"}).status_code == 303
    page = admin.get(f"/settings/webhook-endpoints/{endpoint.public_id}").text
    assert '<label for="since">Failed since (Asia/Tokyo)</label>' in page
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:  # given up on; made at 10:30 UTC, 19:30 in Tokyo
        uow.conn.execute(update(webhook_events).where(webhook_events.c.endpoint_id == endpoint.row_id).values(
            state="failed", attempts=8, next_attempt_at=None, created_at=datetime(2026, 11, 30, 10, 30, tzinfo=UTC)))
        uow.commit()

    def resend(since: str) -> str:
        done = admin.post(f"/settings/webhook-endpoints/{endpoint.public_id}/resend-failed", {"since": since})
        assert done.status_code == 303, done.text
        return admin.get(done.headers["Location"]).text

    assert "0 failed deliveries since 2026-11-30 19:31 Asia/Tokyo" in resend("2026-11-30T19:31")
    assert "1 failed delivery since 2026-11-30 19:30 Asia/Tokyo" in resend("2026-11-30T19:30")


def test_a_secret_made_in_the_dashboard_verifies_deliveries(admin, app, merchant, server):
    from app.webhooks.dispatcher import deliver_due
    from tests.webhooks.conftest import delivery_settings
    from tests.webhooks.receiver import Receiver

    admin.prefix = SANDBOX
    with Receiver() as receiver:
        secret = _revealed(admin.post("/settings/webhook-endpoints", _form(url=receiver.url, events=["*"])))
        sandbox = Api(server.url, merchant.sandbox_token)
        tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
        sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
        deliver_due(app.extensions["paydesk"], delivery_settings(), merchant_id=merchant.merchant_id)
        [delivery] = receiver.wait_for(1)
    assert Webhook(secret).verify(delivery.body, delivery.headers)["txNo"] == tx_no


def test_check_my_receiver_polls_until_the_worker_has_run_it(admin, app, merchant):
    from app.webhooks.receiver_check import ADVICE, run_due_checks
    from tests.webhooks.conftest import delivery_settings
    from tests.webhooks.receiver import Receiver

    with Receiver(status=200) as receiver:
        admin.post("/settings/webhook-endpoints", _form(url=receiver.url, events=["*"]))
        endpoint = _only_endpoint(app, merchant)
        page = f"/settings/webhook-endpoints/{endpoint.public_id}"
        assert "Check my receiver" in admin.get(page).text
        asked = admin.post(f"{page}/check", headers={"HX-Request": "true"})
        assert asked.status_code == 200
        assert 'hx-trigger="every 2s"' in asked.text and "Checking your receiver" in asked.text
        poll = html.unescape(re.search(r'hx-get="([^"]+)"', asked.text).group(1))
        assert "Checking your receiver" in admin.get(poll).text
        assert receiver.received == []  # nothing sent by the request
        run_due_checks(app.extensions["paydesk"], delivery_settings())
    done = admin.get(poll)
    assert done.status_code == 200 and "hx-trigger" not in done.text
    assert "Your receiver does not check deliveries as it should" in done.text
    assert html.escape(ADVICE["tampered"]) in done.text and html.escape(ADVICE["stale"]) in done.text
    assert "Accepted: right if it did not act again" in done.text  # the replay: not judged a problem


def test_a_receiver_that_acknowledges_the_replay_is_shown_as_passing_with_what_to_make_sure_of(admin, app, merchant):
    from app.webhooks.receiver_check import ADVICE, run_due_checks
    from tests.webhooks.conftest import delivery_settings
    from tests.webhooks.test_receiver_check import VerifyingReceiver

    with VerifyingReceiver(repeat_status=204) as receiver:
        receiver.secret = _revealed(admin.post("/settings/webhook-endpoints", _form(url=receiver.url, events=["*"])))
        endpoint = _only_endpoint(app, merchant)
        page = f"/settings/webhook-endpoints/{endpoint.public_id}"
        asked = admin.post(f"{page}/check", headers={"HX-Request": "true"})
        poll = html.unescape(re.search(r'hx-get="([^"]+)"', asked.text).group(1))
        run_due_checks(app.extensions["paydesk"], delivery_settings())
    done = admin.get(poll).text
    assert ("Your receiver accepted the correctly signed delivery and refused the tampered and stale ones. "
            "It accepted the replay too: make sure it acts on a webhook-id once (see below).") in done
    assert "does not check deliveries as it should" not in done
    assert done.count("as it should</span>") == 3
    assert "Accepted: right if it did not act again" in done and html.escape(ADVICE["replay"]) in done
