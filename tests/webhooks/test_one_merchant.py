"""Delivering one merchant's due events (deliver_due's merchant_id) leaves every other merchant's due."""
from __future__ import annotations

import uuid

from app.store.merchants import create_merchant
from app.webhooks.dispatcher import deliver_due

from .conftest import enqueue_events, event_row


def test_delivering_one_merchants_events_leaves_the_others_due(app, deps, merchant, settings, receiver):
    with deps.uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    [own] = enqueue_events(deps, merchant.merchant_id, receiver.url)
    [others] = enqueue_events(deps, other.merchant_id, receiver.url)

    assert deliver_due(deps, settings, merchant_id=merchant.merchant_id) == 1
    assert [delivery.headers["webhook-id"] for delivery in receiver.wait_for(1)] == [own]
    assert event_row(deps, others).state == "pending"

    assert deliver_due(deps, settings) == 1
    assert event_row(deps, others).state == "delivered"
