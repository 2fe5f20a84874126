"""Failed attempts follow the documented schedule; 410 stops; a receiver that comes back gets everything."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from app.webhooks.dispatcher import deliver_due
from app.webhooks.settings import MAX_ATTEMPTS, RETRY_DELAYS

from .conftest import attempts, enqueue_events, event_row
from .receiver import Receiver

SCHEDULE = [timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
            timedelta(hours=5), timedelta(hours=10), timedelta(hours=10)]


def test_the_schedule_is_the_documented_one():
    assert list(RETRY_DELAYS) == SCHEDULE
    assert MAX_ATTEMPTS == 8


def test_receiver_answering_500_gets_eight_attempts_on_the_schedule_then_failed(
        merchant, fake_deps, clock, settings):
    with Receiver(status=500, answer=b"upstream broke") as receiver:
        [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
        sent_at = []
        for attempt_no in range(1, MAX_ATTEMPTS + 1):
            assert deliver_due(fake_deps, settings) == 1
            sent_at.append(clock())
            row = event_row(fake_deps, webhook_id)
            assert row.attempts == attempt_no
            if attempt_no == MAX_ATTEMPTS:
                break
            wait = row.next_attempt_at - clock()
            expected = SCHEDULE[attempt_no - 1]
            assert expected <= wait <= expected * 1.1, (attempt_no, wait)
            clock.advance(wait - timedelta(seconds=1))
            assert deliver_due(fake_deps, settings) == 0  # not due a second early
            clock.advance(timedelta(seconds=1))
        assert len(receiver.received) == MAX_ATTEMPTS

    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.next_attempt_at, row.last_http_status) == ("failed", None, 500)
    logged = attempts(fake_deps, merchant, webhook_id)
    assert [a.attempt_no for a in logged] == list(range(1, 9))
    assert [a.started_at for a in logged] == sent_at
    assert {a.http_status for a in logged} == {500}
    assert {a.response_excerpt for a in logged} == {"upstream broke"}
    assert all(a.duration_ms is not None and not a.manual for a in logged)
    assert {r.headers["webhook-id"] for r in receiver.received} == {webhook_id}
    clock.advance(timedelta(days=30))
    assert deliver_due(fake_deps, settings) == 0


def test_410_stops_retrying_at_once(merchant, fake_deps, clock, settings):
    with Receiver(status=410) as receiver:
        [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
        assert deliver_due(fake_deps, settings) == 1
    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.attempts, row.next_attempt_at) == ("failed", 1, None)
    assert row.last_error == "410 Gone: the receiver asked for no more deliveries"


@pytest.mark.parametrize("status", [301, 302, 307, 400, 404, 503])
def test_redirects_and_other_codes_are_failures_to_retry(merchant, fake_deps, clock, settings,
                                                         status):
    with Receiver(status=status) as receiver, Receiver() as elsewhere:
        receiver.extra_headers["Location"] = elsewhere.url
        [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
        deliver_due(fake_deps, settings)
        assert elsewhere.received == []  # a redirect is never followed
    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.attempts, row.last_http_status) == ("pending", 1, status)
    assert row.next_attempt_at - clock() >= timedelta(seconds=5)
    if status < 400:
        assert row.last_error == f"Redirects are not followed (Location: {elsewhere.url})"


def test_response_excerpt_is_capped_at_4_kib(merchant, fake_deps, settings):
    with Receiver(status=500, answer=b"x" * 10_000) as receiver:
        [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
        deliver_due(fake_deps, settings)
    [attempt] = attempts(fake_deps, merchant, webhook_id)
    assert attempt.response_excerpt == "x" * 4096


def test_receiver_down_then_back_gets_every_event_with_its_stable_id(merchant, fake_deps, clock,
                                                                   settings):
    receiver = Receiver()
    webhook_ids = enqueue_events(fake_deps, merchant.merchant_id, receiver.url, count=5)
    assert deliver_due(fake_deps, settings) == 5  # nobody listens: connection refused
    for webhook_id in webhook_ids:
        row = event_row(fake_deps, webhook_id)
        assert (row.state, row.attempts, row.last_http_status) == ("pending", 1, None)
        assert row.last_error == "Connection failed: Connection refused"
    clock.advance(timedelta(seconds=5.5))
    with receiver:
        assert deliver_due(fake_deps, settings) == 5
        arrived = receiver.wait_for(5)
    assert sorted(r.headers["webhook-id"] for r in arrived) == sorted(webhook_ids)
    for webhook_id in webhook_ids:
        assert event_row(fake_deps, webhook_id).state == "delivered"
        first, second = attempts(fake_deps, merchant, webhook_id)
        assert first.request_headers["webhook-id"] == second.request_headers["webhook-id"] == webhook_id
        assert first.error == "Connection failed: Connection refused"
        assert (second.http_status, second.error) == (204, None)
    for delivery in arrived:
        assert json.loads(delivery.body)["transactionType"] == "Payment"
