"""PostgreSQL restarted, then stopped for two seconds, under a steady load.

While it is down the only 5xx is 503 {"error": "Service temporarily unavailable"} with
Retry-After: 1; once it is back every call succeeds; the worker lives on and delivers;
the ledger is consistent.
"""
from __future__ import annotations

import time

import pytest

from .ledger import assert_consistent, assert_every_webhook_arrived, wait_until_settled
from .load import Load

pytestmark = pytest.mark.postgres

UNAVAILABLE = {"error": "Service temporarily unavailable"}


def test_a_restart_and_a_stop_under_load_give_503s_only_while_down(deployment):
    outages = []  # (went down, was back), time.monotonic()
    with Load(deployment.url, deployment.token, deployment.receiver.url, seconds=11) as load:
        time.sleep(2.5)
        went_down = time.monotonic()
        deployment.cluster.restart()
        outages.append((went_down, time.monotonic()))
        time.sleep(3.0)
        went_down = time.monotonic()
        deployment.cluster.stop()
        time.sleep(2.0)
        # Down for 2 s, and until the load has met it (a 503): a busy machine may have sent
        # nothing in those 2 s.
        deadline = time.monotonic() + 30
        while not any(c.status == 503 and c.started >= went_down for c in load.calls):
            assert time.monotonic() < deadline, "the load never met the stopped database"
            time.sleep(0.05)
        deployment.cluster.start()
        outages.append((went_down, time.monotonic()))
    calls = load.calls

    assert 150 <= len(calls) <= 800, len(calls)  # a few hundred
    failed = [c for c in calls if c.error is not None]
    assert not failed, failed[:3]  # every call was answered
    during = [c for c in calls if any(c.overlaps(down, back) for down, back in outages)]
    outside = [c for c in calls if c not in during]
    assert {c.status for c in outside} == {200}, [c for c in outside if c.status != 200][:5]
    assert {c.status for c in during} <= {200, 503}, [c for c in during if c.status not in (200, 503)]
    unavailable = [c for c in during if c.status == 503]
    assert unavailable, "the load never met the stopped database"
    assert all(c.body == UNAVAILABLE and c.retry_after == "1" for c in unavailable), unavailable[:3]
    after_each = [[c for c in outside if c.started >= back] for _down, back in outages]
    assert all(after_each), "no call after the database came back"

    assert deployment.worker.poll() is None, "the worker died"
    engine = deployment.engine()
    try:
        # The worker settles asynchronous refunds, and those a 503 left Pending after the
        # grace of 30 s; it delivers every webhook (a lost claim waits for its lease).
        wait_until_settled(engine, deployment.merchant_id, deployment.receiver, timeout=75)
        assert_consistent(engine, deployment.merchant_id)
        assert_every_webhook_arrived(engine, deployment.merchant_id, deployment.receiver)
    finally:
        engine.dispose()
    assert deployment.worker.poll() is None
    worker_log = deployment.worker_log.read_text()
    assert "worker round failed" in worker_log and "Traceback" in worker_log  # met it, survived
