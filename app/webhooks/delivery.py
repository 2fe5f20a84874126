"""Webhook delivery: claim due events from the outbox, send them signed, log each attempt, retry, resend.

An event is claimed in a short database transaction (PostgreSQL: FOR UPDATE SKIP
LOCKED, so several workers never take the same one; SQLite: the write lock
serialises the conditional UPDATE). Claiming counts the attempt and leases the
event: its next_attempt_at moves past the longest possible delivery, so an event
whose worker dies mid-delivery becomes due again when the lease ends instead of
being lost. The HTTP request runs outside any database transaction, on a thread
pool, and its result is written in a second short transaction that only applies
if the lease is still this worker's. While the database is unreachable, claiming and
writing results pause and try again (see RETRY_MAX_PAUSE); no database error ends the
delivery threads.
"""
from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import requests
from flask import Flask
from sqlalchemy import insert, select, update
from urllib3 import Timeout
from urllib3.exceptions import HTTPError, NameResolutionError, NewConnectionError

from app.payments.model import Mode
from app.store.db import commit_sent, database_unreachable, forget_commits
from app.store.merchants import active_webhook_secrets
from app.store.tables import webhook_attempts, webhook_events
from app.util import Backoff

from . import log
from .guard import AddressGuard, TargetRefused, check_url, guarded_session, parse_networks
from .signing import signed_headers

logger = logging.getLogger(__name__)

# Delays before attempts 2 to 8 (decisions.md): 8 attempts in all, then Failed.
RETRY_DELAYS = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=10),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
JITTER = 0.10  # each delay grows by a random 0-10% so retries of many events spread out
EXCERPT_BYTES = 4096
# A claimed event stays leased this long beyond the request's own time limit,
# enough to write the result; after that another worker may try it again.
LEASE_MARGIN = timedelta(seconds=45)
# With nothing due, the feeder looks for due events this often (seconds).
POLL_INTERVAL = 0.25
# While the database is unreachable, claims and result writes are tried again after pauses
# doubling from RETRY_FIRST_PAUSE (claims: from the poll interval) up to RETRY_MAX_PAUSE
# seconds: deliveries resume soon after it is back, and the log gets a line per pause.
RETRY_FIRST_PAUSE = 0.25
RETRY_MAX_PAUSE = 5.0
# A URL requests cannot use will never work: the event fails at once.
UNUSABLE_URL = (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                requests.exceptions.MissingSchema)


