"""Delivery threads outlive a database that is unreachable for a while: they log, back off, go on."""
from __future__ import annotations

import dataclasses
import logging
import time

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from app.webhooks import dispatcher as delivery
from app.webhooks.dispatcher import Dispatcher, deliver_due, start_delivery
from tests.conftest import make_app

from .conftest import attempts, enqueue_events, event_row
from .receiver import Receiver


def unreachable() -> OperationalError:
    """What SQLAlchemy raises when no connection to PostgreSQL can be made."""
    return OperationalError("connect", None, psycopg.OperationalError("Connection refused"))


class Outage:
    """Units of work of `deps` fail as if the database were down while `down` is set."""

    def __init__(self, deps):
        self.down = False
        self.failed = 0
        self.real_uow = deps.uow
        self.deps = dataclasses.replace(deps, uow=self._uow)

    def _uow(self, write: bool = True):
        if self.down:
            self.failed += 1
            raise unreachable()
        return self.real_uow(write=write)


def test_delivery_starts_once_the_database_answers_even_if_its_first_start_failed(
        server, merchant, deps, settings):
    worker_app = make_app(server.database_url)  # a worker process of its own
    outage = Outage(worker_app.extensions["paydesk"])
    worker_app.extensions["paydesk"] = outage.deps
    try:
        outage.down = True
        with pytest.raises(OperationalError):
            start_delivery(worker_app)  # the worker round fails and is tried again later
        outage.down = False
        dispatcher = start_delivery(worker_app)
        assert dispatcher.feeder is not None and dispatcher.feeder.is_alive()
        with Receiver() as receiver:
            [webhook_id] = enqueue_events(deps, merchant.merchant_id, receiver.url)
            [arrived] = receiver.wait_for(1, timeout=10)
        assert arrived.headers["webhook-id"] == webhook_id
    finally:
        if "paydesk.webhooks" in worker_app.extensions:
            worker_app.extensions["paydesk.webhooks"].close()
        worker_app.extensions["paydesk.engine"].dispose()


def test_the_feeder_backs_off_while_the_database_is_unreachable_then_delivers(
        merchant, deps, settings, caplog):
    outage = Outage(deps)
    with Receiver() as receiver, Dispatcher(outage.deps, settings) as dispatcher:
        dispatcher.start(poll_interval=0.1)
        outage.down = True
        time.sleep(2.0)
        # A busy machine may have run the feeder less often: wait for its third try, not more.
        deadline = time.monotonic() + 30
        while outage.failed < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        outage.down = False
        # A steady 0.1 s poll would have tried about 20 times; doubling pauses (0.1, 0.2, 0.4,
        # 0.8) try 5 times in 2 s.
        assert 3 <= outage.failed <= 6, outage.failed
        assert dispatcher.feeder.is_alive()
        [webhook_id] = enqueue_events(deps, merchant.merchant_id, receiver.url)
        [arrived] = receiver.wait_for(1, timeout=10)  # the pause is capped: it resumes soon
    assert arrived.headers["webhook-id"] == webhook_id
    failures = [r for r in caplog.records if r.name == delivery.__name__ and r.exc_info]
    assert len(failures) == outage.failed  # every failure logged with its traceback


def test_a_result_the_database_could_not_take_is_written_once_it_can(
        merchant, deps, settings, receiver, monkeypatch, caplog):
    real_record = delivery.record_attempt
    failures_left = [2]

    def record_while_the_database_restarts(deps_, event, result):
        if failures_left[0]:
            failures_left[0] -= 1
            raise unreachable()
        real_record(deps_, event, result)

    monkeypatch.setattr(delivery, "record_attempt", record_while_the_database_restarts)
    [webhook_id] = enqueue_events(deps, merchant.merchant_id, receiver.url)
    caplog.set_level(logging.WARNING, logger=delivery.__name__)
    assert deliver_due(deps, settings) == 1
    row = event_row(deps, webhook_id)
    assert (row.state, row.attempts) == ("delivered", 1)  # not sent again when the lease ends
    assert [a.attempt_no for a in attempts(deps, merchant, webhook_id)] == [1]
    assert len(receiver.received) == 1
    assert failures_left == [0]


def test_a_result_whose_commit_may_have_reached_the_database_is_not_written_twice(
        merchant, deps, settings, receiver, monkeypatch):
    real_record = delivery.record_attempt

    def commit_then_lose_the_connection(deps_, event, result):
        real_record(deps_, event, result)  # COMMIT sent (and here even done)
        raise unreachable()

    monkeypatch.setattr(delivery, "record_attempt", commit_then_lose_the_connection)
    [webhook_id] = enqueue_events(deps, merchant.merchant_id, receiver.url)
    assert deliver_due(deps, settings) == 1
    assert [a.attempt_no for a in attempts(deps, merchant, webhook_id)] == [1]
    assert event_row(deps, webhook_id).state == "delivered"
