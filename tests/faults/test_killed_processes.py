"""A gunicorn worker and a webhook worker SIGKILLed mid-work, under a steady load.

Every refund still ends final (a refund is committed whole or not at all, and the worker makes
the provider calls of those committed) and every webhook arrives (one whose worker died mid-delivery is sent
again by another worker when its lease ends: a repeat, under the same webhook-id).
"""
from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from app.store.tables import transactions

from .ledger import assert_consistent, assert_every_webhook_arrived, wait_until_settled
from .load import ASYNC_ORIGINAL, Load

pytestmark = pytest.mark.postgres

RECEIVER_DELAY = 0.3  # the receiver takes this long to answer: deliveries are in flight at any moment
MAX_WEB_KILLS = 5
ESTABLISHED = "01"  # a TCP state in /proc/net/tcp


def web_workers(master_pid: int) -> list[int]:
    """The pids of the gunicorn master's worker processes."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        state, parent = fields[0], int(fields[1])
        if parent == master_pid and state != "Z":  # a dead one not yet reaped is no worker
            children.append(int(stat.parent.name))
    return sorted(children)


def workers_holding_a_call(master_pid: int, port: int) -> list[int]:
    """The gunicorn workers that hold a client's connection to `port` open: each is in the middle
    of a call (a call opens its own connection and closes it once answered)."""
    open_calls = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
            if local_port == port and state == ESTABLISHED:
                open_calls.add(f"socket:[{inode}]")
    holding = []
    for pid in web_workers(master_pid):
        try:
            links = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:
            continue  # gone meanwhile
        if links & open_calls:
            holding.append(pid)
    return holding


def worker_holding_a_call(master_pid: int, port: int, timeout: float) -> int:
    """Wait until a gunicorn worker holds a call; returns its pid."""
    deadline = time.monotonic() + timeout
    while not (holding := workers_holding_a_call(master_pid, port)):
        assert time.monotonic() < deadline, "no gunicorn worker held a call"
        time.sleep(0.005)
    return holding[0]


@contextmanager
def holding_the_async_refunds(deployment):
    """The merchant's ASYNC_ORIGINAL payment row locked (FOR UPDATE) until the block ends: its
    refunds wait at their write meanwhile, each a call held open by a gunicorn worker."""
    engine = deployment.engine()
    try:
        with engine.connect() as conn, conn.begin():
            conn.execute(select(transactions.c.id).where(
                transactions.c.merchant_id == deployment.merchant_id,
                transactions.c.tx_no == ASYNC_ORIGINAL).with_for_update())
            yield
    finally:
        engine.dispose()


def wait_until(condition, timeout: float, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)


def test_killed_web_and_webhook_workers_lose_no_refund_and_no_webhook(deployment):
    receiver = deployment.receiver
    receiver.delay = RECEIVER_DELAY
    kills = []  # time.monotonic() of each SIGKILL of a gunicorn worker
    try:
        with Load(deployment.url, deployment.token, receiver.url, seconds=9) as load:
            time.sleep(2.0)
            # A gunicorn worker while it holds a call, chosen by its open client connection
            # rather than hoped for. Requests no longer wait on a provider, so a call lasts
            # milliseconds: the test holds the async refunds' payment row locked, and the next
            # async refund waits at its write with its connection open. Should the call end
            # between the look and the kill, the next try waits for the next call held.
            port = int(deployment.url.rsplit(":", 1)[1])
            for _ in range(MAX_WEB_KILLS):
                with holding_the_async_refunds(deployment):
                    victim = worker_holding_a_call(deployment.gunicorn.pid, port, timeout=30)
                    kills.append(time.monotonic())
                    os.kill(victim, signal.SIGKILL)
                try:
                    wait_until(lambda: any(c.error and c.started <= kills[-1] for c in load.calls),
                               timeout=5)
                    break
                except AssertionError:
                    continue  # the call ended just before the kill: another one
            # The webhook worker, while a delivery of its is at the receiver: it is the only one.
            wait_until(lambda: receiver.received and
                       time.monotonic() - receiver.received[-1].at < RECEIVER_DELAY / 2, timeout=30)
            killed_worker = deployment.worker
            os.kill(killed_worker.pid, signal.SIGKILL)
            killed_worker_at = time.monotonic()
            in_flight = {r.headers["webhook-id"] for r in receiver.received
                         if killed_worker_at - r.at < RECEIVER_DELAY}
            deployment.replace_worker("worker-2")  # takes over when the dead one's leases end
    finally:
        receiver.delay = 0

    calls = load.calls
    cut = [c for c in calls if c.error is not None]
    assert cut, f"{len(kills)} kills of a gunicorn worker never met a call in progress"
    assert all(any(c.started <= killed <= c.ended for killed in kills) for c in cut), cut[:3]
    answered = [c for c in calls if c.error is None]
    assert {c.status for c in answered} == {200}, [c for c in answered if c.status != 200][:5]
    assert len(web_workers(deployment.gunicorn.pid)) == 2  # gunicorn replaced the dead ones
    assert killed_worker.wait(5) == -signal.SIGKILL

    engine = deployment.engine()
    try:
        wait_until_settled(engine, deployment.merchant_id, receiver, timeout=90)
        assert_consistent(engine, deployment.merchant_id)
        assert_every_webhook_arrived(engine, deployment.merchant_id, receiver)
    finally:
        engine.dispose()
    sent = [r.headers["webhook-id"] for r in receiver.received]
    assert any(sent.count(webhook_id) > 1 for webhook_id in in_flight), \
        "no delivery of the killed worker was made again"
