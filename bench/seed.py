"""The benchmark data set: merchants made the app's way, then transactions in bulk (COPY or executemany).

Several merchants share the transactions table as they would in production; the
load runs as the first one. Among its rows are large Captured payments that the
refund load chips 0.01 off, so refunds never run out, and samples of its
transaction numbers and references for the status and search loads.
"""
from __future__ import annotations

import json
import math
import random
import time
from bisect import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate

from sqlalchemy import func, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from app.config import Config
from app.passwords import hasher_for
from app.payments.model import EXPIRED, Caller, Mode, searchable_customer
from app.providers import accounts
from app.store.daily_totals import record_bulk_load
from app.store.db import make_engine
from app.store.encryption import SecretBox
from app.store.merchants import create_merchant, create_user
from app.store.unit_of_work import UnitOfWork
from app.store.tables import transactions

# A Paystack live key as Paystack formats them (made up), and the card method it offers, with
# the currency the benchmark pays in.
PAYSTACK_KEY = "sk_live_bench0000000000000000000000000000000000"
PAYSTACK_CARD = ("paystack-card", "NGN")
MERCHANT_NAMES = ("Bench Shop", "Bench Invoices", "Bench Travel", "Bench Tickets", "Bench Subscriptions")
# Share of the rows each merchant holds; the first is the one the load runs as.
MERCHANT_WEIGHTS = (0.4, 0.2, 0.15, 0.15, 0.1)
USER_EMAIL = "support@bench.test"
USER_PASSWORD = "paydesk-bench"
# A refund target is refunded 0.01 per request, so a handful of thousands never runs out.
REFUND_TARGET_AMOUNT_MINOR = 100_000_000  # 1,000,000.00 in a currency of two decimals
STATUS_SAMPLE = 20_000
SEARCH_SAMPLE = 200
TIMELINE = timedelta(days=365)
PENDING_WINDOW = timedelta(minutes=25)
BATCH = 20_000
CUSTOMERS = 20_000

TX_COLUMNS = (
    "id", "merchant_id", "mode", "tx_no", "kind", "status", "amount_minor", "currency", "reference",
    "statement_descriptor", "callback_url", "payment_method", "billing", "payment_details",
    "original_id", "decline_reason", "provider_transaction_id", "provider_status", "provider_message",
    "success_url", "pending_url", "failure_url", "udf1", "udf2", "udf3", "created_by", "created_at",
    "updated_at", "provider_check_at", "refund_reserved_minor", "refund_captured_minor",
    "customer_email", "customer_name", "customer_reference",
)
ID, MERCHANT, MODE, TX_NO, KIND, STATUS, AMOUNT, CURRENCY, REFERENCE = range(9)
METHOD = TX_COLUMNS.index("payment_method")
REFUND_TOTALS = TX_COLUMNS.index("refund_reserved_minor")  # and refund_captured_minor after it
CUSTOMER_EMAIL, CUSTOMER_NAME = TX_COLUMNS.index("customer_email"), TX_COLUMNS.index("customer_name")

FIRST_NAMES = ("Ada", "Grace", "Alan", "Chinua", "Wangari", "Amara", "Lena", "Tomas", "Mei", "Ravi",
               "Sofia", "Kwame", "Ines", "Olu", "Freya", "Jonas", "Zainab", "Hiro", "Nia", "Pablo")
LAST_NAMES = ("Lovelace", "Hopper", "Turing", "Achebe", "Maathai", "Okafor", "Schmidt", "Novak",
              "Chen", "Patel", "Rossi", "Mensah", "Garcia", "Adeyemi", "Larsen", "Weber", "Bello",
              "Tanaka", "Kimani", "Ruiz")
DECLINES = ("Declined By Bank", "Insufficient Funds", "Invalid Card Details", "Card Expired",
            "3DS Authentication Failed", "Payment Cancelled By User", "Suspected Fraud")


def _weights(pairs):
    """Words and their cumulative weights, for drawing with bisect."""
    return tuple(w for w, _ in pairs), tuple(accumulate(weight for _, weight in pairs))


PAYMENT_STATUSES = _weights((("Captured", 64), ("Refunded", 6), ("Declined", 17), ("Failed", 3),
                             ("Pending", 5), ("Authorized", 3), ("Chargeback", 2)))
