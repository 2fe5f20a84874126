"""Deliveries run side by side: a slow receiver holds neither other merchants nor the worker's round."""
from __future__ import annotations

import threading
import time
import uuid

from sqlalchemy import func, select

from app.cli import upgrade_database
from app.store.merchants import create_merchant
from app.store.tables import webhook_attempts, webhook_events
from app.webhooks.dispatcher import Dispatcher, deliver_due
from tests.conftest import make_app
from tests.support.databases import create_postgres_database

from .conftest import attempts, delivery_settings, enqueue_events, event_row
from .receiver import Receiver


def test_slow_receiver_does_not_hold_up_other_merchants(app, merchant, deps):
    other = _another_merchant(app)
    settings = delivery_settings(timeout=1.0, concurrency=4, per_merchant=2)
    with Receiver(delay=3.0) as slow, Receiver() as fast:
        # A long backlog of the slow merchant is due first; the other merchant's event after it.
        slow_ids = enqueue_events(deps, merchant.merchant_id, slow.url, count=40)
        [fast_id] = enqueue_events(deps, other.merchant_id, fast.url)
        started = time.monotonic()
        with Dispatcher(deps, settings) as dispatcher:
            dispatcher.start(poll_interval=0.05)
            [arrived] = fast.wait_for(1)
            assert arrived.at - started < 0.9  # before the slow ones even time out
            assert dispatcher.in_flight[merchant.merchant_id] == 2  # its share, still waiting
        assert event_row(deps, fast_id).state == "delivered"
    tried = [event_row(deps, i) for i in slow_ids if event_row(deps, i).attempts]
    assert 2 <= len(tried) <= 4  # its share of threads, once or twice over: never more
    assert {(r.state, r.last_error) for r in tried} == {("pending", "No answer within 1 s")}
    [attempt] = attempts(deps, merchant, tried[0].webhook_id)
    assert 1000 <= attempt.duration_ms < 2500


def test_dispatch_returns_at_once_while_deliveries_run(app, merchant, deps):
    settings = delivery_settings(timeout=1.0)
    with Receiver(delay=0.5) as slow:
        enqueue_events(deps, merchant.merchant_id, slow.url, count=2)
        with Dispatcher(deps, settings) as dispatcher:
            started = time.monotonic()
            assert dispatcher.dispatch() == 2
            assert time.monotonic() - started < 0.4
            assert dispatcher.running == 2
            assert dispatcher.dispatch() == 0  # both leased: nothing more to claim
            assert dispatcher.wait(timeout=5)
        assert len(slow.received) == 2


def test_two_workers_on_postgres_drain_1000_events_none_claimed_twice():
    url, drop = create_postgres_database()
    apps = []
    try:
        upgrade_database(url)
        apps = [make_app(url), make_app(url)]  # two workers: each its own engine and connections
        workers = [worker.extensions["paydesk"] for worker in apps]
        with workers[0].uow() as uow:
            merchant = create_merchant(uow, f"Drain {uuid.uuid4().hex[:8]}", "http://paydesk.test")
            uow.commit()
        with Receiver() as receiver:
            webhook_ids = enqueue_events(workers[0], merchant.merchant_id, receiver.url, count=1000)
            made = [0, 0]
            start = threading.Barrier(2)

            def work(n: int) -> None:
                start.wait()
                made[n] = deliver_due(workers[n], delivery_settings(concurrency=8, per_merchant=8))

            threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            received = receiver.wait_for(1000)
        assert sum(made) == 1000 and min(made) > 0
        assert len(received) == 1000
        assert sorted(r.headers["webhook-id"] for r in received) == sorted(webhook_ids)
        with workers[0].uow(write=False) as uow:
            states = dict(uow.conn.execute(
                select(webhook_events.c.state, func.count()).group_by(webhook_events.c.state)).all())
            attempt_counts = set(uow.conn.execute(select(webhook_events.c.attempts)).scalars())
            logged = uow.conn.execute(select(func.count()).select_from(webhook_attempts)).scalar()
        assert states == {"delivered": 1000}
        assert attempt_counts == {1}
        assert logged == 1000
    finally:
        for worker in apps:
            worker.extensions["paydesk.engine"].dispose()
        drop()


def _another_merchant(app):
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        created = create_merchant(uow, f"Other {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    return created
