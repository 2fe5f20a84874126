"""The delivery threads: a pool sending claimed events, the feeder that keeps it busy, and their start in a worker.

Each HTTP request runs outside any database transaction, on the pool. While the
database is unreachable, claiming and writing results pause and try again (see
RETRY_MAX_PAUSE); no database error ends the delivery threads.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from flask import Flask

from app import web
from app.store.db import commit_sent, database_unreachable, forget_commits
from app.util import Backoff

from .endpoints import fan_out
from .guard import guarded_session
from .outbox import AttemptResult, ClaimedEvent, claim_due, record_attempt
from .sender import send
from .settings import DeliverySettings

logger = logging.getLogger(__name__)

# With nothing due, the feeder looks for due events this often (seconds).
POLL_INTERVAL = 0.25
# While the database is unreachable, claims and result writes are tried again after pauses
# doubling from RETRY_FIRST_PAUSE (claims: from the poll interval) up to RETRY_MAX_PAUSE
# seconds: deliveries resume soon after it is back, and the log gets a line per pause.
RETRY_FIRST_PAUSE = 0.25
RETRY_MAX_PAUSE = 5.0
DISPATCHER_KEY = "paydesk.webhooks"


class Dispatcher:
    """Delivers due events on a thread pool, claiming only as many as it has free threads.

    Only one thread calls dispatch(): the caller of deliver_due(), or the feeder
    thread of a worker process (start()). Deliveries run on the pool, so a slow
    receiver holds one thread and nothing else. With `merchant_id`, it claims only
    that merchant's events.
    """

    def __init__(self, deps, settings: DeliverySettings, merchant_id: int | None = None):
        self.deps = deps
        self.settings = settings
        self.merchant_id = merchant_id
        self.session = guarded_session(settings.guard, settings.concurrency)
        self.pool = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="webhook")
        self.in_flight: Counter = Counter()  # deliveries running, per merchant
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.feeder: threading.Thread | None = None

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def running(self) -> int:
        """Deliveries in progress."""
        with self.changed:
            return sum(self.in_flight.values())

    def dispatch(self) -> int:
        """Give new events their endpoints' deliveries, claim due deliveries for the free threads
        and start them; returns how many were started."""
        if not self.stopping.is_set():
            fan_out(self.deps)
        with self.changed:
            busy = Counter(self.in_flight)
        free = self.settings.concurrency - sum(busy.values())
        if free <= 0 or self.stopping.is_set():
            return 0
        claimed = claim_due(self.deps, self.settings, free, busy, self.merchant_id)
        for event in claimed:
            with self.changed:
                self.in_flight[event.merchant_id] += 1
            self.pool.submit(self._deliver, event)
        return len(claimed)

    def _deliver(self, event: ClaimedEvent) -> None:
        try:
            result = send(self.session, self.settings, event, self.deps.clock())
            self._record(event, result)
        except Exception:  # noqa: BLE001 - the lease runs out and another attempt follows
            logger.exception("webhook %s attempt %s could not be completed",
                             event.webhook_id, event.attempt_no)
        finally:
            with self.changed:
                self.in_flight[event.merchant_id] -= 1
                if not self.in_flight[event.merchant_id]:
                    del self.in_flight[event.merchant_id]
                self.changed.notify_all()

    def _record(self, event: ClaimedEvent, result: AttemptResult) -> None:
        """Write the attempt's result, trying again while the database is unreachable.

        The receiver may already have the webhook: a result written late, while the
        lease is still this worker's, saves sending it again. Only a write whose COMMIT
        was never sent is repeated (one that may have reached the server could have
        taken effect); the tries end with the lease or when the process stops.
        """
        pauses = Backoff(first=RETRY_FIRST_PAUSE, cap=RETRY_MAX_PAUSE)
        while True:
            forget_commits()
            try:
                record_attempt(self.deps, event, result)
                return
            except Exception as error:
                pause = pauses.next_pause()
                if (not database_unreachable(error) or commit_sent() or self._ending()
                        or self.deps.clock() + timedelta(seconds=pause) >= event.lease_until):
                    raise
                logger.warning("webhook %s: the result of attempt %s could not be written; "
                               "trying again in %.1f s", event.webhook_id, event.attempt_no, pause,
                               exc_info=True)
            self.stopping.wait(pause)

    def _ending(self) -> bool:
        """close() was called, or the process is exiting (its main thread has ended)."""
        return self.stopping.is_set() or not threading.main_thread().is_alive()

    def wait(self, timeout: float | None = None, *, until_running: int = 0) -> bool:
        """Wait until at most `until_running` deliveries are in progress; False on timeout."""
        with self.changed:
            return self.changed.wait_for(
                lambda: sum(self.in_flight.values()) <= until_running, timeout)

    def start(self, poll_interval: float = POLL_INTERVAL) -> None:
        """Keep claiming due events in a background thread until close() or the end of the process.

        If the first claim fails (the database is unreachable), nothing is started and
        the error is raised: calling start() again tries again.
        """
        if self.feeder is None:
            self.dispatch()  # what is due now, even if the process ends at once (worker --once)
            self.feeder = threading.Thread(target=self._feed, args=(poll_interval,),
                                           name="webhook-feeder")
            self.feeder.start()

    def _feed(self, poll_interval: float) -> None:
        # The feeder ends with the main thread, so a stopping worker process exits
        # once the deliveries already started have been completed and logged.
        # With a backlog, claim again once a quarter of the threads are free rather than
        # after every delivery: a few events per claiming transaction, not one.
        # While claims fail (the database restarting), they are tried again after pauses
        # that double up to RETRY_MAX_PAUSE, each failure logged.
        refill_below = self.settings.concurrency - max(1, self.settings.concurrency // 4)
        failures = Backoff(first=poll_interval, cap=RETRY_MAX_PAUSE)
        while not self._ending():
            try:
                started = self.dispatch()
            except Exception:  # noqa: BLE001 - the database, most likely: log, pause, go on
                pause = failures.next_pause()
                logger.exception("claiming due webhooks failed; trying again in %.1f s", pause)
                self.stopping.wait(pause)
                continue
            failures.reset()
            with self.changed:
                if started:
                    self.changed.wait_for(
                        lambda: sum(self.in_flight.values()) <= refill_below or self.stopping.is_set(),
                        poll_interval)
                else:
                    self.changed.wait(poll_interval)

    def close(self) -> None:
        """Stop claiming, let running deliveries finish, release the threads and connections."""
        self.stopping.set()
        with self.changed:
            self.changed.notify_all()
        if self.feeder is not None:
            self.feeder.join()
        self.pool.shutdown(wait=True)
        self.session.close()


def deliver_due(deps, settings: DeliverySettings, merchant_id: int | None = None) -> int:
    """Deliver every event that is due now (only `merchant_id`'s when given), concurrently, and
    wait for them all; returns attempts made."""
    attempts = 0
    with Dispatcher(deps, settings, merchant_id) as dispatcher:
        while True:
            # Only this loop starts deliveries, so `running` can only fall during dispatch().
            running = dispatcher.running
            started = dispatcher.dispatch()
            attempts += started
            if started:
                continue
            if not running:  # nothing held back by busy threads: nothing is due
                return attempts
            dispatcher.wait(until_running=running - 1)


def start_delivery(app: Flask) -> Dispatcher:
    """The process's delivery feeder and threads for this app, started on first use (worker rounds).

    A start that failed (the database unreachable) is tried again by the next call.
    """
    dispatcher = app.extensions.get(DISPATCHER_KEY)
    if dispatcher is None:
        dispatcher = Dispatcher(web.deps(app), DeliverySettings.from_config(app.config))
        app.extensions[DISPATCHER_KEY] = dispatcher
    dispatcher.start()
    return dispatcher
