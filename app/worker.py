"""The background worker: one round of its jobs, and the loop `flask worker` repeats it in.

A round that fails (the database restarting, a connection dropped) is logged with its
traceback and tried again after a pause that doubles up to MAX_ROUND_PAUSE; only SIGTERM
or SIGINT end the loop, and they also cut a pause short.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from flask import Flask, current_app

from app.auth import throttle
from app.auth.notifications import notification_pass
from app.payments import approvals, batches, dispute_calls, dispute_reminders, expiry
from app.payments.idempotency import REPLAY_WINDOW
from app.providers.account_resolutions import account_resolution_pass
from app.providers.bank_refresh import bank_list_pass
from app.providers.calls import CallSettings, ProviderCalls
from app.providers.connection_tests import connection_test_pass
from app.providers.passes import BackgroundPass
from app.providers.settlement_fetch import settlement_pass
from app.store import idempotency, request_log, sign_in_failures
from app.store.daily_totals import FOLD_BATCH, fold_changes
from app.util import Backoff
from app.webhooks import events, receiver_check
from app.webhooks.dispatcher import DISPATCHER_KEY, start_delivery
from app.webhooks.settings import DeliverySettings
from app.web import deps as app_deps

FIRST_ROUND_PAUSE = 0.5  # seconds after the first failed round
MAX_ROUND_PAUSE = 30.0
# A stop request ends a pause within this many seconds.
STOP_CHECK_INTERVAL = 0.1


def run_round(app: Flask) -> bool:
    """Keep the provider calls, the bank list, settlement and dispute work, connection tests,
    payout account names and webhook deliveries going (each on this process's own threads),
    expire stale Pending transactions and approval requests, purge old idempotency keys and
    failed sign-ins, fold the daily totals' changes.

    Returns True when there was work, so the loop goes on without sleeping.
    """
    deps = app_deps(app)
    with app.app_context():
        # Provider calls are made continuously by this process's own call threads.
        start_provider_calls(app)
        # Due bank lists, settlements, dispute answers and the dashboard's "Test connection"
        # requests are each handled on a thread of their own: a slow provider never holds the round.
        for make in BACKGROUND_PASSES:
            background_pass(app, make).poke()
        expired = expiry.expire_pending(deps)
        expired += approvals.expire_approvals(deps)
        with deps.uow() as uow:
            idempotency.purge_older_than(uow.conn, deps.clock() - REPLAY_WINDOW)
            sign_in_failures.purge_older_than(uow.conn, deps.clock() - throttle.WINDOW)
            uow.commit()
        with deps.uow() as uow:
            folded = fold_changes(uow.conn)
            uow.commit()
        # Webhooks are delivered continuously by this process's own delivery threads.
        start_delivery(app)
    return bool(expired or folded == FOLD_BATCH)


_CALLS_KEY = "paydesk.provider_calls"


def dispute_pass(deps, _providers) -> BackgroundPass:
    """One worker process's passes of the dispute calls: the evidence and acceptances due, then
    where open disputes stand (app.payments.dispute_calls), then the reminders of deadlines near
    (app.payments.dispute_reminders)."""
    def run() -> None:
        dispute_calls.run_due_dispute_calls(deps)
        dispute_calls.check_open_disputes(deps)
        dispute_reminders.remind_due_disputes(deps)
    return BackgroundPass("dispute-calls", run)


def request_log_pass(deps, _providers) -> BackgroundPass:
    """One worker process's passes that delete API request log rows older than the retention
    (REQUEST_LOG_RETENTION_DAYS), a batch per unit, until none is left."""
    def run() -> None:
        while True:
            with deps.uow() as uow:
                deleted = request_log.prune_older_than(uow.conn, deps.clock() - deps.request_log_retention)
                uow.commit()
            if deleted < request_log.PRUNE_BATCH:
                return
    return BackgroundPass("request-log-prune", run)


def batch_pass(deps, _providers) -> BackgroundPass:
    """One worker process's passes of the running batches: their valid rows' payouts and
    refunds created, a chunk at a time under a lease (app.payments.batches)."""
    lease = timedelta(seconds=current_app.config["BATCH_LEASE_SECONDS"])  # made in a round's app context
    return BackgroundPass("batches", lambda: batches.run_due_batches(deps, lease=lease))


# How often a worker process prunes the events past their retention.
PRUNE_EVENTS_EVERY = timedelta(hours=1)


def event_retention_pass(deps, _providers) -> BackgroundPass:
    """One worker process's passes removing the events older than EVENT_RETENTION_DAYS, at most
    once per PRUNE_EVENTS_EVERY (app.webhooks.events)."""
    keep = timedelta(days=float(current_app.config.get("EVENT_RETENTION_DAYS",
                                                       events.DEFAULT_RETENTION_DAYS)))
    last_run: list[datetime] = []

    def run() -> None:
        now = deps.clock()
        if last_run and now - last_run[0] < PRUNE_EVENTS_EVERY:
            return
        events.prune_events(deps, now - keep)
        last_run[:] = [now]
    return BackgroundPass("event-retention", run)


def receiver_check_pass(deps, _providers) -> BackgroundPass:
    """One worker process's passes running the receiver checks merchants asked for
    (app.webhooks.receiver_check): never on a request's thread."""
    settings = DeliverySettings.from_config(current_app.config)
    return BackgroundPass("receiver-checks", lambda: receiver_check.run_due_checks(deps, settings))


# A stopping process waits this long (seconds) for a job's running pass (its provider calls
# time out within PROVIDER_READ_TIMEOUT; a pass cut short leaves its claims to lapse).
PASS_ENDS_WITHIN = 30.0
# The jobs each round pokes, each making its passes on a thread of its own (app.providers.passes).
BACKGROUND_PASSES = (bank_list_pass, settlement_pass, connection_test_pass, dispute_pass,
                     account_resolution_pass, request_log_pass, batch_pass, event_retention_pass,
                     receiver_check_pass, notification_pass)


def _pass_key(make) -> str:
    return f"paydesk.pass.{make.__name__}"


def background_pass(app: Flask, make) -> BackgroundPass:
    """This process's passes of one job for the app (`make(deps, providers)`), made on first use."""
    key = _pass_key(make)
    found = app.extensions.get(key)
    if found is None:
        deps = app_deps(app)
        found = app.extensions[key] = make(deps, deps.providers)
    return found


def start_provider_calls(app: Flask) -> ProviderCalls:
    """This process's provider calls for the app, started on first use (worker rounds).

    A start that failed (the database unreachable) is tried again by the next round.
    """
    calls = app.extensions.get(_CALLS_KEY)
    if calls is None:
        calls = ProviderCalls(app_deps(app), CallSettings.from_config(app.config),
                              engine=app.extensions.get("paydesk.engine"))
        app.extensions[_CALLS_KEY] = calls
    calls.start()
    return calls


def stop_background_work(app: Flask) -> None:
    """Stop what worker rounds started in this process for the app (webhook deliveries,
    provider calls), after the work in flight ends; and let the jobs' running passes end."""
    for key in (_CALLS_KEY, DISPATCHER_KEY):
        started = app.extensions.pop(key, None)
        if started is not None:
            started.close()
    for make in BACKGROUND_PASSES:
        running = app.extensions.pop(_pass_key(make), None)
        if running is not None:
            running.wait(PASS_ENDS_WITHIN)


AUTOGROUP = "/proc/self/autogroup"


def lower_cpu_priority(niceness: int) -> str:
    """Let the web servers on this machine come first: raise this process's nice value by
    `niceness` and, when it leads a session of its own, its autogroup's too. Returns what was
    done, for the start-up line.

    With `kernel.sched_autogroup_enabled` (Linux's default on desktops and many servers) the CPU
    is first split between sessions and only then between the processes of one session by their
    nice values, so a worker started in its own session (by a supervisor, or `setsid`) would be
    niced against nothing. Its autogroup is its alone then, and is niced instead. A worker that
    shares its session (started from the same shell as the web server) has only its process
    niced: the autogroup belongs to the others as well.
    """
    if niceness > 0:
        os.nice(niceness)
    done = f"niceness {os.nice(0)}"
    if niceness <= 0 or os.getsid(0) != os.getpid():
        return done
    try:
        with open(AUTOGROUP, "w") as autogroup:
            autogroup.write(str(niceness))
    except OSError:  # no autogroups in this kernel, or not allowed here
        return done
    return f"{done}, its own session's autogroup niced {niceness}"


class StopRequest:
    """Set by SIGTERM or SIGINT once listen() ran; wait() sleeps until the time is up or a stop comes.

    The signal handler only sets a flag (a lock taken in a handler could deadlock the
    main thread it interrupts), and wait() looks at it every STOP_CHECK_INTERVAL.
    """

    def __init__(self) -> None:
        self.requested = False

    def listen(self) -> None:
        """Turn SIGTERM and SIGINT into stop requests."""
        signal.signal(signal.SIGTERM, self._request)
        signal.signal(signal.SIGINT, self._request)

    def _request(self, *_signal) -> None:
        self.requested = True

    def wait(self, seconds: float) -> None:
        """Sleep for `seconds`, or less if a stop is requested meanwhile."""
        deadline = time.monotonic() + seconds
        while not self.requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, STOP_CHECK_INTERVAL))


def run_until_stopped(app: Flask, stop: StopRequest, *, interval: float, once: bool = False,
                      run_round: Callable[[Flask], bool] = run_round) -> None:
    """Run rounds until a stop is requested; `interval` seconds apart when there was nothing to do.

    A failing round is logged and tried again after a backoff pause; with `once`, its
    error is raised instead, so a one-off run fails visibly.
    """
    failures = Backoff(first=FIRST_ROUND_PAUSE, cap=MAX_ROUND_PAUSE)
    while not stop.requested:
        try:
            busy = run_round(app)
        except Exception:
            if once:
                raise
            pause = failures.next_pause()
            app.logger.exception("worker round failed; trying again in %.1f s", pause)
            stop.wait(pause)
            continue
        failures.reset()
        if once:
            return
        if not busy:
            stop.wait(interval)
