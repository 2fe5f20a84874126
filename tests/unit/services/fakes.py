"""In-memory stand-ins for what the services touch: the store and its unit of work, a provider, a clock.

The unit of work keeps the contract of app.store.unit_of_work.UnitOfWork that the services rely on:
it works on a copy of the committed tables, commit() makes the copy the committed state, and
leaving without commit() throws the copy away. It does not model concurrency: a write unit that
commits after another one committed in the meantime is an error here, not a lost update.
"""
from __future__ import annotations

import copy
import itertools
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from app.payments.events import event_type, new_webhook_id
from app.payments.model import (
    ACTIVE_REFUND_STATUSES,
    DECLINE_STATUSES,
    Caller,
    Kind,
    Mode,
    NotHeld,
    PaymentMethod,
    ReferenceTaken,
    Status,
    Transaction,
    new_tx_no,
)
from app.payments.money import fits_currency, from_minor, to_minor
from app.payments.provider import Bank, Outcome, ProvidersByName
from app.payments.refundable import RefundArithmetic
from app.payments.sandbox import FIXTURE_CREATED_BY
from app.payments.deps import Deps
from tests.unit.test_idempotency_core import MemoryRecords

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MERCHANT_INBOX = "https://merchant.example/paydesk-inbox"
CALLER = Caller(merchant_id=1, mode=Mode.LIVE, actor="api:test")
OTHER_MERCHANT = Caller(merchant_id=2, mode=Mode.LIVE, actor="api:other")

CARD = PaymentMethod("card", "Card", "card", ["EUR", "USD", "JPY"], [], None, None,
                     partial_refunds=True, provider="fake")
FULL_REFUND_ONLY = PaymentMethod("card-full-refund-only", "Card, full refunds", "card", ["EUR"], [],
                                 None, None, partial_refunds=False, provider="fake")
NG_PAYOUT = PaymentMethod("ng-bank-payout", "NGN bank payout", "payout", ["NGN"], ["NG"], "ng",
                          "nuban", partial_refunds=False, provider="fake")
METHODS = (CARD, FULL_REFUND_ONLY, NG_PAYOUT)
GTBANK = Bank("058", "Guaranty Trust Bank")


@dataclass(frozen=True)
class HistoryRow:
    """One status change, as status_history keeps it."""

    transaction_id: int
    from_status: Status | None
    to_status: Status
    source: str
    note: str | None


@dataclass(frozen=True)
class WebhookRow:
    """One event in the outbox."""

    transaction_id: int
    event_type: str
    url: str
    webhook_id: str


@dataclass(frozen=True)
class AuditRow:
    """One line of a merchant's audit log."""

    merchant_id: int
    mode: Mode
    actor: str
    action: str
    target: str | None
    amount: Decimal | None
    currency: str | None
    detail: dict | None = None


@dataclass
class Tables:
    """What the database holds."""

    transactions: dict[int, Transaction] = field(default_factory=dict)
    # What the database's triggers keep of each transaction's provider_check_at, and the
    # workers' claims on it (migration 0033's provider_calls): transaction id -> due.
    provider_calls: dict[int, datetime] = field(default_factory=dict)
    methods: dict[tuple[int, str], PaymentMethod] = field(default_factory=dict)
    default_callback_urls: dict[int, str | None] = field(default_factory=dict)
    history: list[HistoryRow] = field(default_factory=list)
    webhooks: list[WebhookRow] = field(default_factory=list)
    audit_log: list[AuditRow] = field(default_factory=list)
    key_records: MemoryRecords = field(default_factory=MemoryRecords)


def owner_of(tx: Transaction) -> Caller:
    """The scope a transaction lives in, as a caller of its own merchant and mode."""
    return Caller(tx.merchant_id, tx.mode, actor=tx.created_by)