@dataclass(frozen=True)
class DeliverySettings:
    """How deliveries are made: guard, time limits, threads."""

    guard: AddressGuard = AddressGuard()
    connect_timeout: float = 5.0
    timeout: float = 15.0  # total: a 2xx arriving later than this is a failure
    concurrency: int = 16
    # At most this many deliveries of one merchant at once per worker, so a slow
    # receiver can never take every thread from the other merchants.
    per_merchant: int = 8

    @property
    def lease(self) -> timedelta:
        """How long a claimed event is reserved for the worker that claimed it."""
        return timedelta(seconds=self.timeout) + LEASE_MARGIN

    @classmethod
    def from_config(cls, config: Mapping) -> DeliverySettings:
        """Settings from the app's configuration (WEBHOOK_* keys)."""
        concurrency = int(config.get("WEBHOOK_CONCURRENCY", cls.concurrency))
        return cls(
            guard=AddressGuard(parse_networks(config.get("WEBHOOK_ALLOWED_NETWORKS", ""))),
            connect_timeout=float(config.get("WEBHOOK_CONNECT_TIMEOUT", cls.connect_timeout)),
            timeout=float(config.get("WEBHOOK_TIMEOUT", cls.timeout)),
            concurrency=concurrency,
            per_merchant=max(1, concurrency // 2),
        )


@dataclass(frozen=True)
class ClaimedEvent:
    """One event taken by this worker for one attempt."""

    event_id: int
    merchant_id: int
    mode: Mode
    webhook_id: str
    url: str
    payload: str
    attempt_no: int
    schedule_position: int  # 1 for the first attempt of the current retry schedule
    manual: bool
    lease_until: datetime
    secrets: list[str] = field(repr=False)


@dataclass(frozen=True)
class AttemptResult:
    """What one HTTP attempt gave."""

    started_at: datetime
    duration_ms: int
    request_headers: dict
    http_status: int | None = None
    response_excerpt: str | None = None
    error: str | None = None
    delivered: bool = False
    stop_retrying: bool = False  # 410, or a target that can never be delivered to


class WebhookNotFound(Exception):
    """No webhook with this id for this merchant and mode."""

    def __init__(self, webhook_id: str):
        super().__init__(f"Webhook {webhook_id} not found")


def retry_delay(schedule_position: int) -> timedelta | None:
    """Wait before the attempt after attempt `schedule_position` failed; None when none is left."""
    if schedule_position >= MAX_ATTEMPTS:
        return None
    return RETRY_DELAYS[schedule_position - 1] * (1 + random.uniform(0, JITTER))


def claim_due(deps, settings: DeliverySettings, limit: int,
              in_flight: Counter | None = None) -> list[ClaimedEvent]:
    """Claim up to `limit` due events, oldest due first, sharing fairly between merchants."""
    if limit <= 0:
        return []
    now = deps.clock()
    lease_until = now + settings.lease
    in_flight = in_flight or Counter()
    # Merchants already at their share are left out of the query, so that a long
    # backlog of one merchant cannot fill the candidate window and hide the others.
    at_share = [m for m, running in in_flight.items() if running >= settings.per_merchant]
    e = webhook_events.c
    candidates = (
        select(e.id, e.merchant_id, e.mode, e.webhook_id, e.url, e.payload, e.attempts,
               e.schedule_offset, e.next_attempt_manual)
        .where(e.state == "pending", e.next_attempt_at <= now, e.merchant_id.not_in(at_share))
        .order_by(e.next_attempt_at, e.id)
        .limit(limit * 4)
        .with_for_update(skip_locked=True)
    )
    with deps.uow() as uow:
        _relaxed_durability(uow)
        chosen = _fair_share(uow.conn.execute(candidates).all(), limit, in_flight,
                             settings.per_merchant)
        if not chosen:
            return []
        # Conditional, so that without row locks (SQLite) an event is still taken only once.
        taken = set(uow.conn.execute(
            update(webhook_events)
            .where(e.id.in_([row.id for row in chosen]), e.state == "pending",
                   e.next_attempt_at <= now)
            .values(attempts=e.attempts + 1, next_attempt_at=lease_until, next_attempt_manual=False)
            .returning(e.id)
        ).scalars())
        secrets = {key: active_webhook_secrets(uow.conn, key[0], Mode(key[1]), now)
                   for key in {(row.merchant_id, row.mode) for row in chosen if row.id in taken}}
        uow.commit()
    return [
        ClaimedEvent(
            event_id=row.id, merchant_id=row.merchant_id, mode=Mode(row.mode),
            webhook_id=row.webhook_id, url=row.url, payload=row.payload,
            attempt_no=row.attempts + 1,
            schedule_position=row.attempts + 1 - row.schedule_offset,
            manual=bool(row.next_attempt_manual), lease_until=lease_until,
            secrets=secrets[(row.merchant_id, row.mode)])
        for row in chosen if row.id in taken
    ]


def _relaxed_durability(uow) -> None:
    """Commit without waiting for PostgreSQL's disk flush (visibility to other workers is unchanged).

    Only a database server crash can lose such a commit, and then the event is
    merely sent again: delivery is at least once, and receivers deduplicate on
    webhook-id. Waiting for the flush costs about a third of delivery throughput.
    """
    if uow.is_postgres:
        uow.conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")


def _fair_share(rows, limit: int, in_flight: Counter, per_merchant: int) -> list:
    """The rows to take: in due order, no merchant above its share of concurrent deliveries."""
    taken_per_merchant = Counter(in_flight)
    chosen = []
    for row in rows:
        if len(chosen) == limit:
            break
        if taken_per_merchant[row.merchant_id] < per_merchant:
            taken_per_merchant[row.merchant_id] += 1
            chosen.append(row)
    return chosen


def send(session: requests.Session, settings: DeliverySettings, event: ClaimedEvent,
         sent_at: datetime) -> AttemptResult:
    """Make one HTTP attempt (no database work here)."""
    headers = {}
    started = time.monotonic()

    def result(**values) -> AttemptResult:
        elapsed_ms = round((time.monotonic() - started) * 1000)
        return AttemptResult(started_at=sent_at, duration_ms=elapsed_ms,
                             request_headers=headers, **values)

    if not event.secrets:  # the merchant needs a secret first; the schedule tries again later
        return result(error=f"Not sent: no active {event.mode.value} webhook secret")
    try:
        check_url(event.url)
        headers = signed_headers(event.webhook_id, sent_at, event.payload, event.secrets)
        response = session.post(
            event.url, data=event.payload.encode(), headers=headers, allow_redirects=False,
            stream=True, timeout=Timeout(connect=settings.connect_timeout, read=settings.timeout,
                                         total=settings.timeout))
    except TargetRefused as refused:
        return result(error=str(refused), stop_retrying=True)
    except UNUSABLE_URL as error:
        return result(error=f"Refused: callbackUrl is not usable ({error})"[:500], stop_retrying=True)
    except requests.RequestException as error:
        return result(error=_describe(error, settings))
    with response:
        excerpt, read_error = _excerpt(response)
    elapsed = time.monotonic() - started
    status = response.status_code
    if 200 <= status < 300:
        if elapsed <= settings.timeout:
            return result(http_status=status, response_excerpt=excerpt, delivered=True)
        return result(http_status=status, response_excerpt=excerpt,
                      error=f"Answered after {elapsed:.1f} s, over the {settings.timeout:g} s limit")
    if status == 410:
        return result(http_status=status, response_excerpt=excerpt,
                      error="410 Gone: the receiver asked for no more deliveries", stop_retrying=True)
    if 300 <= status < 400:
        location = response.headers.get("Location", "")[:300]
        return result(http_status=status, response_excerpt=excerpt,
                      error=f"Redirects are not followed (Location: {location})")
    return result(http_status=status, response_excerpt=excerpt, error=read_error)


def _excerpt(response: requests.Response) -> tuple[str, str | None]:
    """The first 4 KiB of the answer (the rest is never read) and a read error, if any."""
    try:
        data = response.raw.read(EXCERPT_BYTES, decode_content=True)
    except (HTTPError, OSError) as error:
        return "", f"Answer body could not be read: {type(error).__name__}"
    return data.decode("utf-8", "replace"), None


def _describe(error: requests.RequestException, settings: DeliverySettings) -> str:
    """A short, readable reason for a failed request."""
    if isinstance(error, requests.ConnectTimeout):
        return f"Connection timed out after {settings.connect_timeout:g} s"
    if isinstance(error, requests.Timeout):
        return f"No answer within {settings.timeout:g} s"
    reason = error.args[0] if error.args else error
    reason = getattr(reason, "reason", reason)
    if isinstance(reason, NameResolutionError):
        return f"Could not resolve host {reason.conn.host if reason.conn else ''}".strip()
    if isinstance(reason, NewConnectionError):
        cause = reason.__cause__ or reason.__context__
        detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(reason)
        return f"Connection failed: {detail}"[:500]
    if isinstance(error, requests.exceptions.SSLError):
        return f"TLS error: {reason}"[:500]
    return f"{type(error).__name__}: {reason}"[:500]


def record_attempt(deps, event: ClaimedEvent, result: AttemptResult) -> None:
    """Log the attempt and move the event on: delivered, failed, or due again per the schedule."""
    now = deps.clock()
    error = result.error[:500] if result.error else None
    values = {"last_http_status": result.http_status, "last_error": error}
    if result.delivered:
        values.update(state="delivered", delivered_at=now, next_attempt_at=None)
    else:
        delay = None if result.stop_retrying else retry_delay(event.schedule_position)
        if delay is None:
            values.update(state="failed", next_attempt_at=None)
        else:
            values.update(next_attempt_at=now + delay)
    e = webhook_events.c
    with deps.uow() as uow:
        _relaxed_durability(uow)
        uow.conn.execute(insert(webhook_attempts).values(
            event_id=event.event_id,
            attempt_no=event.attempt_no,
            started_at=result.started_at,
            duration_ms=result.duration_ms,
            http_status=result.http_status,
            request_headers=json.dumps(result.request_headers),
            response_excerpt=result.response_excerpt,
            error=error,
            manual=event.manual,
        ))
        # Only while the lease is still ours: after it ran out, or after a resend,
        # the event belongs to the newer attempt and this one is only logged.
        uow.conn.execute(
            update(webhook_events)
            .where(e.id == event.event_id, e.state == "pending", e.attempts == event.attempt_no,
                   e.next_attempt_at == event.lease_until)
            .values(**values)
        )
        uow.commit()


class Dispatcher:
    """Delivers due events on a thread pool, claiming only as many as it has free threads.

    Only one thread calls dispatch(): the caller of deliver_due(), or the feeder
    thread of a worker process (start()). Deliveries run on the pool, so a slow
    receiver holds one thread and nothing else.
    """

    def __init__(self, deps, settings: DeliverySettings):
        self.deps = deps
        self.settings = settings
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
        """Claim due events for the free threads and start delivering them; returns how many."""
        with self.changed:
            busy = Counter(self.in_flight)
        free = self.settings.concurrency - sum(busy.values())
        if free <= 0 or self.stopping.is_set():
            return 0
        claimed = claim_due(self.deps, self.settings, free, busy)
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


def deliver_due(deps, settings: DeliverySettings) -> int:
    """Deliver every event that is due now, concurrently, and wait for them all; returns attempts made."""
    attempts = 0
    with Dispatcher(deps, settings) as dispatcher:
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
    dispatcher = app.extensions.get("paydesk.webhooks")
    if dispatcher is None:
        dispatcher = Dispatcher(app.extensions["paydesk"], DeliverySettings.from_config(app.config))
        app.extensions["paydesk.webhooks"] = dispatcher
    dispatcher.start()
    return dispatcher


def resend_event(deps, merchant_id: int, mode: Mode, webhook_id: str, actor: str,
                 ip: str | None) -> log.Delivery:
    """Queue an event for an immediate manual attempt with a fresh retry schedule, and audit it."""
    now = deps.clock()
    e = webhook_events.c
    with deps.uow() as uow:
        row = uow.conn.execute(
            select(e.id, e.attempts)
            .where(e.merchant_id == merchant_id, e.mode == mode.value, e.webhook_id == webhook_id)
            .with_for_update()
        ).first()
        if row is None:
            raise WebhookNotFound(webhook_id)
        uow.conn.execute(
            update(webhook_events).where(e.id == row.id)
            .values(state="pending", next_attempt_at=now, next_attempt_manual=True,
                    schedule_offset=row.attempts)
        )
        uow.audit(merchant_id, mode, actor, "webhook.resend", target=webhook_id, ip=ip)
        uow.commit()
    with deps.uow(write=False) as uow:
        return log.get_delivery(uow.conn, merchant_id, mode, webhook_id)