PAYOUT_STATUSES = _weights((("Captured", 90), ("Failed", 5), ("Pending", 5)))
PARTIAL_REFUND_SHARE = 0.08
PAYOUT_SHARE = 0.06
SANDBOX_SHARE = 0.05
PROVIDER_WORDS = {"Captured": "SUCCESS", "Refunded": "SUCCESS", "Declined": "DECLINED",
                  "Failed": "ERROR", "Pending": "CREATED", "Authorized": "AUTHORIZED",
                  "Chargeback": "CHARGEBACK"}


@dataclass
class Seeded:
    """What the load needs from the data set, and how it was made."""

    database_url: str
    rows: int  # transactions written in bulk (the merchants' sandbox fixtures aside)
    refunds: int
    history_rows: int
    seconds: float
    merchant_id: int
    token: str  # the load merchant's live API token
    user_email: str
    user_password: str
    status_tx_nos: list[str] = field(default_factory=list)
    refund_targets: list[str] = field(default_factory=list)
    search_terms: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class _Merchant:
    id: int
    mode_callback: str
    reference: callable
    currencies: tuple[str, ...]
    sequence: int = 0


def _reference_styles(rng: random.Random):
    """How each merchant writes its references, from plain order numbers to random ids."""
    return (
        lambda m: f"ORD-{m.sequence:08d}",
        lambda m: f"inv_{rng.getrandbits(48):012x}",
        lambda m: f"BK{2025 + m.sequence // 200_000}-{rng.choice('ABCDEFGHJK')}{m.sequence:07d}",
        lambda m: f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}",
        lambda m: f"SUB-{rng.randrange(1, 50_000):05d}-{m.sequence:07d}",
    )


CURRENCIES = (("EUR",), ("USD", "GBP"), ("EUR", "GBP", "USD"), ("NGN", "KES"), ("EUR", "USD"))


def connect_paystack(database_url: str, key: str, merchant_id: int, provider_url: str) -> int:
    """The merchant's live Paystack account, on the benchmark's provider at provider_url (its
    methods offered to the merchant, PAYSTACK_CARD among them), as Settings -> Providers connects
    one; its id. `key` is the PAYDESK_ENCRYPTION_KEY its secret is sealed with."""
    engine = make_engine(database_url)
    box = SecretBox(key)
    try:
        connected = accounts.connect(lambda write=True: UnitOfWork(engine, box=box), box,
                                     Caller(merchant_id, Mode.LIVE, "bench@paydesk"), "paystack",
                                     secret_key=PAYSTACK_KEY, webhook_secret=None, base_url=provider_url,
                                     paydesk_url="http://paydesk.bench", now=datetime.now(UTC))
    finally:
        engine.dispose()
    return connected.provider_account_id


def create_merchants(database_url: str, merchants: int) -> tuple[list[int], str]:
    """The merchants through the app's own path (tokens, methods, fixtures); the first one's live token."""
    engine = make_engine(database_url)
    ids, token = [], ""
    try:
        with UnitOfWork(engine, box=SecretBox(Config().PAYDESK_ENCRYPTION_KEY)) as uow:
            for index, name in enumerate(MERCHANT_NAMES[:merchants]):
                created = create_merchant(uow, name, "http://paydesk.bench")
                ids.append(created.merchant_id)
                if index == 0:
                    token = created.live_token
                    create_user(uow.conn, created.merchant_id, USER_EMAIL, "support",
                                hasher_for("standard").hash(USER_PASSWORD))
            uow.commit()
    finally:
        engine.dispose()
    return ids, token


