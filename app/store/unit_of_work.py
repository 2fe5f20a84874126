"""The unit of work: one database transaction, its repositories, and how its writes are sent
and committed (together, before its next statement, with the durability it asks for).

Besides the repositories it holds, a unit appends the rows every operation writes alike: status
history, the webhook outbox, Idempotency-Key links and the audit log.
"""
from __future__ import annotations

import json
import threading
import weakref

from psycopg.pq import TransactionStatus
from sqlalchemy import Connection, Engine, RowMapping, event, text
from sqlalchemy.exc import IntegrityError

from app.payments.events import event_payload, event_type, new_event_id, new_webhook_id
from app.payments.model import Caller, Kind, NotHeld, ReferenceTaken, Status, Transaction
from app.payments.notifications import NotificationEvent, money_failed
from app.util import dumps, utcnow

from .account_resolutions import AccountResolutionRepository
from .approvals import ApprovalRepository
from .bank_lists import BankListRepository
from .batches import BatchRepository
from .db import is_unique_violation, note_commit_sent
from .disputes import DisputeRepository
from .encryption import SecretBox
from .merchants import MerchantRepository
from .method_cache import MethodCache
from .methods import MethodRepository
from .notes import NoteRepository
from .notifications import event_row
from .recipients import RecipientRepository
from .provider_calls import Announcer
from . import token_limits
from .refund_guard import minor_units
from .tables import (
    audit_log,
    events,
    idempotency_keys,
    notification_events,
    status_history,
    transactions,
    webhook_events,
)
from .transactions import TransactionRepository
from .writes import Writes

_SYNCHRONOUS_COMMIT_OFF = text("SET LOCAL synchronous_commit TO OFF")


class NewEvent:
    """An event row inserted in a unit's batch: its id, once the batch is sent (app.store.writes)."""

    def __init__(self) -> None:
        self.id = None


