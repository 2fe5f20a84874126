"""The provider calls the workers owe: Pending transactions whose provider check is due, each with
the provider account it goes to, and the wake-up a worker listens for on PostgreSQL.

A request that hands a call to the workers commits its transaction with `provider_check_at` due
now; triggers on transactions (migration 0033) keep a row in provider_calls with that due time,
and once the commit has returned, the unit of work hands the transaction's wake_key() to its
process's Announcer, which sends it as NOTIFY on CHANNEL beside the requests. A worker takes a
call with claim_provider_checks (TransactionRepository), which pushes the row's due_at past the
call's time (the transaction's own row is not written), so two workers never make the same call
at once; the provider's answer, written on the transaction, moves or deletes the row.

Why not a trigger in the committing transaction (migration 0016 had one, 0017 drops it):
PostgreSQL holds one database-wide lock from a notifying transaction's commit until its WAL
flush ends, so every create through a provider waited for the others' flushes. Measured with the
production-path benchmark and no worker running, creates/s through Paystack were 0.46 of the
simulator's with the trigger and 1.01 without it. A NOTIFY from a transaction that writes nothing
needs no flush, and the request pays only for adding a key to a set. A process that stops between
its commit and the NOTIFY leaves the call to the workers' poll.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, exists, or_, select, update

from app.payments.model import Status

from .db import close_own, own_connection
from .tables import payment_methods, provider_calls, transactions

logger = logging.getLogger(__name__)

# The NOTIFY channel; a notification's payload is wake_key() of a transaction that came due
# ("merchant_id mode method_id"), or "" for one whose method is not known.
CHANNEL = "paydesk_provider_calls"
# The key of calls to a provider account is ACCOUNT_PREFIX + its id; of calls whose method has
# no provider account (the simulator's), SIMULATOR.
ACCOUNT_PREFIX = "account:"
SIMULATOR = "simulator"

def account_key(account_id: int | None) -> str:
    """The key of the calls to a provider account (DueCall.account): SIMULATOR for none."""
    return SIMULATOR if account_id is None else f"{ACCOUNT_PREFIX}{account_id}"


def account_id_of(key: str) -> int | None:
    """The provider account an account_key() names; None for the simulator's."""
    return int(key.removeprefix(ACCOUNT_PREFIX)) if key.startswith(ACCOUNT_PREFIX) else None


# A transaction's method row: the merchant's method of that id, for its mode or for every mode.
_METHOD_OF_TRANSACTION = and_(
    payment_methods.c.merchant_id == transactions.c.merchant_id,
    payment_methods.c.method_id == transactions.c.payment_method,
    or_(payment_methods.c.mode.is_(None), payment_methods.c.mode == transactions.c.mode),
)


def wake_key(merchant_id: int, mode: str, method_id: str) -> str:
    """What a NOTIFY says of a transaction that came due: its merchant, mode and method, which
    name the provider account its call goes to."""
    return f"{merchant_id} {mode} {method_id}"


@dataclass(frozen=True)
class DueCall:
    """A transaction whose provider call is due, and the provider account the call goes to."""

    tx_id: int
    account: str  # "account:<id>" of provider_accounts, or SIMULATOR
    wake_key: str = ""  # wake_key() of the transaction


def due_calls(conn: Connection, now: datetime, limit: int, *, merchant_id: int | None = None,
              skip: frozenset[str] = frozenset()) -> list[DueCall]:
    """The calls due at `now`, oldest first (only `merchant_id`'s when given), leaving out the
    calls to the accounts in `skip` (keys as DueCall.account: those with no call to spare)."""
    query = (
        select(transactions.c.id, payment_methods.c.provider_account_id, transactions.c.merchant_id,
               transactions.c.mode, transactions.c.payment_method)
        .select_from(provider_calls
                     .join(transactions, transactions.c.id == provider_calls.c.transaction_id)
                     .outerjoin(payment_methods, _METHOD_OF_TRANSACTION))
        .where(provider_calls.c.due_at <= now)
        .order_by(provider_calls.c.due_at)
        .limit(limit)
    )
    if merchant_id is not None:
        query = query.where(transactions.c.merchant_id == merchant_id)
    skipped = [account_id for account_id in map(account_id_of, skip) if account_id is not None]
    if skipped:
        query = query.where(or_(payment_methods.c.provider_account_id.is_(None),
                                payment_methods.c.provider_account_id.not_in(skipped)))
    if SIMULATOR in skip:
        query = query.where(payment_methods.c.provider_account_id.is_not(None))
    return [DueCall(tx_id, account_key(account), wake_key(merchant, mode, method))
            for tx_id, account, merchant, mode, method in conn.execute(query)]


