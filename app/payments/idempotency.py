"""Idempotency keys: an operation run once per key; a repeat gets what the first run kept."""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import simplejson

from .model import Caller, Transaction
from .deps import Deps, OnCreated

# A key is kept this long; after it, the key is free again (the worker purges older records).
REPLAY_WINDOW = timedelta(hours=24)
# A running record not touched for this long belongs to a run that died
# (the API's IDEMPOTENCY_ABANDONED_AFTER setting overrides it).
ABANDONED_AFTER = timedelta(seconds=30)
# A duplicate arriving while the first run goes on waits this many seconds for its answer.
WAIT_FOR_FIRST = 10.0
# Between two looks at a running key.
POLL_INTERVAL = 0.05


class KeyReused(Exception):
    """The key was used before for a different request."""


class StillRunning(Exception):
    """The first run under the key has not finished within the time a duplicate waits."""


@dataclass(frozen=True)
class Answer:
    """What a repeat of the key is answered with; opaque here (the API keeps an HTTP status and body)."""

    status: int
    body: str


@dataclass
class KeyRecord:
    """What is stored for one key."""

    id: int
    request_hash: str
    state: str  # "running" until the answer is kept, then "done"
    transaction_id: int | None
    response_status: int | None
    response_body: str | None
    created_at: datetime
    updated_at: datetime


class KeyRecords(Protocol):
    """The store of key records (app.store.idempotency), each call on a unit of work's connection."""

    def claim(self, conn: Any, merchant_id: int, mode: str, key: str, request_hash: str,
              now: datetime) -> int | None: ...
    def find(self, conn: Any, merchant_id: int, mode: str, key: str) -> KeyRecord | None: ...
    def link_transaction(self, uow: Any, record_id: int, tx: Transaction) -> None: ...
    def complete(self, conn: Any, record_id: int, status: int, body: str, now: datetime) -> None: ...
    def take_over(self, conn: Any, record_id: int, seen_updated_at: datetime,
                  now: datetime) -> bool: ...
    def release(self, conn: Any, record_id: int) -> None: ...
    def release_unless_linked(self, conn: Any, record_id: int) -> None: ...


# Runs the service, calling the hook it is given inside the unit of work that creates its transaction.
Operation = Callable[[OnCreated], Transaction]
# What to keep for repeats of what the operation came to (its transaction, or the error it
# raised); None keeps nothing, so a retry runs again.
Keep = Callable[[Transaction | Exception], Answer | None]


def request_hash(operation: str, target: str, body) -> str:
    """Fingerprint of a request (e.g. an HTTP method, path and body): the same key with another
    fingerprint is a misuse.

    It is taken before validation, so the body may hold lone surrogates ("\\ud800" escapes):
    "surrogatepass" encodes them as bytes no valid text has, keeping distinct bodies distinct.
    Its own canonical JSON (not the answers'), so a change in how answers are written never
    changes a stored fingerprint; the names "method" and "path" are those it was first taken with.
    """
    canonical = simplejson.dumps({"method": operation, "path": target, "body": body},
                                 use_decimal=True, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def run_once(deps: Deps, caller: Caller, key: str, fingerprint: str, operation: Operation,
             keep: Keep, *, records: KeyRecords, abandoned_after: timedelta = ABANDONED_AFTER,
             wait_for_first: float = WAIT_FOR_FIRST) -> Transaction | Answer:
    """Run the operation once for the caller's key: the transaction it creates, or, for a repeat,
    the answer the first run kept.

    The first run's transaction is linked to the key in the unit of work that creates it, and
    `keep` turns its outcome into the answer to keep. A key whose first run died is finished
    from the transaction it linked, or run again. A duplicate of a running key waits up to
    `wait_for_first` seconds, then raises StillRunning; another fingerprint raises KeyReused.
    """
    scope = (caller.merchant_id, caller.mode.value, key)
    deadline = time.monotonic() + wait_for_first
    while True:
        now = deps.clock()
        with deps.uow() as uow:
            record_id = records.claim(uow.conn, *scope, fingerprint, now)
            existing = None if record_id else records.find(uow.conn, *scope)
            if existing and existing.created_at < now - REPLAY_WINDOW:
                records.release(uow.conn, existing.id)  # expired: the key is free again
                existing, record_id = None, records.claim(uow.conn, *scope, fingerprint, now)
            uow.commit()
        if record_id:
            return _run_claimed(deps, records, record_id, operation, keep)
        if existing is None:
            continue  # released between our insert and read: try again
        if existing.request_hash != fingerprint:
            raise KeyReused()
        if existing.state == "done":
            return Answer(existing.response_status, existing.response_body)
        if existing.updated_at < now - abandoned_after:
            recovered = _recover(deps, caller, records, existing, operation, keep)
            if recovered is not None:
                return recovered
        if time.monotonic() > deadline:
            raise StillRunning()
        time.sleep(POLL_INTERVAL)


def _run_claimed(deps: Deps, records: KeyRecords, record_id: int, operation: Operation,
                 keep: Keep) -> Transaction:
    def link(uow, tx: Transaction) -> None:
        records.link_transaction(uow, record_id, tx)

    try:
        tx = operation(link)
    except Exception as error:
        _finish(deps, records, record_id, keep(error))
        raise
    _finish(deps, records, record_id, keep(tx))
    return tx


def _recover(deps: Deps, caller: Caller, records: KeyRecords, existing: KeyRecord,
             operation: Operation, keep: Keep) -> Transaction | None:
    """Finish a key whose first run died: from what it created, or by running again.

    None when another duplicate took the key over first.
    """
    with deps.uow() as uow:
        won = records.take_over(uow.conn, existing.id, existing.updated_at, deps.clock())
        uow.commit()
    if not won:
        return None
    if existing.transaction_id is None:
        return _run_claimed(deps, records, existing.id, operation, keep)
    with deps.uow(write=False) as uow:
        tx = uow.transactions.get_by_id(caller, existing.transaction_id)
    _finish(deps, records, existing.id, keep(tx))
    return tx


def _finish(deps: Deps, records: KeyRecords, record_id: int, answer: Answer | None) -> None:
    """Keep the answer for repeats; without one, free the key unless it created a transaction
    (a retry is then answered from that transaction)."""
    with deps.uow() as uow:
        if answer is None:
            records.release_unless_linked(uow.conn, record_id)
        else:
            records.complete(uow.conn, record_id, answer.status, answer.body, deps.clock())
        uow.commit()