class UnitOfWork:
    """One database transaction: `with UnitOfWork(engine) as uow: ...; uow.commit()`.

    Leaving the block without commit() rolls back. `write=True` takes SQLite's
    write lock at BEGIN (PostgreSQL locks rows with FOR UPDATE instead); a read
    unit (`write=False`) runs in autocommit on PostgreSQL.

    Inserts and updates that nothing reads back (new transactions, status changes, history,
    audit, outbox) wait in `writes` and are sent together (app.store.writes): at commit(), or
    before the unit's next statement. A unit made of such writes alone is one statement.
    """

    def __init__(self, engine: Engine, *, write: bool = True, method_cache: MethodCache | None = None,
                 box: SecretBox | None = None, announcer: Announcer | None = None):
        self.engine = engine
        self.write = write
        self.method_cache = method_cache
        self.box = box  # seals and opens secrets at rest (webhook signing secrets); None: none here
        self.announcer = announcer  # tells the workers of provider calls committed due (PostgreSQL)

    def __enter__(self) -> "UnitOfWork":
        self._conn: Connection | None = None
        self._tx = None  # SQLAlchemy's transaction (none for a read unit on PostgreSQL)
        self._autocommit = None  # the driver connection a read unit put in autocommit
        self.writes = Writes()
        self._relax = False  # relax_durability() was asked for
        self._relaxed = False  # ... and the database was told
        self._sending = False
        self._due_calls: list[Transaction | None] = []  # see call_due_now()
        self.transactions = TransactionRepository(self)
        self.methods = MethodRepository(self, self.method_cache)
        self.merchants = MerchantRepository(self)
        self.approvals = ApprovalRepository(self)
        self.notes = NoteRepository(self)
        self.bank_lists = BankListRepository(self)
        self.disputes = DisputeRepository(self)
        self.recipients = RecipientRepository(self)
        self.account_resolutions = AccountResolutionRepository(self)
        self.batches = BatchRepository(self)
        return self

    @property
    def conn(self) -> Connection:
        """The unit's connection, taken from the pool when first needed (a unit whose reads
        the method cache answers takes none)."""
        if self._conn is None:
            conn = self.engine.connect()
            if self.write:
                _send_writes_before_statements(self.engine)
                _WRITE_UNITS[conn] = self
                if not self.is_postgres:
                    conn = conn.execution_options(write=True)  # BEGIN IMMEDIATE (app.store.db)
                self._tx = conn.begin()
            elif self.is_postgres:
                # Reads see committed data statement by statement; without BEGIN and
                # ROLLBACK they cost one round trip each instead of three. The driver's own
                # switch, set back before the connection returns to the pool: SQLAlchemy's
                # isolation_level option costs more than this unit's statement.
                self._autocommit = conn.connection.driver_connection
                self._autocommit.autocommit = True
            else:
                self._tx = conn.begin()
            self._conn = conn
        return self._conn

    def __exit__(self, *exc) -> None:
        if self._conn is None:
            return
        try:
            if self._tx is not None and self._tx.is_active:
                self._tx.rollback()
        finally:
            if self._autocommit is not None:
                self._leave_autocommit(self._autocommit)
            _WRITE_UNITS.pop(self._conn, None)  # (the unit holds its connection: never collected)
            self._conn.close()

    def _leave_autocommit(self, dbapi) -> None:
        """The unit's driver connection out of autocommit, or thrown away (a broken one): never
        pooled in autocommit."""
        try:
            dbapi.autocommit = False
        except Exception:  # noqa: BLE001 - a broken connection: discarded, not returned
            self._conn.invalidate()

    def commit(self) -> None:
        """Make everything done in this unit permanent."""
        if self._conn is None and not self.writes.waiting:
            return  # nothing was read or written
        if self.writes.waiting and self.is_postgres and self.writes.fits_one_statement and self._nothing_sent():
            # The writes are the whole transaction: one statement in autocommit, no BEGIN or
            # COMMIT (SQLAlchemy's commit below then finds no transaction open on the server).
            dbapi = self.conn.connection.driver_connection
            dbapi.autocommit = True
            try:
                note_commit_sent()  # from here on the writes may have taken effect
                self._send_writes()
            finally:
                self._leave_autocommit(dbapi)
        else:
            self._send_writes()
        if self._tx is not None:  # (a read unit on PostgreSQL commits each statement itself)
            self._tx.commit()
        self._announce_due_calls()

    def call_due_now(self, tx: Transaction | None) -> None:
        """This unit makes tx's provider call due now: once it has committed, the workers are
        told (app.store.provider_calls.Announcer). None: a transaction this unit has not read."""
        self._due_calls.append(tx)

    def _announce_due_calls(self) -> None:
        # After the commit, so the transaction that wrote them never notifies (see Announcer);
        # a new transaction's method is known by now (a refund takes it from its payment's row).
        if self._due_calls and self.announcer is not None:
            self.announcer.announce_due(self._due_calls)
        self._due_calls = []

    def rows(self, statement, params: dict) -> list[RowMapping]:
        """The rows of a read, each a mapping of its columns in order (a write unit's queued
        writes go first, as before any statement: see before_statement)."""
        return self.conn.execute(statement, params).mappings().all()

    def _nothing_sent(self) -> bool:
        """No statement of this unit has gone to PostgreSQL yet (no BEGIN either)."""
        return self.conn.connection.driver_connection.info.transaction_status is TransactionStatus.IDLE

    def before_statement(self) -> None:
        """Whatever the next statement reads sees the queued writes and the unit's durability."""
        if self._sending:
            return
        if self.writes.waiting:
            self._send_writes()
        elif self._relax and not self._relaxed:
            self._sending = True
            try:
                self.conn.execute(_SYNCHRONOUS_COMMIT_OFF)
            finally:
                self._sending = False
            self._relaxed = True

    def _send_writes(self) -> None:
        new_references = [write.values["reference"] for write in self.writes.pending
                          if write.is_insert and write.table is transactions]
        relax = self._relax and not self._relaxed
        self._sending = True
        try:
            held = self.writes.send(self.conn, postgres=self.is_postgres, relax_durability=relax)
        except IntegrityError as error:
            if new_references and is_unique_violation(error):
                raise ReferenceTaken(new_references[0]) from error
            raise
        finally:
            self._sending = False
        if not held:
            raise NotHeld()
        self._relaxed = self._relaxed or relax

    def relax_durability(self) -> None:
        """Let this unit's commit return before the database has flushed it to disk.

        For work that is redone if a database server crash loses it (a provider's answer the
        worker asks for again, delivery bookkeeping): PostgreSQL's synchronous_commit off for
        this transaction only, set with the unit's next statement (by the statement that sends
        its writes, when that comes first). Other sessions see the commit at once, as always;
        the wait for the disk flush is what is saved. SQLite (embedded, synchronous=NORMAL in
        WAL mode) is left as it is.
        """
        self._relax = self.is_postgres

    @property
    def is_postgres(self) -> bool:
        """PostgreSQL (row locks, SKIP LOCKED) rather than SQLite."""
        return self.engine.dialect.name == "postgresql"

    def record_history(self, tx: Transaction, from_status: Status | None, source: str, note=None):
        """Append a status change to the transaction's history."""
        self.writes.insert(status_history, dict(
            transaction_id=self.writes.id_of(tx),
            from_status=from_status.value if from_status else None,
            to_status=tx.status.value,
            source=source,
            note=note,
            at=tx.updated_at,
        ))
        if tx.kind is not Kind.PAYMENT and tx.status in (Status.FAILED, Status.DECLINED):
            self.notify(money_failed(tx))  # a refund or payout the provider turned down

    def notify(self, event: NotificationEvent) -> None:
        """Record an event for the users who chose its kind of e-mail notification, in this same
        transaction (the worker hands it out and mails it: app.auth.notifications)."""
        self.writes.insert(notification_events, event_row(event, utcnow()))

    def enqueue_webhook(self, tx: Transaction, webhook_id: str | None = None) -> None:
        """Record the event of tx's new status and write its webhook to the callbackUrl into the
        outbox, in this same transaction (in the unit's batch: no statement of their own), under
        webhook_id (a new random one when none is given). The merchant's endpoints get theirs
        from the delivery workers (app.webhooks.endpoints.fan_out)."""
        webhook_id = webhook_id or new_webhook_id()
        payload = dumps(event_payload(tx))
        kind = event_type(tx)
        event = NewEvent()
        self.writes.insert(events, dict(
            public_id=new_event_id(),
            merchant_id=tx.merchant_id,
            mode=tx.mode.value,
            event_type=kind,
            transaction_id=self.writes.id_of(tx),
            tx_no=tx.tx_no,
            webhook_id=webhook_id,
            payload=payload,
            created_at=tx.updated_at,
        ), row=event)
        if not tx.callback_url:
            return
        self.writes.insert(webhook_events, dict(
            merchant_id=tx.merchant_id,
            mode=tx.mode.value,
            transaction_id=self.writes.id_of(tx),
            webhook_id=webhook_id,
            event_type=kind,
            url=tx.callback_url,
            payload=payload,
            state="pending",
            attempts=0,
            next_attempt_at=tx.updated_at,
            created_at=tx.updated_at,
            event_id=self.writes.id_of(event),
        ))

    def take_token_limit(self, token_id: int, day, kind: str, currency: str, amount_minor: int,
                         daily_minor: int) -> int | None:
        """Take an amount from a token's daily limit, now (app.store.token_limits.take): None
        when taken, otherwise what is left of it."""
        return token_limits.take(self.conn, token_id, day, kind, currency, amount_minor, daily_minor)

    def link_idempotency_key(self, record_id: int, tx: Transaction) -> None:
        """Note on an Idempotency-Key's record the transaction its request created or moved."""
        self.writes.update(idempotency_keys, record_id, dict(transaction_id=self.writes.id_of(tx)))

    def audit(self, caller: Caller, action: str, target=None, amount=None, currency=None,
              detail=None, *, both_modes: bool = False) -> None:
        """Append to the caller's audit log: who did what, for how much, from where (`both_modes`
        for changes that belong to no mode, such as users)."""
        self.writes.insert(audit_log, dict(
            merchant_id=caller.merchant_id,
            mode=None if both_modes else caller.mode.value,
            actor=caller.actor,
            action=action,
            target=target,
            amount_minor=minor_units(self.writes, amount, currency) if amount is not None else None,
            currency=currency,
            detail=json.dumps(detail) if detail else None,
            ip=caller.ip,
            at=utcnow(),
        ))


# The write unit each connection serves while the unit lasts, for the statement listener below
# (a dictionary rather than an execution option: setting one costs a write unit a third of its
# pool checkout). The unit removes itself when it ends.
_WRITE_UNITS: dict = {}
_ENGINES_WITH_UNITS: weakref.WeakSet = weakref.WeakSet()
_REGISTERING = threading.Lock()


def _send_writes_before_statements(engine: Engine) -> None:
    """Have every statement on a write unit's connection run the unit's before_statement first
    (one listener per engine: one per connection cost more than the statement's own Python)."""
    if engine in _ENGINES_WITH_UNITS:
        return
    with _REGISTERING:
        if engine in _ENGINES_WITH_UNITS:
            return

        @event.listens_for(engine, "before_execute")
        def _before(conn, _statement, _multiparams, _params, _execution_options):
            unit = _WRITE_UNITS.get(conn)
            if unit is not None:
                unit.before_statement()

        _ENGINES_WITH_UNITS.add(engine)
