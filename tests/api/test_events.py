"""GET /api/v1/events: every change that sends a webhook is an event, kept EVENT_RETENTION_DAYS,
listed with its deliveries, filtered and paged; another merchant's or mode's is never seen."""
from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select, update

from app.payments.formats import iso_utc
from app.store.merchants import create_merchant
from app.store.tables import events, webhook_events
from app.util import utcnow
from app.webhooks.events import prune_events
from tests.conftest import Api


def event_rows(app, tx_no: str) -> list:
    """The stored events of one transaction, oldest first."""
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(events).where(events.c.tx_no == tx_no).order_by(events.c.id)).all()


def delivery_row(app, event_row_id: int):
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(webhook_events).where(webhook_events.c.event_id == event_row_id)).one()


def refunded(sandbox, captured_payment) -> tuple[str, str]:
    """A captured payment of 100.00 and a captured refund of 30.00 of it: (payment, refund)."""
    tx_no = captured_payment(100)
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 30})
    assert refund.status_code == 200, refund.text
    return tx_no, refund.json()["refundTxNo"]


def test_a_capture_and_a_refund_are_events_with_their_webhook_bodies(sandbox, app, captured_payment):
    tx_no, refund_no = refunded(sandbox, captured_payment)
    [payment_event] = event_rows(app, tx_no)
    [refund_event] = event_rows(app, refund_no)
    response = sandbox.get(f"/events?txNo={refund_no}")
    assert response.status_code == 200
    delivery = delivery_row(app, refund_event.id)
    assert response.json() == {"events": [{
        "id": refund_event.public_id,
        "type": "refund.captured",
        "txNo": refund_no,
        "createdAt": iso_utc(refund_event.created_at),
        "data": json.loads(delivery.payload),
        "deliveries": [{
            "webhookId": delivery.webhook_id,
            "endpointId": None,
            "url": "https://merchant.example/webhooks",
            "status": "Pending",
            "attempts": 0,
            "lastHttpStatus": None,
            "lastError": None,
            "nextAttemptAt": iso_utc(delivery.next_attempt_at),
            "deliveredAt": None,
        }],
    }], "hasMore": False, "nextCursor": None}
    data = response.json()["events"][0]["data"]
    assert (data["txNo"], data["status"], data["transactionType"], data["originalTxNo"]) == (
        refund_no, "Captured", "Refund", tx_no)
    assert '"amount": 30.00' in response.text  # exact, with the currency's digits
    assert refund_event.payload == delivery.payload  # the event's body is the webhook's
    assert payment_event.event_type == "payment.captured"
    newest_first = sandbox.get("/events").json()["events"]
    assert [e["id"] for e in newest_first] == [refund_event.public_id, payment_event.public_id]


def test_one_event_by_id_and_unknown_ids(sandbox, app, captured_payment):
    tx_no = captured_payment(10)
    [row] = event_rows(app, tx_no)
    one = sandbox.get(f"/events/{row.public_id}")
    assert one.status_code == 200
    assert one.json() == sandbox.get(f"/events?txNo={tx_no}").json()["events"][0]
    for unknown in ("evt_000000000000000000000000", "x" * 41):
        answer = sandbox.get(f"/events/{unknown}")
        assert (answer.status_code, answer.json()) == (404, {"error": f"Event {unknown[:40]} not found"})


def test_another_merchants_or_modes_events_are_not_found(sandbox, live, server, app, captured_payment):
    tx_no = captured_payment(10)
    [row] = event_rows(app, tx_no)
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {row.public_id}", app.config["BASE_URL"])
        uow.commit()
    for stranger in (live, Api(server.url, other.sandbox_token)):
        answer = stranger.get(f"/events/{row.public_id}")
        assert (answer.status_code, answer.json()) == (404, {"error": f"Event {row.public_id} not found"})
        assert stranger.get("/events").json() == {"events": [], "hasMore": False, "nextCursor": None}
        assert stranger.get(f"/events?txNo={tx_no}").json()["events"] == []


