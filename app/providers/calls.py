"""The worker's provider calls: made beside the requests, many at once, bounded per provider account.

A request that needs a provider behind a network (opening a payment or payout, submitting a
refund) commits its Pending transaction with its provider check due now and answers; it never
waits on the provider. A worker process makes the call here:

- it is woken at once by PostgreSQL's NOTIFY of a committed call (app.store.provider_calls,
  Announcer), unless the call's account has no room, and when a call ends; it also polls, the
  fallback on SQLite and after a lost NOTIFY;
- up to `threads` calls are in flight in one process, at most `per_account` of them to one
  provider account, so a slow account cannot take the threads of the others;
- each account has a circuit breaker: after `failures_to_open` failed or timed-out calls in a
  row it stops calling that account for `cool_off` seconds (its transactions stay Pending with
  a ProviderMessage saying so), then lets one call through; an answer closes it again.

The call itself, and how its answer is recorded, is app.payments.settlement's
(settle_with_provider): the same code whether the request's own process or a worker asks.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Engine

from app.store.db import close_own, own_connection
from app.store.provider_accounts import accounts_by_id, record_calls_state
from app.store.provider_calls import CHANNEL, DueCall, account_id_of, defer_account_calls, due_calls
from app.util import Backoff

from app.payments import settlement
from app.payments.provider import ProviderDisconnected, ProviderUnavailable

logger = logging.getLogger(__name__)

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"
HEALTHY, SLOW = "healthy", "slow"  # with OPEN, an account's health as the dashboard shows it
# The listener looks for a stop request this often (seconds).
STOP_CHECK = 0.5
# The shortest time between two of a feeder's passes (seconds): the commits and call ends of
# 25 ms are met by one query and one claim, well within the hand-off's 50 ms.
MIN_PASS_GAP = 0.025
# The longest pause between a feeder's claims while they fail (seconds).
MAX_FAILED_CLAIM_PAUSE = 5.0


@dataclass(frozen=True)
class CallSettings:
    """How a worker makes provider calls (PROVIDER_CALL_* and PROVIDER_BREAKER_* settings)."""

    threads: int = 100
    per_account: int = 64
    failures_to_open: int = 5
    cool_off: float = 30.0  # seconds
    poll_interval: float = 0.5  # seconds; the fallback to NOTIFY
    slow_after: float = 2.0  # seconds: an account whose last answer took longer is shown as slow
    # Units of work the calls may have open at once: fewer than the process's pooled database
    # connections (DB_POOL_SIZE), so that the answers of a burst of calls wait a moment for a
    # pooled connection instead of each opening a connection of its own (an overflow
    # connection is closed once given back: measured at 64 calls in flight, 13 new PostgreSQL
    # sessions a second, each a backend started and a password exchange).
    database_slots: int = 8

    @classmethod
    def from_config(cls, config) -> "CallSettings":
        """The settings as app/config.py reads them (the defaults above are its defaults)."""
        return cls(
            threads=config["PROVIDER_CALL_THREADS"],
            per_account=config["PROVIDER_ACCOUNT_CONCURRENCY"],
            failures_to_open=config["PROVIDER_BREAKER_FAILURES"],
            cool_off=config["PROVIDER_BREAKER_COOL_OFF"],
            poll_interval=config["PROVIDER_CALL_POLL"],
            # Two pooled connections stay for the rest of the worker (its feeders, its jobs).
            database_slots=max(1, config["DB_POOL_SIZE"] - 2),
        )


class Breaker:
    """One provider account's circuit breaker: closed, open (no calls until the cool-off ends),
    half-open (one trial call; its answer closes the breaker, its failure opens it again)."""

    def __init__(self, failures_to_open: int, cool_off: float, *, slow_after: float = 2.0,
                 on_change: Callable[[str, datetime], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.failures_to_open = failures_to_open
        self.cool_off = cool_off
        self.slow_after = slow_after
        self.on_change = on_change  # told (health, since) when health() changes
        self.reported: str | None = None
        self.clock = clock
        self.failures = 0  # in a row
        self.opened_at: float | None = None
        self.open_since: datetime | None = None  # wall time, for the dashboard
        self.trial_running = False
        self.last_latency: float | None = None
        self.lock = threading.Lock()

    @property
    def state(self) -> str:
        with self.lock:
            return self._state()

    def _state(self) -> str:
        if self.opened_at is None:
            return CLOSED
        return OPEN if self.clock() < self.opened_at + self.cool_off else HALF_OPEN

    def reopens_in(self) -> float:
        """Seconds until an open breaker lets its trial call through (0 when not open)."""
        with self.lock:
            if self._state() != OPEN:
                return 0.0
            return self.opened_at + self.cool_off - self.clock()

    def refusal(self) -> str:
        """The ProviderMessage of a transaction whose call the open breaker holds back."""
        with self.lock:
            return self._refusal()

    def _refusal(self) -> str:
        stopped = self.open_since or datetime.now(timezone.utc)
        return (f"The provider did not answer {self.failures} calls in a row; Paydesk stopped "
                f"calling it at {stopped:%H:%M:%S} UTC and tries again shortly")

    def admit(self) -> str | None:
        """None when a call may be made now; otherwise why not (the ProviderMessage)."""
        with self.lock:
            state = self._state()
            if state == CLOSED:
                return None
            if state == HALF_OPEN and not self.trial_running:
                self.trial_running = True
                return None
            return self._refusal()

    def answered(self, latency: float) -> None:
        with self.lock:
            self.failures = 0
            self.opened_at = self.open_since = None
            self.trial_running = False
            self.last_latency = latency
        self._report()

    def failed(self) -> None:
        with self.lock:
            self.failures += 1
            self.trial_running = False
            if self.failures >= self.failures_to_open or self.opened_at is not None:
                self.opened_at = self.clock()
                self.open_since = self.open_since or datetime.now(timezone.utc)
        self._report()

    def health(self) -> str:
        """What the dashboard shows: open (no calls made), slow (the last answer took longer than
        slow_after) or healthy."""
        with self.lock:
            if self.opened_at is not None:
                return OPEN
            if self.last_latency is not None and self.last_latency > self.slow_after:
                return SLOW
            return HEALTHY

    def _report(self) -> None:
        health = self.health()
        with self.lock:
            changed, self.reported = health != self.reported, health
        if changed and self.on_change is not None:
            self.on_change(health, self.open_since or datetime.now(timezone.utc))

    @contextmanager
    def call(self) -> Iterator[None]:
        """Around one provider call: refused at once (ProviderUnavailable) while open; its
        failure (unavailable, timed out) or its answer counted."""
        refusal = self.admit()
        if refusal is not None:
            raise ProviderUnavailable(refusal)
        started = self.clock()
        try:
            yield
        except ProviderDisconnected:
            self.answered(self.clock() - started)  # the account was disconnected: not its fault
            raise
        except Exception:
            self.failed()
            raise
        self.answered(self.clock() - started)


class DatabaseSlots:
    """At most `size` units of work open at once among the threads that use them through
    bounded(); a thread's units inside its own open unit take no slot of their own (so
    they can never wait on each other)."""

    def __init__(self, size: int):
        self.free = threading.BoundedSemaphore(size)
        self.depth = threading.local()

    def bounded(self, unit_of_work: Callable[..., Any]) -> Callable[..., Any]:
        """unit_of_work, each unit it gives taking a slot while it is open."""
        def bounded_unit(*args, **kwargs):
            return self._slot_for(unit_of_work(*args, **kwargs))
        return bounded_unit

    @contextmanager
    def _slot_for(self, unit):
        depth = getattr(self.depth, "value", 0)
        if depth == 0:
            self.free.acquire()
        self.depth.value = depth + 1
        try:
            with unit as opened:
                yield opened
        finally:
            self.depth.value = depth
            if depth == 0:
                self.free.release()


class ProviderCalls:
    """One process's provider calls: a feeder thread claims due calls and a pool makes them.

    `merchant_id` limits it to one merchant's transactions (the tests run one per merchant).
    `engine`: listen for NOTIFY on it when it is PostgreSQL's.
    """

    def __init__(self, deps, settings: CallSettings, *, merchant_id: int | None = None,
                 engine: Engine | None = None):
        self.deps = deps
        # The calls' units of work take database slots; the feeder's (one thread) never waits for one.
        self.slots = DatabaseSlots(settings.database_slots)
        self.settings = settings
        self.merchant_id = merchant_id
        self.engine = engine if engine is not None and engine.dialect.name == "postgresql" else None
        self.pool = ThreadPoolExecutor(settings.threads, thread_name_prefix="provider-call")
        self.in_flight: dict[str, int] = defaultdict(int)
        self.breakers: dict[str, Breaker] = {}
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.feeder: threading.Thread | None = None
        self.listening: threading.Thread | None = None
        self.wake = threading.Event()  # set by a NOTIFY, a call's end, close()
        # The account of each wake_key seen in due calls, so a NOTIFY for an account with no
        # call to spare does not wake the feeder for nothing.
        self.account_of: dict[str, str] = {}
        self.listener = None  # the psycopg connection LISTENing on CHANNEL

    def __enter__(self) -> "ProviderCalls":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def running(self) -> int:
        with self.changed:
            return sum(self.in_flight.values())

    def breaker(self, account: str) -> Breaker:
        with self.changed:
            if account not in self.breakers:
                self.breakers[account] = Breaker(
                    self.settings.failures_to_open, self.settings.cool_off,
                    slow_after=self.settings.slow_after,
                    on_change=lambda health, since: self._record_health(account, health, since))
            return self.breakers[account]

    def _record_health(self, account: str, health: str, since: datetime) -> None:
        """Write a provider account's new health for the dashboard (not the simulator's)."""
        account_id = account_id_of(account)
        if account_id is None:
            return
        try:
            with self.deps.uow() as uow:
                record_calls_state(uow.conn, account_id, health, since)
                uow.commit()
        except Exception:  # noqa: BLE001 - shown late, never in the way of the calls
            logger.warning("recording the health of %s failed", account, exc_info=True)

    def capacity(self, account: str) -> int:
        """The calls the account may have in flight now: per_account while its breaker is closed,
        the one trial call while half-open, none while open."""
        breaker = self.breakers.get(account)
        state = breaker.state if breaker is not None else CLOSED
        return {CLOSED: self.settings.per_account, HALF_OPEN: 1}.get(state, 0)

    def has_room(self, account: str) -> bool:
        """The account may take one more call now (call with self.changed held)."""
        return self.in_flight[account] < self.capacity(account)

    def dispatch(self) -> int:
        """Claim the calls due now that the threads and the accounts' limits allow, and start
        them; returns how many were started.

        The due calls of an account whose breaker is open are put off until its trial, with
        the breaker's ProviderMessage. Then one query finds the calls to make (leaving out the
        accounts with no call to spare) and one statement claims them, however many there are.
        """
        free = self.settings.threads - self.running
        if free <= 0:
            return 0
        now = self.deps.clock()
        self._put_off_paused_accounts(now)
        with self.changed:  # (an open breaker's account has no room, calls in flight or not)
            full = frozenset(account for account in {*self.in_flight, *self.breakers}
                             if not self.has_room(account))
        with self.deps.uow(write=False) as uow:
            due = due_calls(uow.conn, now, free, merchant_id=self.merchant_id, skip=full)
        chosen = []
        with self.changed:
            for call in due:
                self.account_of[call.wake_key] = call.account
                if self.has_room(call.account):
                    self.in_flight[call.account] += 1  # left due otherwise: taken on a later pass
                    chosen.append(call)
        try:
            claimed = settlement.claim_provider_calls(self.deps, [call.tx_id for call in chosen], now)
        except Exception:
            for call in chosen:
                self._done(call)
            raise
        taken = [call for call in chosen if call.tx_id in claimed]
        for call in chosen:
            if call.tx_id not in claimed:
                self._done(call)  # another worker took it
        try:
            known, together = self._read(taken, claimed)
            # A batch's payouts to one Paystack account go in one bulk request (at most its limit).
            groups, _singles = settlement.transfer_groups(
                self.deps, [known[call.tx_id] for call in taken if call.tx_id in known],
                lambda read: read.tx.tx_no in together)
        except Exception:
            for call in taken:
                self._done(call)  # the claims lapse and the calls are made again
            raise
        call_of = {call.tx_id: call for call in taken}
        grouped = set()
        for group in groups:
            grouped.update(read.tx.id for read in group)
            self.pool.submit(self._call_together, [call_of[read.tx.id] for read in group], group)
        for call in taken:
            if call.tx_id not in grouped:
                self.pool.submit(self._call, call, known.get(call.tx_id))
        return len(claimed)

    def _read(self, calls: list[DueCall], claimed: dict) -> tuple[dict[int, settlement.AsRead], set[str]]:
        """What the claimed calls need besides their transactions (read with the claim), in one
        unit of work however many they are: the refunds' originals, the methods and their
        provider accounts; and the txNos of the payouts to open that a batch made."""
        if not calls:
            return {}, set()
        with self.deps.uow(write=False) as uow:
            found = dict(claimed)
            originals = {tx.original_id for tx in found.values() if tx.original_id} - found.keys()
            if originals:
                found.update(uow.transactions.many_for_worker(sorted(originals)))
            account_ids = {account_id_of(call.account) for call in calls} - {None}
            accounts = accounts_by_id(uow.conn, account_ids)
            known = {}
            for call in calls:
                tx = found.get(call.tx_id)
                if tx is not None:
                    method = uow.methods.of_transaction(tx)
                    account_id = method.provider_account_id if method else None
                    known[tx.id] = settlement.AsRead(tx, found.get(tx.original_id), method,
                                                     accounts.get(account_id))
            opening = [read.tx.tx_no for read in known.values() if settlement.opens_a_transfer(read)]
            together = uow.batches.of_batches(opening) if len(opening) > 1 else set()
        return known, together

    def _put_off_paused_accounts(self, now: datetime) -> None:
        """Each provider account whose breaker is open: its calls due now wait for the trial."""
        with self.changed:
            paused = [(account_id_of(account), breaker) for account, breaker in self.breakers.items()
                      if account_id_of(account) is not None and breaker.state == OPEN]
        for account_id, breaker in paused:
            until = now + timedelta(seconds=max(breaker.reopens_in(), 0.0))
            with self.deps.uow() as uow:
                defer_account_calls(uow.conn, account_id, now, until, breaker.refusal())
                uow.commit()

    def worth_waking_for(self, key: str) -> bool:
        """A NOTIFY's wake_key names a call this process could start: its account is unknown
        yet or has room."""
        with self.changed:
            account = self.account_of.get(key)
            return account is None or self.has_room(account)

    def _call(self, call: DueCall, known: settlement.AsRead | None) -> None:
        try:
            call_deps = replace(self.deps, uow=self.slots.bounded(self.deps.uow))
            settlement.settle_with_provider(call_deps, call.tx_id, source="worker", known=known,
                                            gate=self.breaker(call.account).call)
        except Exception:  # noqa: BLE001 - logged; the claim lapses and the call is made again
            logger.exception("provider call for transaction %s failed", call.tx_id)
        finally:
            self._done(call)

    def _call_together(self, calls: list[DueCall], group: list[settlement.AsRead]) -> None:
        """A group of payouts opened with one request (settlement.settle_transfers_together)."""
        try:
            call_deps = replace(self.deps, uow=self.slots.bounded(self.deps.uow))
            settlement.settle_transfers_together(call_deps, group, source="worker",
                                                 gate=self.breaker(calls[0].account).call)
        except Exception:  # noqa: BLE001 - logged; the claims lapse and the calls are made again
            logger.exception("provider call for transactions %s failed", [call.tx_id for call in calls])
        finally:
            for call in calls:
                self._done(call)

    def _done(self, call: DueCall) -> None:
        with self.changed:
            self.in_flight[call.account] -= 1
            self.changed.notify_all()
        self.wake.set()  # its account may have a call to spare now

    def run_until_idle(self) -> int:
        """Dispatch until nothing is due and nothing is in flight; returns the calls made."""
        made = 0
        while True:
            # Only this loop starts calls, so `running` can only fall during dispatch().
            running = self.running
            started = self.dispatch()
            made += started
            if started:
                continue
            if not running:
                return made
            self.wait(until_running=running - 1)

    def wait(self, timeout: float | None = None, *, until_running: int = 0) -> bool:
        """Wait until at most `until_running` calls are in flight; False on timeout."""
        with self.changed:
            return self.changed.wait_for(lambda: sum(self.in_flight.values()) <= until_running, timeout)

    def start(self) -> None:
        """Make the calls due now, then keep making them in background threads until close():
        a feeder that claims and starts them when woken, and on PostgreSQL a listener that
        wakes it at each NOTIFY."""
        if self.feeder is None:
            self.dispatch()
            # They end with the main thread, once the calls in flight have been made and recorded.
            self.feeder = threading.Thread(target=self._feed, name="provider-call-feeder")
            self.feeder.start()
            if self.engine is not None:
                self.listening = threading.Thread(target=self._listen, name="provider-call-listener")
                self.listening.start()

    def _feed(self) -> None:
        # While claims fail (the database restarting) they are tried again after pauses that
        # double up to MAX_FAILED_CLAIM_PAUSE, each failure logged, as the webhook feeder does.
        failures = Backoff(first=self.settings.poll_interval, cap=MAX_FAILED_CLAIM_PAUSE)
        while not self._ending():
            self.wake.clear()  # a wake-up from now on is seen by the wait below
            try:
                started = self.dispatch()
            except Exception:  # noqa: BLE001 - the database, most likely: log, pause, go on
                pause = failures.next_pause()
                logger.exception("claiming due provider calls failed; trying again in %.1f s", pause)
                self.stopping.wait(pause)
                continue
            failures.reset()
            if not started:
                # Until a NOTIFY, a call ends, or the poll interval passes (the fallback).
                self.wake.wait(self.settings.poll_interval)
            # The commits and call ends of a busy moment are met by one pass, not one each.
            self.stopping.wait(MIN_PASS_GAP)

    def _listen(self) -> None:
        """Wake the feeder at each NOTIFY on CHANNEL; a lost connection is listened again after
        a pause (the feeder polls meanwhile)."""
        failures = Backoff(first=self.settings.poll_interval, cap=MAX_FAILED_CLAIM_PAUSE)
        while not self._ending():
            try:
                # In slices of STOP_CHECK seconds, so that close() is not kept waiting.
                for notice in self._listening().notifies(timeout=STOP_CHECK):
                    if self.worth_waking_for(notice.payload):
                        self.wake.set()
                failures.reset()
            except Exception:  # noqa: BLE001 - a lost connection: the feeder polls meanwhile
                pause = failures.next_pause()
                logger.warning("listening for provider calls failed; polling, listening again in "
                               "%.1f s", pause, exc_info=True)
                self._stop_listening()
                self.stopping.wait(pause)

    def _listening(self):
        if self.listener is None:
            listener = own_connection(self.engine)  # closed by close(), or when it breaks
            self.listener = listener
            listener.execute(f"LISTEN {CHANNEL}")
        return self.listener

    def _stop_listening(self) -> None:
        close_own(self.listener, "the provider-call listener")
        self.listener = None

    def _ending(self) -> bool:
        return self.stopping.is_set() or not threading.main_thread().is_alive()

    def close(self) -> None:
        """Stop claiming, let the calls in flight end, release the threads and the listener."""
        self.stopping.set()
        self.wake.set()
        with self.changed:
            self.changed.notify_all()
        for thread in (self.feeder, self.listening):
            if thread is not None:
                thread.join()
        self.pool.shutdown(wait=True)
        self._stop_listening()