class _Generator:
    """Rows of the transactions table, oldest first, and the samples the load draws from."""

    def __init__(self, rows: int, merchant_ids: list[int], first_id: int, now: datetime, seed: int,
                 refund_method: tuple[str, str] = ("card", "EUR")):
        self.rng = random.Random(seed)
        self.refund_method = refund_method  # (method id, currency) of the refund targets
        self.rows = rows
        self.first_id = first_id
        self.now = now
        styles = _reference_styles(self.rng)
        self.merchants = [
            _Merchant(mid, f"https://shop{i + 1}.example/webhooks/paydesk", styles[i % len(styles)],
                      CURRENCIES[i % len(CURRENCIES)])
            for i, mid in enumerate(merchant_ids)
        ]
        weights = MERCHANT_WEIGHTS[:len(merchant_ids)]
        self.merchant_cumulative = tuple(accumulate(weights))
        self.load_merchant = self.merchants[0]
        self.by_id = {m.id: m for m in self.merchants}
        expected = rows * weights[0] / sum(weights)
        self.status_share = min(1.0, STATUS_SAMPLE / max(expected, 1))
        self.search_share = min(1.0, 4 * SEARCH_SAMPLE / max(expected, 1))
        self.refund_target_count = max(10, min(2000, rows // 500))
        self.status_tx_nos: list[str] = []
        self.refund_targets: list[str] = []
        self.references: list[str] = []
        self.refunds = 0
        # Customers come back: billing blocks are drawn from a pool, as JSON already, with
        # the e-mail and name the search finds them by.
        self.customers = [self._new_customer(n) for n in range(1, CUSTOMERS + 1)]
        self.customer_samples: list[tuple[str, str]] = []

    def _tx_no(self, prefix: str) -> str:
        return f"{prefix}-{self.rng.getrandbits(64):016X}"

    def _customer(self) -> tuple[str, str, str, str]:
        return self.rng.choice(self.customers)

    def _new_customer(self, number: int) -> tuple[str, str, str, str]:
        """A customer's billing JSON, its searchable e-mail and name, and its reference."""
        first, last = self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)
        billing = {"firstName": first, "lastName": last,
                   "email": f"{first}.{last}{number}@example.com".lower(),
                   "customerReference": f"cust-{number}"}
        return (json.dumps(billing), *searchable_customer(billing), billing["customerReference"])

    def _weighted(self, choices) -> str:
        words, cumulative = choices
        return words[bisect(cumulative, self.rng.random() * cumulative[-1])]

    def rows_iter(self) -> Iterator[tuple]:
        """Every row, ids ascending from first_id, created_at ascending over the last year."""
        step = TIMELINE / self.rows
        start = self.now - TIMELINE
        next_id = self.first_id
        written = 0
        while written < self.rows:
            created = start + step * written
            if len(self.refund_targets) < self.refund_target_count:
                row = self._refund_target(next_id, created)
            else:
                row = self._payment_or_payout(next_id, created)
            refund = self._refund_of(row, next_id + 1, created + step / 2) if written + 1 < self.rows else None
            if refund is not None:  # its payment's row carries it in its refund totals (all Captured)
                row = (row[:REFUND_TOTALS] + (refund[AMOUNT], refund[AMOUNT])
                       + row[REFUND_TOTALS + 2:])
            yield row
            next_id += 1
            written += 1
            if refund is not None:
                yield refund
                next_id += 1
                written += 1

    def _refund_target(self, tx_id: int, created: datetime) -> tuple:
        merchant = self.load_merchant
        merchant.sequence += 1
        tx_no = self._tx_no("PAY")
        self.refund_targets.append(tx_no)
        method, currency = self.refund_method
        return self._row(tx_id, merchant, "live", tx_no, "payment", "Captured", REFUND_TARGET_AMOUNT_MINOR,
                         currency, f"BIG-{merchant.sequence:08d}", method, created)

    def _payment_or_payout(self, tx_id: int, created: datetime) -> tuple:
        cumulative = self.merchant_cumulative
        merchant = self.merchants[bisect(cumulative, self.rng.random() * cumulative[-1])]
        merchant.sequence += 1
        mode = "sandbox" if self.rng.random() < SANDBOX_SHARE else "live"
        payout = self.rng.random() < PAYOUT_SHARE
        if payout:
            currency, method = self.rng.choice((("NGN", "ng-bank-payout"), ("EUR", "sepa-payout")))
            status = self._weighted(PAYOUT_STATUSES)
        else:
            currency, method = self.rng.choice(merchant.currencies), "card"
            status = self._weighted(PAYMENT_STATUSES)
        amount = max(100, int(math.exp(self.rng.gauss(3.6, 1.1)) * 100))
        reference = merchant.reference(merchant)
        tx_no = self._tx_no("POU" if payout else "PAY")
        row = self._row(tx_id, merchant, mode, tx_no, "payout" if payout else "payment", status, amount,
                        currency, reference, method, created)
        if merchant is self.load_merchant and mode == "live":
            if self.rng.random() < self.status_share:
                self.status_tx_nos.append(tx_no)
            if self.rng.random() < self.search_share:
                self.references.append(reference)
                self.customer_samples.append((row[CUSTOMER_EMAIL], row[CUSTOMER_NAME]))
        return row

    def _refund_of(self, original: tuple, tx_id: int, created: datetime) -> tuple | None:
        """A full refund of every Refunded payment; a partial one of some Captured ones."""
        status, amount = original[STATUS], original[AMOUNT]
        if status == "Refunded":
            refunded = amount
        elif (status == "Captured" and original[KIND] == "payment" and amount < REFUND_TARGET_AMOUNT_MINOR
              and self.rng.random() < PARTIAL_REFUND_SHARE):
            refunded = max(1, amount * self.rng.randrange(10, 60) // 100)
        else:
            return None
        self.refunds += 1
        merchant = self.by_id[original[MERCHANT]]
        mode = original[MODE]
        refund = self._row(tx_id, merchant, mode, self._tx_no("RFD"), "refund", "Captured", refunded,
                           original[CURRENCY], original[REFERENCE], original[METHOD], created,
                           original_id=original[ID])
        if merchant is self.load_merchant and mode == "live" and self.rng.random() < self.status_share:
            self.status_tx_nos.append(refund[TX_NO])
        return refund

    def _row(self, tx_id, merchant: _Merchant, mode, tx_no, kind, status, amount_minor, currency,
             reference, method, created, original_id=None) -> tuple:
        decline = None
        if status == "Pending" and created < self.now - PENDING_WINDOW:
            status, decline = "Declined", EXPIRED  # what the worker does to a stale Pending payment
        elif status in ("Declined", "Failed"):
            decline = "Provider Error" if status == "Failed" else self.rng.choice(DECLINES)
        settled = created if status == "Pending" else created + timedelta(seconds=self.rng.randrange(5, 900))
        details = None
        if kind == "payout":
            details = json.dumps({"bank": "058" if currency == "NGN" else "DEUTDEFF",
                                  "holder": "Bench Payee",
                                  "accountNumber": f"{self.rng.randrange(10**9, 10**10)}"
                                  if currency == "NGN" else "DE89370400440532013000"})
        billing, email, name, customer = (None,) * 4 if kind == "refund" else self._customer()
        return (
            tx_id, merchant.id, mode, tx_no, kind, status, amount_minor, currency, reference,
            None if kind == "refund" else "BENCH SHOP", merchant.mode_callback, method,
            billing, details, original_id, decline,
            f"sim_{tx_no}", PROVIDER_WORDS[status], f"{status} by provider",
            None, None, None, None, None, None, "api:pd_live_bench", created, settled, None, 0, 0,
            email, name, customer,
        )

    def search_terms(self) -> dict[str, list[str]]:
        """Terms a support agent types: a whole reference, part of one, a common prefix, a miss,
        a customer's whole e-mail, a customer's name."""
        refs = self.rng.sample(self.references, min(SEARCH_SAMPLE, len(self.references)))
        customers = self.rng.sample(self.customer_samples, min(SEARCH_SAMPLE, len(self.customer_samples)))
        return {
            "whole reference": refs,
            "8 characters": [r[-8:] for r in refs],
            "5 characters": [r[-7:-2] for r in refs],
            "common prefix": [r[:5] for r in refs],
            "no match": [f"zq{self.rng.getrandbits(24):06x}" for _ in refs],
            "customer e-mail": [email for email, _ in customers],
            "customer name": [name for _, name in customers],
        }


def _postgres_dsn(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _load_postgres(database_url: str, rows: Iterator[tuple], first_id: int) -> int:
    """COPY the transactions in, then derive their history in SQL; the number of history rows."""
    import psycopg

    with psycopg.connect(_postgres_dsn(database_url)) as conn:
        conn.execute("SET synchronous_commit = off")
        # The rows are consistent by construction: skip the per-row foreign-key
        # triggers, the slowest part of a bulk load (needs a superuser, as locally). That also
        # skips the daily totals' triggers: seed() records the load's sums after it.
        conn.execute("SET session_replication_role = replica")
        with conn.cursor() as cursor:
            with cursor.copy(f"COPY transactions ({', '.join(TX_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute("SELECT setval(pg_get_serial_sequence('transactions', 'id'), "
                           "(SELECT max(id) FROM transactions))")
            history = 0
            for sql in HISTORY_SQL:
                cursor.execute(sql.replace(":first", "%(first)s"), {"first": first_id})
                history += cursor.rowcount
    return history


def _load_sqlite(engine, rows: Iterator[tuple], first_id: int) -> int:
    """executemany in big transactions, then the history in SQL; the number of history rows."""
    batch = []
    for row in rows:
        batch.append(dict(zip(TX_COLUMNS, row)))
        if len(batch) == BATCH:
            _insert_batch(engine, batch)
            batch = []
    if batch:
        _insert_batch(engine, batch)
    with engine.begin() as conn:
        return sum(conn.execute(text(sql), {"first": first_id}).rowcount for sql in HISTORY_SQL)


def _insert_batch(engine, batch: list[dict]) -> None:
    with engine.begin() as conn:
        conn.execute(insert(transactions), batch)


# Each seeded transaction's history: created Pending, then its provider's answer,
# then for Refunded payments the move its full refund made.
HISTORY_SQL = (
    "INSERT INTO status_history (transaction_id, from_status, to_status, source, at) "
    "SELECT id, NULL, 'Pending', 'api', created_at FROM transactions WHERE id >= :first",
    "INSERT INTO status_history (transaction_id, from_status, to_status, source, at) "
    "SELECT id, 'Pending', CASE WHEN status = 'Refunded' THEN 'Captured' ELSE status END, 'provider', "
    "updated_at FROM transactions WHERE id >= :first AND status <> 'Pending'",
    "INSERT INTO status_history (transaction_id, from_status, to_status, source, at) "
    "SELECT id, 'Captured', 'Refunded', 'provider', updated_at FROM transactions "
    "WHERE id >= :first AND status = 'Refunded'",
)


def seed(database_url: str, rows: int, merchants: int = len(MERCHANT_NAMES), seed: int = 20261122,
         refund_method: tuple[str, str] = ("card", "EUR")) -> Seeded:
    """Fill a freshly migrated database with `rows` transactions and their history; the refund
    targets are Captured payments of `refund_method` (method id, currency)."""
    started = time.monotonic()
    merchant_ids, token = create_merchants(database_url, merchants)
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            first_id = (conn.execute(select(func.max(transactions.c.id))).scalar() or 0) + 1
        generator = _Generator(rows, merchant_ids, first_id, datetime.now(UTC), seed, refund_method)
        if engine.dialect.name == "postgresql":
            history = _load_postgres(database_url, generator.rows_iter(), first_id)
            with engine.begin() as conn:  # the COPY skipped the daily totals' triggers
                record_bulk_load(conn, first_id)
        else:
            history = _load_sqlite(engine, generator.rows_iter(), first_id)
        _analyze(engine)
    finally:
        engine.dispose()
    return Seeded(
        database_url=database_url, rows=rows, refunds=generator.refunds, history_rows=history,
        seconds=time.monotonic() - started, merchant_id=merchant_ids[0], token=token,
        user_email=USER_EMAIL, user_password=USER_PASSWORD,
        status_tx_nos=generator.status_tx_nos, refund_targets=generator.refund_targets,
        search_terms=generator.search_terms(),
    )


def _analyze(engine) -> None:
    """Fresh planner statistics and visibility maps, so autovacuum does not run during the load,
    and the seed's writes checkpointed, so flushing them does not either."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM (ANALYZE)")
            try:
                conn.exec_driver_sql("CHECKPOINT")
            except DBAPIError:  # needs superuser or pg_checkpoint; the rounds still spread its cost
                pass
    else:
        raw = engine.raw_connection()  # outside a transaction: a checkpoint cannot run inside one
        try:
            raw.driver_connection.execute("ANALYZE")
            raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()