def test_filters_by_type_time_and_failed_delivery(sandbox, app, captured_payment):
    tx_no, refund_no = refunded(sandbox, captured_payment)
    [payment_event] = event_rows(app, tx_no)
    [refund_event] = event_rows(app, refund_no)

    def ids(query: str) -> list[str]:
        response = sandbox.get(f"/events?{query}")
        assert response.status_code == 200, response.text
        return [e["id"] for e in response.json()["events"]]

    assert ids("type=payment.captured") == [payment_event.public_id]
    assert ids("type=payment.captured,refund.captured") == [refund_event.public_id, payment_event.public_id]
    assert ids("type=payment.captured&type=refund.captured") == [refund_event.public_id, payment_event.public_id]
    assert ids("type=payout.failed") == []
    created = refund_event.created_at
    after = iso_utc(created + timedelta(seconds=1))
    assert ids(f"createdFrom={after}") == []
    assert ids(f"createdTo={after}&type=refund.captured") == [refund_event.public_id]
    assert ids(f"createdFrom={iso_utc(created)}&type=refund.captured") == [refund_event.public_id]
    assert ids(f"createdTo={iso_utc(created)}&type=refund.captured") == []
    assert ids("deliveryFailed=true") == []
    with app.extensions["paydesk"].uow() as uow:  # the refund's receiver answered 500 once
        uow.conn.execute(update(webhook_events).where(webhook_events.c.event_id == refund_event.id)
                         .values(attempts=1, last_http_status=500))
        uow.commit()
    assert ids("deliveryFailed=true") == [refund_event.public_id]
    assert ids("deliveryFailed=false") == [refund_event.public_id, payment_event.public_id]


def test_pages_follow_the_cursor(sandbox, app, captured_payment):
    made = [captured_payment(n) for n in (1, 2, 3)]
    expected = [event_rows(app, tx_no)[0].public_id for tx_no in reversed(made)]
    first = sandbox.get("/events?limit=2").json()
    assert [e["id"] for e in first["events"]] == expected[:2] and first["hasMore"] is True
    second = sandbox.get(f"/events?limit=2&cursor={first['nextCursor']}").json()
    assert [e["id"] for e in second["events"]] == expected[2:]
    assert (second["hasMore"], second["nextCursor"]) == (False, None)


def test_bad_filters_are_named(sandbox):
    cases = {
        "type=payment.nope": {"Type": ["Type must be one or more of " + ", ".join(
            __import__("app.payments.events", fromlist=["EVENT_TYPES"]).EVENT_TYPES) + ", comma-separated"]},
        "createdFrom=yesterday": {"CreatedFrom": ["CreatedFrom must be a date (2026-11-30) or a UTC time "
                                                  "(2026-11-30T12:00:00Z)"]},
        "deliveryFailed=yes": {"DeliveryFailed": ["DeliveryFailed must be one or more of true, false, "
                                                  "comma-separated"]},
        "cursor=bogus": {"Cursor": ["Cursor is not one this API gave; start again without it"]},
        "limit=101": {"Limit": ["Limit must be a whole number from 1 to 100"]},
        "txNo=" + "x" * 101: {"TxNo": ["TxNo must be 1 to 100 printable characters"]},
    }
    for query, errors in cases.items():
        response = sandbox.get(f"/events?{query}")
        assert (response.status_code, response.json()) == (400, {"errors": errors}), query


def test_events_past_retention_are_pruned_and_their_deliveries_stay(sandbox, app, captured_payment):
    old_tx, new_tx = captured_payment(5), captured_payment(6)
    [old] = event_rows(app, old_tx)
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        uow.conn.execute(update(events).where(events.c.id == old.id)
                         .values(created_at=utcnow() - timedelta(days=31)))
        uow.commit()
    assert prune_events(deps, utcnow() - timedelta(days=30)) >= 1
    assert event_rows(app, old_tx) == [] and len(event_rows(app, new_tx)) == 1
    answer = sandbox.get(f"/events/{old.public_id}")
    assert answer.status_code == 404
    with deps.uow(write=False) as uow:
        kept = uow.conn.execute(select(webhook_events.c.event_id).where(
            webhook_events.c.webhook_id == old.webhook_id)).one()
    assert kept.event_id is None
    assert [w["txNo"] for w in sandbox.get(f"/webhooks?txNo={old_tx}").json()["webhooks"]] == [old_tx]