class FakeStore:
    """The committed tables, the units of work over them, and what a test reads of them."""

    def __init__(self):
        self.committed = Tables()
        self.ids = itertools.count(1)  # a sequence: rollbacks do not rewind it
        self.commits = 0
        self.relaxed_commits: list[bool] = []  # per commit, in order: whether it skipped the flush
        # While set, a commit that skipped the flush is lost, as a database crash would lose it;
        # what it would have committed is kept in `lost` for the test to look at.
        self.crash_loses_relaxed_commits = False
        self.lost: list[Tables] = []
        self.open_write_units = 0
        self.locked: list[int] = []  # ids read for update, in order

    def unit_of_work(self, *, write: bool = True) -> FakeUnitOfWork:
        """What Deps.uow gives the services."""
        return FakeUnitOfWork(self, write=write)

    def working_copy(self) -> Tables:
        """A copy of the committed tables for one unit; the key records' id sequence stays shared."""
        sequence = self.committed.key_records.ids
        return copy.deepcopy(self.committed, {id(sequence): sequence})

    def add_merchant(self, caller: Caller, methods=METHODS, default_callback_url=MERCHANT_INBOX) -> None:
        """A merchant with its methods and its own inbox, committed."""
        for method in methods:
            self.committed.methods[caller.merchant_id, method.method_id] = method
        self.committed.default_callback_urls[caller.merchant_id] = default_callback_url

    def seed(self, tx: Transaction) -> Transaction:
        """Commit a transaction as if an earlier request had made it; returns it with its id.

        A Pending or Captured refund holds its amount on its original's row, as the refund
        service would have left it."""
        with self.unit_of_work() as uow:
            uow.transactions.add(tx)
            original = uow.conn.transactions.get(tx.original_id)
            if tx.kind is Kind.REFUND and original and tx.status in ACTIVE_REFUND_STATUSES:
                captured = tx.amount if tx.status is Status.CAPTURED else Decimal(0)
                uow.conn.transactions[original.id] = replace(
                    original, refund_reserved=_money(original.refund_reserved + tx.amount, tx.currency),
                    refund_captured=_money(original.refund_captured + captured, tx.currency))
            uow.commit()
        return tx

    def get(self, tx: Transaction | str, caller: Caller = CALLER) -> Transaction | None:
        """The committed state of a transaction: given as one (found in its own merchant and mode),
        or by its number in the caller's."""
        if isinstance(tx, Transaction):
            caller, tx = owner_of(tx), tx.tx_no
        with self.unit_of_work(write=False) as uow:
            return uow.transactions.get(caller, tx)

    def refunds_of(self, original: Transaction) -> list[Transaction]:
        """The committed refunds of an original, oldest first."""
        with self.unit_of_work(write=False) as uow:
            return uow.transactions.refunds_of(owner_of(original), original.id)

    def history_of(self, tx: Transaction) -> list[tuple[Status | None, Status, str]]:
        """Committed status changes of a transaction as (from, to, source)."""
        return [(row.from_status, row.to_status, row.source)
                for row in self.committed.history if row.transaction_id == tx.id]

    def webhooks_of(self, tx: Transaction) -> list[str]:
        """Event types committed to the outbox for a transaction."""
        return [row.event_type for row in self.committed.webhooks if row.transaction_id == tx.id]

    def webhook_ids_of(self, tx: Transaction) -> list[str]:
        """Webhook ids of the events committed to the outbox for a transaction."""
        return [row.webhook_id for row in self.committed.webhooks if row.transaction_id == tx.id]


def _money(amount: Decimal, currency: str) -> Decimal:
    """The amount as a row gives it back: in minor units, read with the currency's digits."""
    return from_minor(to_minor(amount, currency), currency)


