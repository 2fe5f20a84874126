"""A claimed event is leased: a worker that dies mid-delivery leaves it to be retried, never lost."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from app.webhooks.dispatcher import deliver_due
from app.webhooks.outbox import claim_due, record_attempt
from app.webhooks.sender import send
from app.webhooks.guard import guarded_session

from .conftest import attempts, enqueue_events, event_row
from .receiver import Receiver


def test_event_of_a_worker_killed_mid_delivery_is_retried_after_the_lease(
        merchant, fake_deps, clock, settings, receiver):
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
    [claimed] = claim_due(fake_deps, settings, 1)  # the worker dies before any result is written
    assert claimed.webhook_id == webhook_id
    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.attempts, row.next_attempt_at) == ("pending", 1, clock() + settings.lease)

    clock.advance(settings.lease - timedelta(seconds=1))
    assert deliver_due(fake_deps, settings) == 0  # still leased: nobody else takes it
    clock.advance(timedelta(seconds=1))
    assert deliver_due(fake_deps, settings) == 1
    [delivery] = receiver.wait_for(1)
    assert delivery.headers["webhook-id"] == webhook_id
    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.attempts) == ("delivered", 2)
    assert [a.attempt_no for a in attempts(fake_deps, merchant, webhook_id)] == [2]


def test_a_late_result_after_the_lease_ran_out_is_logged_but_does_not_move_the_event(
        merchant, fake_deps, clock, settings):
    with Receiver(status=500) as late_receiver, Receiver() as receiver:
        [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
        [first] = claim_due(fake_deps, settings, 1)
        clock.advance(settings.lease)
        assert deliver_due(fake_deps, settings) == 1  # a second worker delivers it
        with guarded_session(settings.guard, 1) as session:  # the first worker's answer, late
            late = send(session, settings, replace(first, url=late_receiver.url), clock())
        record_attempt(fake_deps, first, late)
    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.attempts, row.last_http_status) == ("delivered", 2, 204)
    assert [(a.attempt_no, a.http_status) for a in attempts(fake_deps, merchant, webhook_id)] == [
        (1, 500), (2, 204)]