def defer_account_calls(conn: Connection, account_id: int, now: datetime, until: datetime,
                        message: str) -> int:
    """Put off every call due now to a provider account (its circuit breaker is open) until
    `until`, each transaction left as it is (Pending, or Authorized with a cancel outstanding)
    with `message` as its ProviderMessage; how many. One statement, so a paused account's
    waiting calls cost nothing until it is tried again."""
    of_account = exists().where(_METHOD_OF_TRANSACTION, payment_methods.c.provider_account_id == account_id)
    owes_a_call = or_(transactions.c.status == Status.PENDING.value,
                      and_(transactions.c.status == Status.AUTHORIZED.value,
                           transactions.c.cancel_requested_at.is_not(None)))
    due = select(provider_calls.c.transaction_id).where(provider_calls.c.due_at <= now)
    result = conn.execute(
        update(transactions)
        .where(transactions.c.id.in_(due), owes_a_call, of_account)
        .values(provider_check_at=until, provider_message=message[:500], updated_at=now))
    return result.rowcount


# Seconds an announcer with nothing to send keeps its thread and connection.
IDLE_ANNOUNCER_ENDS_AFTER = 10.0
# The shortest time between two of a process's NOTIFY statements (seconds): at 500 creates/s a
# statement each would cost the web process a fifth of a core.
ANNOUNCE_EVERY = 0.01


class Announcer:
    """One process's NOTIFYs of committed due calls, sent by a thread of its own on a connection
    of its own that never writes (see the module's docstring). A burst of commits is announced
    in one statement, each wake key once."""

    def __init__(self, engine):
        self.engine = engine
        self.keys: set[str] = set()
        self.lock = threading.Lock()
        self.waiting = threading.Event()
        self.thread: threading.Thread | None = None
        self.connection = None  # the psycopg connection NOTIFY is sent on, in autocommit
        self.last_sent = 0.0  # time.monotonic() of the last NOTIFY statement

    def announce_due(self, due: Iterable) -> None:
        """Have the wake keys of these committed transactions (None: one not read) sent soon."""
        self.announce("" if tx is None else wake_key(tx.merchant_id, tx.mode.value, tx.payment_method)
                      for tx in due)

    def announce(self, keys: Iterable[str]) -> None:
        """Have the keys sent as NOTIFYs soon; never waits on the database."""
        with self.lock:
            self.keys.update(keys)
            if self.thread is None:
                # It ends with the main thread; the keys it had not sent are found by the poll.
                self.thread = threading.Thread(target=self._send_forever, name="provider-call-announcer",
                                               daemon=True)
                self.thread.start()
        self.waiting.set()

    def _send_forever(self) -> None:
        while True:
            if not self.waiting.wait(IDLE_ANNOUNCER_ENDS_AFTER):
                with self.lock:
                    if not self.keys:  # idle: the connection is given back, the thread ends
                        self.thread = None
                        self._disconnect()
                        return
            # A busy process announces at most every ANNOUNCE_EVERY seconds, each time what its
            # commits of that while made due; a quiet one at once.
            time.sleep(max(0.0, self.last_sent + ANNOUNCE_EVERY - time.monotonic()))
            self.waiting.clear()
            with self.lock:
                keys, self.keys = sorted(self.keys), set()
            if not keys:
                continue
            self.last_sent = time.monotonic()
            try:
                self._connected().execute("SELECT pg_notify($1, key) FROM unnest($2::text[]) AS key",
                                          [CHANNEL, keys])
            except Exception:  # noqa: BLE001 - the workers' poll finds these calls instead
                logger.warning("announcing %d due provider calls failed; the workers' poll will "
                               "find them", len(keys), exc_info=True)
                self._disconnect()

    def _connected(self):
        if self.connection is None:
            self.connection = own_connection(self.engine)
        return self.connection

    def _disconnect(self) -> None:
        close_own(self.connection, "the announcer's connection")
        self.connection = None