class FakeUnitOfWork:
    """`with store.unit_of_work() as uow: ...; uow.commit()`: all of it, or nothing."""

    def __init__(self, store: FakeStore, *, write: bool):
        self.store = store
        self.write = write

    def __enter__(self) -> FakeUnitOfWork:
        self._begin()
        if self.write:
            self.store.open_write_units += 1
        return self

    def _begin(self) -> None:
        self.committed_before = self.store.commits
        self.relaxed = False
        self.conn = self.store.working_copy()  # the idempotency records are written through it
        self.transactions = FakeTransactions(self)
        self.methods = FakeMethods(self.conn)
        self.merchants = FakeMerchants(self.conn)

    def __exit__(self, *exc) -> None:
        if self.write:
            self.store.open_write_units -= 1
        self.conn = None  # rolled back, unless commit() already handed it over

    def commit(self) -> None:
        """Make the working copy the committed tables."""
        self.writing()
        assert self.store.commits == self.committed_before, (
            "another unit committed while this one was open; the fake does not model locks")
        if self.relaxed and self.store.crash_loses_relaxed_commits:
            self.store.lost.append(self.conn)
            self._begin()
            return
        self.store.committed = self.conn
        self.store.commits += 1
        self.store.relaxed_commits.append(self.relaxed)
        self._begin()  # what follows a commit is a new transaction, rolled back unless committed

    def relax_durability(self) -> None:
        """Noted per transaction, as PostgreSQL's SET LOCAL synchronous_commit is."""
        self.relaxed = True

    def writing(self) -> None:
        """Writes belong in write units: a read unit runs in autocommit on PostgreSQL."""
        assert self.write, "a write in a unit of work opened with write=False"

    def record_history(self, tx: Transaction, from_status: Status | None, source: str, note=None):
        self.writing()
        self.conn.history.append(HistoryRow(tx.id, from_status, tx.status, source, note))

    def enqueue_webhook(self, tx: Transaction, webhook_id: str | None = None) -> None:
        self.writing()
        if tx.callback_url:
            self.conn.webhooks.append(WebhookRow(tx.id, event_type(tx), tx.callback_url,
                                                 webhook_id or new_webhook_id()))

    def audit(self, caller: Caller, action: str, target=None, amount=None, currency=None,
              detail=None, *, both_modes: bool = False) -> None:
        self.writing()
        self.conn.audit_log.append(AuditRow(caller.merchant_id, caller.mode, caller.actor, action,
                                            target, amount, currency, detail))


class FakeTransactions:
    """TransactionRepository over a unit's working tables; reads hand out copies, as rows would."""

    def __init__(self, uow: FakeUnitOfWork):
        self.uow = uow
        self.rows = uow.conn.transactions

    def _read(self, tx: Transaction | None) -> Transaction | None:
        if tx is None:
            return None
        original = self.rows.get(tx.original_id)
        return replace(copy.deepcopy(tx), original_tx_no=original.tx_no if original else None)

    def _lock(self, tx: Transaction | None) -> Transaction | None:
        if tx is not None:
            self.uow.store.locked.append(tx.id)
        return tx

    def _in_scope(self, caller: Caller):
        return (tx for tx in self.rows.values()
                if (tx.merchant_id, tx.mode) == (caller.merchant_id, caller.mode))

    def _by_number(self, caller: Caller, tx_no: str) -> Transaction | None:
        """The stored row (not a read copy) with this number in the caller's scope, or None."""
        return next((tx for tx in self._in_scope(caller) if tx.tx_no == tx_no), None)

    def get(self, caller: Caller, tx_no: str, *, for_update: bool = False) -> Transaction | None:
        found = self._by_number(caller, tx_no)
        return self._lock(self._read(found)) if for_update else self._read(found)

    def get_by_id(self, caller: Caller, tx_id: int) -> Transaction | None:
        return next((self._read(tx) for tx in self._in_scope(caller) if tx.id == tx_id), None)

    def get_for_worker(self, tx_id: int, *, for_update: bool = False) -> Transaction | None:
        found = self._read(self.rows.get(tx_id))
        return self._lock(found) if for_update else found

    def lock_with_original(self, tx_id: int) -> tuple[Transaction, Transaction | None]:
        tx = self._read(self.rows[tx_id])
        original = self._read(self.rows.get(tx.original_id))
        for locked in sorted(filter(None, (tx, original)), key=lambda t: t.id):
            self._lock(locked)
        return tx, original

    def find_by_reference(self, caller: Caller, reference: str) -> str | None:
        return next((tx.tx_no for tx in self._in_scope(caller)
                     if tx.reference == reference and tx.kind is not Kind.REFUND), None)

    def add(self, tx: Transaction, *, announce: bool = True) -> Transaction:
        self.uow.writing()
        if tx.kind is not Kind.REFUND and self.find_by_reference(owner_of(tx), tx.reference):
            raise ReferenceTaken(tx.reference)
        tx.id = next(self.uow.store.ids)
        # Stored in minor units: read back with the currency's digits, as the database gives it.
        stored = replace(tx, amount=_money(tx.amount, tx.currency),
                         refund_reserved=_money(Decimal(0), tx.currency),
                         refund_captured=_money(Decimal(0), tx.currency))
        self._write_row(copy.deepcopy(stored))
        return tx

    def _write_row(self, row: Transaction) -> None:
        """Store the row, and keep provider_calls in step with its provider_check_at as the
        triggers do: set or cleared when it changes, left (with a worker's claim) when not."""
        before = self.rows.get(row.id)
        self.rows[row.id] = row
        if before is not None and before.provider_check_at == row.provider_check_at:
            return
        if row.provider_check_at is None:
            self.uow.conn.provider_calls.pop(row.id, None)
        else:
            self.uow.conn.provider_calls[row.id] = row.provider_check_at

    def save_state(self, tx: Transaction) -> None:
        self.uow.writing()
        self._write_row(replace(
            self.rows[tx.id], status=tx.status, decline_reason=tx.decline_reason,
            provider_transaction_id=tx.provider_transaction_id, provider_status=tx.provider_status,
            provider_message=tx.provider_message, provider_redirect_url=tx.provider_redirect_url,
            provider_check_at=tx.provider_check_at, updated_at=tx.updated_at))

    def request_cancel(self, tx: Transaction) -> None:
        self.uow.writing()
        self._write_row(replace(
            self.rows[tx.id], cancel_requested_at=tx.cancel_requested_at,
            provider_message=tx.provider_message, provider_check_at=tx.provider_check_at,
            updated_at=tx.updated_at))

    def reserve_refund(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction | None:
        """The store's refund guard: the refund's amount added to what the payment's refunds
        reserve when every refund rule allows it on the row (what is left to refund as
        RefundArithmetic says, counting what requests awaiting approval hold)."""
        self.uow.writing()
        found = self._by_number(caller, tx_no)
        if found is None or found.kind is not Kind.PAYMENT or found.status is not Status.CAPTURED \
                or not fits_currency(amount, found.currency):
            return None
        arithmetic = RefundArithmetic.of_payment(found, self.uow.conn.methods.get(
            (found.merchant_id, found.payment_method)))
        if arithmetic.remaining < amount or (not arithmetic.partial_refunds and amount != found.amount):
            return None
        self.rows[found.id] = replace(found, refund_reserved=_money(found.refund_reserved + amount,
                                                                    found.currency))
        return self._lock(self._read(self.rows[found.id]))

    def reserve_refund_with_writes(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction:
        """The store's guard sent with the unit's writes, decided at once here (the fake's units
        never overlap): the payment with the amount reserved, or NotHeld and nothing written."""
        reserved = self.reserve_refund(caller, tx_no, amount)
        if reserved is None:
            raise NotHeld()  # the store's unit raises it at commit; nothing is written either way
        return reserved

    def expect_as_read(self, tx: Transaction, original: Transaction | None) -> None:
        """The store's check, made at once here (the fake's units never overlap): the rows as
        read, or NotHeld, and nothing written. Both are locked, the original first."""
        current = self.rows.get(tx.id)
        unchanged = current is not None and (current.status, current.updated_at) == (tx.status, tx.updated_at)
        if original is not None:
            now = self.rows.get(original.id)
            unchanged = unchanged and now is not None and (
                now.status, now.updated_at, now.refund_captured) == (
                original.status, original.updated_at, original.refund_captured)
        if not unchanged:
            raise NotHeld()
        for locked in sorted(filter(None, (tx, original)), key=lambda t: t.id):
            self._lock(locked)

    def settle_refund(self, refund: Transaction, original: Transaction) -> Transaction:
        self.uow.writing()
        original = self.rows[refund.original_id]
        captured = refund.amount if refund.status is Status.CAPTURED else Decimal(0)
        released = refund.amount if refund.status in DECLINE_STATUSES else Decimal(0)
        self.rows[original.id] = replace(
            original, refund_reserved=_money(original.refund_reserved - released, original.currency),
            refund_captured=_money(original.refund_captured + captured, original.currency))
        return self._read(self.rows[original.id])

    def refunds_of(self, caller: Caller, original_id: int) -> list[Transaction]:
        return [self._read(tx) for tx in sorted(self._in_scope(caller), key=lambda t: t.id)
                if tx.original_id == original_id]

    def due_provider_checks(self, now: datetime, limit: int = 100) -> list[int]:
        calls = self.uow.conn.provider_calls
        return sorted((tx_id for tx_id, due in calls.items() if due <= now), key=calls.get)[:limit]

    def claim_provider_checks(self, tx_ids: list[int], now: datetime, until: datetime) -> dict[int, Transaction]:
        """The claim pushes provider_calls on; the transactions' rows are not written."""
        self.uow.writing()
        calls = self.uow.conn.provider_calls
        taken = {}
        for tx_id in tx_ids:
            if tx_id in calls and calls[tx_id] <= now:
                calls[tx_id] = until
                taken[tx_id] = self._read(self.rows[tx_id])
        return taken

    def expired_pending(self, created_before: datetime, limit: int = 100) -> list[int]:
        return [tx.id for tx in self.rows.values()
                if tx.status is Status.PENDING and tx.created_at < created_before
                and tx.kind is not Kind.REFUND and tx.provider_check_at is None
                and tx.created_by != FIXTURE_CREATED_BY][:limit]

    def delete_sandbox_fixtures(self, caller: Caller, tx_nos: list[str]) -> None:
        self.uow.writing()
        sandbox = replace(caller, mode=Mode.SANDBOX)
        ids = {tx.id for tx in self._in_scope(sandbox) if tx.tx_no in tx_nos}
        ids |= {tx.id for tx in self.rows.values() if tx.original_id in ids}
        tables = self.uow.conn
        tables.history[:] = [row for row in tables.history if row.transaction_id not in ids]
        tables.webhooks[:] = [row for row in tables.webhooks if row.transaction_id not in ids]
        for record in tables.key_records.by_key.values():
            if record.transaction_id in ids:
                record.transaction_id = None
        for tx_id in ids:
            del self.rows[tx_id]


class FakeMethods:
    """MethodRepository over the working tables."""

    def __init__(self, tables: Tables):
        self.methods = tables.methods

    def get(self, caller: Caller, method_id: str) -> PaymentMethod | None:
        return self.methods.get((caller.merchant_id, method_id))

    def of_transaction(self, tx: Transaction) -> PaymentMethod | None:
        return self.methods.get((tx.merchant_id, tx.payment_method))

    def list(self, caller: Caller) -> list[PaymentMethod]:
        return sorted((m for (merchant_id, _), m in self.methods.items()
                       if merchant_id == caller.merchant_id), key=lambda m: (m.kind, m.method_id))


class FakeMerchants:
    """MerchantRepository over the working tables."""

    def __init__(self, tables: Tables):
        self.urls = tables.default_callback_urls

    def default_callback_url(self, caller: Caller) -> str | None:
        return self.urls.get(caller.merchant_id)


class KeyRecordsOnConnection:
    """app.store.idempotency's functions over the key records of a unit's working tables, so a
    claim or link commits and rolls back with the unit (MemoryRecords keeps the books)."""

    def __getattr__(self, name: str):
        def on_connection(conn: Tables, *args):
            return getattr(conn.key_records, name)(conn, *args)
        return on_connection

    def link_transaction(self, uow, record_id: int, tx: Transaction) -> None:
        uow.conn.key_records.link_transaction(uow.conn, record_id, tx)


class Clock:
    """Time that moves only when a test moves it."""

    def __init__(self, now: datetime = NOW):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


@dataclass(frozen=True)
class ProviderCall:
    """One call the provider received, and how the store stood when it came."""

    operation: str  # "create", "refund", "status" or "cancel"
    tx_no: str
    write_units_open: int
    committed_status: Status | None  # the transaction's committed status; None if not committed


class FakeProvider:
    """A provider that answers what a test queued for each operation, and notes every call.

    Queue an Outcome, or an exception to raise. Unscripted, create answers Pending and refund
    Captured; an unscripted status call fails the test.
    """

    in_process = False  # stands for a provider behind a network

    def __init__(self, store: FakeStore, clock: Clock, banks: tuple[Bank, ...] = (GTBANK,)):
        self.store = store
        self.clock = clock
        self.latency = timedelta(0)  # how long each call takes on the clock
        self.bank_list = list(banks)
        self.calls: list[ProviderCall] = []
        self.queued: dict[str, deque] = {"create": deque(), "refund": deque(), "status": deque(),
                                          "cancel": deque()}

    def will_answer(self, operation: str, *answers: Outcome | BaseException) -> None:
        """Queue answers for the next calls of an operation."""
        self.queued[operation].extend(answers)

    def asked(self, operation: str | None = None) -> list[str]:
        """Numbers of the transactions the provider was asked about (for one operation)."""
        return [call.tx_no for call in self.calls if operation in (None, call.operation)]

    def _answer(self, operation: str, tx: Transaction, unscripted: Outcome | None) -> Outcome:
        self.clock.now += self.latency
        committed = self.store.committed.transactions.get(tx.id)
        self.calls.append(ProviderCall(operation, tx.tx_no, self.store.open_write_units,
                                       committed.status if committed else None))
        if self.queued[operation]:
            answer = self.queued[operation].popleft()
        else:
            assert unscripted is not None, f"the test did not script the provider's {operation} answer"
            answer = unscripted
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def create(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        return self._answer("create", tx, Outcome(Status.PENDING, f"fake_{tx.tx_no}", "CREATED",
                                                  "Awaiting customer"))

    def refund(self, refund: Transaction, original: Transaction, now: datetime) -> Outcome:
        return self._answer("refund", refund, Outcome(Status.CAPTURED, f"fake_{refund.tx_no}",
                                                      "SUCCESS", "Refund processed"))

    def status(self, tx: Transaction, original: Transaction | None, now: datetime) -> Outcome:
        return self._answer("status", tx, None)

    def cancel(self, tx: Transaction) -> Outcome:
        return self._answer("cancel", tx, Outcome(Status.PENDING, tx.provider_transaction_id, "OPEN",
                                                  "Nothing to void"))

    def banks(self, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
        return list(self.bank_list)

    def knows_bank(self, method: PaymentMethod, currency: str, code: str, country: str | None) -> bool:
        return any(bank.code == code for bank in self.bank_list)


def make_deps(store: FakeStore, provider: FakeProvider, clock: Clock) -> Deps:
    """The services' Deps over the fakes (the methods name the provider "fake")."""
    return Deps(uow=store.unit_of_work, providers=ProvidersByName({"fake": provider}), clock=clock)


def transaction(kind: Kind = Kind.PAYMENT, status: Status = Status.CAPTURED, amount="100.00",
                currency: str = "EUR", method: PaymentMethod = CARD, caller: Caller = CALLER,
                created_at: datetime = NOW, **fields) -> Transaction:
    """A transaction as an earlier request left it (to seed the store with)."""
    tx_no = new_tx_no(kind)
    defaults = dict(reference=f"ref-{tx_no}", callback_url="https://shop.example/hooks",
                    provider_transaction_id=f"fake_{tx_no}")
    return Transaction(
        merchant_id=caller.merchant_id, mode=caller.mode, tx_no=tx_no, kind=kind, status=status,
        amount=Decimal(amount), currency=currency, payment_method=method.method_id,
        created_at=created_at, updated_at=created_at, **(defaults | fields))
