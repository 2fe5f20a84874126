"""The transactions list: filters, newest-first keyset pages and the CSV export's batches, scoped to the caller."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from sqlalchemy import BigInteger, Connection, RowMapping, false, func, literal, or_, select, text, tuple_

from app.payments.model import Caller, Kind, Status, StoredStatus
from app.payments.money import from_minor
from app.payments.refundable import RefundArithmetic
from app.util import whole_number

from .scope import scoped_to_mode
from .tables import Id, UtcDateTime, transactions
from .transactions import STORED_STATUS_COLUMNS, stored_status

PAGE_SIZE = 50
EXPORT_BATCH = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class TransactionFilter:
    """What the transactions list is narrowed to; an empty filter selects everything."""

    search: str = ""
    status: Status | None = None
    kind: Kind | None = None
    date_from: date | None = None
    date_to: date | None = None  # inclusive
    time_zone: str = "UTC"  # the IANA zone whose calendar days date_from and date_to are
    # The API's list (GET /api/v1/transactions) narrows further:
    statuses: tuple[Status, ...] = ()  # any of them
    currency: str | None = None
    payment_method: str | None = None
    amount_min_minor: int | None = None  # inclusive, in `currency`'s minor units
    amount_max_minor: int | None = None
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    reference: str | None = None  # the whole reference
    customer_email: str | None = None  # the whole address, any case
    customer_reference: str | None = None  # the merchant's customer id, exact (the customer page)

    def conditions(self, reference_ids: list[int] | None = None,
                   customer_ids: list[int] | None = None, reference_owner: int | None = None) -> list:
        """SQL conditions for the filter (list_transactions adds the caller's merchant and mode).

        The search term is looked for in the reference, the customer's e-mail and name (any
        case, any part; a whole e-mail address as the whole e-mail) and as the whole TxNo or
        provider transaction id. `reference_ids`,
        `customer_ids`: the rows whose reference, or customer e-mail or name, contains the term,
        when an index has named them (SQLite's, see reference_search and customer_search);
        otherwise the condition is on the columns.
        """
        found = []
        term = self.search.strip()
        if term:
            # ILIKE on PostgreSQL (pg_trgm indexes serve it), lower() LIKE on SQLite.
            pattern = "%" + escape_like(term) + "%"
            if reference_ids is not None:
                by_reference = transactions.c.id.in_(reference_ids)
            else:
                by_reference = transactions.c.reference.ilike(pattern, escape="\\")
            if customer_ids is not None:
                by_customer = transactions.c.id.in_(customer_ids)
            elif is_whole_email(term):
                # An address is looked up whole through its lower() index: its trigrams
                # ("@ex", "com") are in most rows, which makes the trigram search slow.
                by_customer = func.lower(transactions.c.customer_email) == func.lower(term)
            else:
                by_customer = or_(transactions.c.customer_email.ilike(pattern, escape="\\"),
                                  transactions.c.customer_name.ilike(pattern, escape="\\"))
            found.append(or_(by_reference, by_customer,
                             transactions.c.tx_no.in_({term, term.upper()}),
                             transactions.c.provider_transaction_id == term))
        if self.status:
            found.append(transactions.c.status == self.status.value)
        if self.kind:
            found.append(transactions.c.kind == self.kind.value)
        if self.date_from:
            found.append(transactions.c.created_at >= start_of_day(self.date_from, self.time_zone))
        if self.date_to:
            found.append(transactions.c.created_at
                         < start_of_day(self.date_to + timedelta(days=1), self.time_zone))
        return found + self._exact_conditions(reference_owner)

    def _exact_conditions(self, reference_owner: int | None) -> list:
        """The API's filters, each an equality or a range its indexes serve. `reference_owner`:
        the id of the payment or payout with the filter's reference (reference_owner_of)."""
        columns = transactions.c
        found = []
        if self.reference is not None:
            # The payment or payout and its refunds, which repeat its reference: through the
            # primary key and ix_transactions_original, not a scan for the reference.
            found.append(or_(columns.id == reference_owner, columns.original_id == reference_owner)
                         if reference_owner is not None else false())
        if len(self.statuses) == 1:
            found.append(columns.status == self.statuses[0].value)
        elif self.statuses:
            found.append(columns.status.in_([status.value for status in self.statuses]))
        for column, value in ((columns.currency, self.currency), (columns.payment_method, self.payment_method)):
            if value is not None:
                found.append(column == value)
        # Amounts are written into the SQL, not bound: a prepared statement's generic plan cannot
        # tell a range of three rows (ix_transactions_amount) from one of most rows (the listing
        # index, newest first), and the wrong one costs seconds at a million rows.
        if self.amount_min_minor is not None:
            found.append(columns.amount_minor >= literal(self.amount_min_minor, BigInteger, literal_execute=True))
        if self.amount_max_minor is not None:
            found.append(columns.amount_minor <= literal(self.amount_max_minor, BigInteger, literal_execute=True))
        if self.created_from is not None:
            found.append(columns.created_at >= self.created_from)
        if self.created_to is not None:
            found.append(columns.created_at < self.created_to)
        # Both through migration 0030's indexes, which keep one customer's rows newest first.
        if self.customer_email is not None:
            found.append(func.lower(columns.customer_email) == self.customer_email.lower())
        if self.customer_reference is not None:
            found.append(columns.customer_reference == self.customer_reference)
        return found


# SQLite's FTS5 trigram indexes: transactions_reference_search of references (migration 0007),
# transactions_customer_search of customers' e-mails and names (0009). Up to this many rows
# whose text contains the term are looked up by id; a term more common than that is searched
# along the newest-first listing, where its matches are dense.
REFERENCE_MATCHES_LOOKED_UP = 5000
_REFERENCE_MATCHES = text(
    "SELECT rowid FROM transactions_reference_search WHERE transactions_reference_search MATCH :phrase "
    "LIMIT :limit")
_CUSTOMER_MATCHES = text(
    "SELECT rowid FROM transactions_customer_search WHERE transactions_customer_search MATCH :phrase "
    "LIMIT :limit")


def _trigram_search(conn: Connection, statement, term: str) -> list[int] | None:
    term = term.strip()
    if conn.dialect.name != "sqlite" or len(term) < 3:
        return None
    phrase = '"' + term.replace('"', '""') + '"'
    ids = conn.execute(statement, {"phrase": phrase,
                                   "limit": REFERENCE_MATCHES_LOOKED_UP + 1}).scalars().all()
    return list(ids) if len(ids) <= REFERENCE_MATCHES_LOOKED_UP else None


def reference_search(conn: Connection, term: str) -> list[int] | None:
    """Ids of the rows (every merchant's) whose reference contains the term, from SQLite's trigram
    index; None where the index does not serve it (PostgreSQL, terms under 3 characters,
    terms matching more than REFERENCE_MATCHES_LOOKED_UP rows)."""
    return _trigram_search(conn, _REFERENCE_MATCHES, term)


_EMAIL_MATCHES = text(
    "SELECT id FROM transactions WHERE lower(customer_email) = lower(:email) LIMIT :limit")


def customer_search(conn: Connection, term: str) -> list[int] | None:
    """Ids of the rows (every merchant's) whose customer e-mail or name contains the term, from
    SQLite's trigram index, or for a whole e-mail address whose e-mail it is, from the lower()
    index (SQLite does not combine an expression index with the other conditions' indexes);
    None where they do not serve it (as for reference_search)."""
    term = term.strip()
    if not is_whole_email(term):
        return _trigram_search(conn, _CUSTOMER_MATCHES, term)
    if conn.dialect.name != "sqlite":
        return None
    ids = conn.execute(_EMAIL_MATCHES, {"email": term,
                                        "limit": REFERENCE_MATCHES_LOOKED_UP + 1}).scalars().all()
    return list(ids) if len(ids) <= REFERENCE_MATCHES_LOOKED_UP else None


_WHOLE_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def is_whole_email(term: str) -> bool:
    """Whether the search term is a whole e-mail address (found as the customer's e-mail, any case)."""
    return _WHOLE_EMAIL.fullmatch(term) is not None


def escape_like(term: str) -> str:
    """The term with LIKE's wildcards and escape made literal (for ESCAPE '\\')."""
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def start_of_day(day: date, time_zone: str = "UTC") -> datetime:
    """The moment the day starts in the zone (midnight, or the first hour a clock change leaves),
    in UTC."""
    return datetime.combine(day, time(0), tzinfo=ZoneInfo(time_zone)).astimezone(UTC)


@dataclass(frozen=True)
class Cursor:
    """A position in the newest-first listing: the (created_at, id) of a row, as the index orders it."""

    created_at: datetime
    id: int

    def encode(self) -> str:
        """Opaque text for a URL: microseconds since the epoch and the id."""
        return f"{(self.created_at - _EPOCH) // _MICROSECOND}-{self.id}"

    @classmethod
    def decode(cls, text: str | None) -> "Cursor | None":
        """The cursor in the text, or None when it is missing or not one of ours."""
        if not text:
            return None
        micros, _, row_id = text.partition("-")
        micros, row_id = whole_number(micros, 20), whole_number(row_id, 19)
        if micros is None or row_id is None:
            return None
        try:
            return cls(_EPOCH + micros * _MICROSECOND, row_id)
        except OverflowError:  # a date past year 9999: not one of ours
            return None


@dataclass(frozen=True)
class TransactionRow:
    """One line of the transactions list or export."""

    id: int
    created_at: datetime
    tx_no: str
    kind: Kind
    status: Status
    amount: Decimal
    currency: str
    reference: str
    decline_reason: str | None
    payment_method: str
    customer_name: str | None = None
    customer_email: str | None = None
    customer_reference: str | None = None
    refunded: Decimal = Decimal(0)  # a payment's Captured refunds (refund_captured_minor)
    original_tx_no: str | None = None  # a refund's payment

    @property
    def partly_refunded(self) -> bool:
        """A payment some of whose amount its refunds returned, not all of it (yet)."""
        return self.kind is Kind.PAYMENT and Decimal(0) < self.refunded < self.amount

    @property
    def cursor(self) -> Cursor:
        """This row's place in the listing."""
        return Cursor(self.created_at, self.id)


@dataclass
class TransactionPage:
    """A page of rows, newest first, with cursors to the neighbouring pages."""

    rows: list[TransactionRow]
    older: Cursor | None = None
    newer: Cursor | None = None


_ORIGINAL = transactions.alias("original")
_LIST_COLUMNS = (
    transactions.c.id, transactions.c.created_at, transactions.c.tx_no, transactions.c.kind,
    transactions.c.status, transactions.c.amount_minor, transactions.c.currency,
    transactions.c.reference, transactions.c.decline_reason, transactions.c.payment_method,
    transactions.c.customer_name, transactions.c.customer_email, transactions.c.customer_reference,
    transactions.c.refund_captured_minor,
    # A refund's payment, read by its primary key: one index probe a listed row.
    select(_ORIGINAL.c.tx_no).where(_ORIGINAL.c.id == transactions.c.original_id)
    .scalar_subquery().label("original_tx_no"),
)


def _listing_key():
    return tuple_(transactions.c.created_at, transactions.c.id)


def _cursor_key(cursor: Cursor):
    return tuple_(literal(cursor.created_at, UtcDateTime()), literal(cursor.id, Id))


def _row(row: RowMapping) -> TransactionRow:
    return TransactionRow(
        id=row["id"], created_at=row["created_at"], tx_no=row["tx_no"], kind=Kind(row["kind"]),
        status=Status(row["status"]), amount=from_minor(row["amount_minor"], row["currency"]),
        currency=row["currency"], reference=row["reference"], decline_reason=row["decline_reason"],
        payment_method=row["payment_method"], customer_name=row["customer_name"],
        customer_email=row["customer_email"], customer_reference=row["customer_reference"],
        refunded=from_minor(row["refund_captured_minor"], row["currency"]),
        original_tx_no=row["original_tx_no"],
    )


def list_transactions(conn: Connection, caller: Caller, flt: TransactionFilter, *,
                      older_than: Cursor | None = None, newer_than: Cursor | None = None,
                      limit: int = PAGE_SIZE) -> TransactionPage:
    """The caller's newest-first page by keyset on (created_at, id), the order of ix_transactions_listing.

    Never OFFSET: page 10,000 costs what page 1 costs. `newer_than` walks back towards the newest.
    """
    return _page(conn, caller, flt, _LIST_COLUMNS, _row, older_than, newer_than, limit)


@dataclass(frozen=True)
class ListedStatus:
    """A row of the API's list: what the status response shows, and its place in the listing."""

    status: StoredStatus
    cursor: Cursor


STATUS_COLUMNS = (transactions.c.id, *(transactions.c[name] for name in STORED_STATUS_COLUMNS))


def _listed_status(row: RowMapping) -> ListedStatus:
    return ListedStatus(stored_status(row), Cursor(row["created_at"], row["id"]))


def list_statuses(conn: Connection, caller: Caller, flt: TransactionFilter, *,
                  older_than: Cursor | None = None, newer_than: Cursor | None = None,
                  limit: int = PAGE_SIZE) -> TransactionPage:
    """list_transactions with the status response's columns (GET /api/v1/transactions); the
    page's rows are ListedStatus."""
    return _page(conn, caller, flt, STATUS_COLUMNS, _listed_status, older_than, newer_than, limit)


def _page(conn: Connection, caller: Caller, flt: TransactionFilter, columns, make_row,
          older_than: Cursor | None, newer_than: Cursor | None, limit: int) -> TransactionPage:
    searching = bool(flt.search.strip())
    reference_ids = reference_search(conn, flt.search) if searching else None
    customer_ids = customer_search(conn, flt.search) if searching else None
    owner = reference_owner_of(conn, caller, flt.reference) if flt.reference is not None else None
    query = select(*columns).where(*scoped_to_mode(transactions, caller),
                                   *flt.conditions(reference_ids, customer_ids, owner))
    if newer_than is not None:
        query = query.where(_listing_key() > _cursor_key(newer_than)).order_by(
            transactions.c.created_at.asc(), transactions.c.id.asc())
        rows = [make_row(r) for r in conn.execute(query.limit(limit + 1)).mappings()]
        has_newer = len(rows) > limit
        rows = list(reversed(rows[:limit]))
        return TransactionPage(rows, older=rows[-1].cursor if rows else newer_than,
                               newer=rows[0].cursor if has_newer and rows else None)
    if older_than is not None:
        query = query.where(_listing_key() < _cursor_key(older_than))
    query = query.order_by(transactions.c.created_at.desc(), transactions.c.id.desc())
    rows = [make_row(r) for r in conn.execute(query.limit(limit + 1)).mappings()]
    has_older = len(rows) > limit
    rows = rows[:limit]
    return TransactionPage(rows, older=rows[-1].cursor if has_older else None,
                           newer=rows[0].cursor if older_than is not None and rows else None)


def reference_owner_of(conn: Connection, caller: Caller, reference: str) -> int | None:
    """The id of the caller's payment or payout with this reference (unique per merchant and
    mode: uq_transactions_reference), or None."""
    return conn.execute(select(transactions.c.id).where(
        *scoped_to_mode(transactions, caller), transactions.c.reference == reference,
        transactions.c.kind != Kind.REFUND.value)).scalar()


def position_of(conn: Connection, caller: Caller, tx_no: str) -> Cursor | None:
    """The listing position of the caller's transaction with this number, or None."""
    found = conn.execute(select(transactions.c.created_at, transactions.c.id).where(
        *scoped_to_mode(transactions, caller), transactions.c.tx_no == tx_no)).first()
    return Cursor(found.created_at, found.id) if found else None


@dataclass(frozen=True)
class ExportRow:
    """A row of the CSV export: the list's columns and what reconciling needs beside them."""

    row: TransactionRow
    customer_reference: str | None  # as the billing details give it
    provider_transaction_id: str | None
    refunded: Decimal | None  # payments only: what their Captured refunds returned
    remaining_refundable: Decimal | None  # payments only: what a refund could still take now

    @property
    def cursor(self) -> Cursor:
        return self.row.cursor


_EXPORT_COLUMNS = (
    *_LIST_COLUMNS, transactions.c.billing,
    transactions.c.provider_transaction_id, transactions.c.refund_reserved_minor,
    transactions.c.refund_captured_minor, transactions.c.refund_held_minor,
    transactions.c.dispute_lost_minor,
)


def _export_row(row: RowMapping) -> ExportRow:
    listed = _row(row)
    refunded = remaining = None
    if listed.kind is Kind.PAYMENT:
        currency = listed.currency
        arithmetic = RefundArithmetic(
            original=listed.amount, refunded=from_minor(row["refund_captured_minor"], currency),
            pending=from_minor(row["refund_reserved_minor"] - row["refund_captured_minor"], currency),
            currency=currency, partial_refunds=True,
            awaiting_approval=from_minor(row["refund_held_minor"], currency),
            lost_to_disputes=from_minor(row["dispute_lost_minor"], currency))
        refunded = arithmetic.refunded
        # Only a Captured payment can be refunded (refund rule 2): any other has nothing left.
        remaining = arithmetic.remaining if listed.status is Status.CAPTURED else from_minor(0, currency)
    billing = json.loads(row["billing"]) if row["billing"] else {}
    return ExportRow(listed, billing.get("customerReference") if isinstance(billing, dict) else None,
                     row["provider_transaction_id"], refunded, remaining)


def export_transactions(uow_factory, caller: Caller, flt: TransactionFilter) -> Iterator[ExportRow]:
    """All the caller's rows the filter selects, newest first, read in keyset batches (one short
    read each), with each refund's original, the customer, the provider's id and a payment's
    refund numbers."""
    cursor = None
    while True:
        with uow_factory(write=False) as uow:
            page = _page(uow.conn, caller, flt, _EXPORT_COLUMNS, _export_row, cursor, None, EXPORT_BATCH)
        yield from page.rows
        if page.older is None:
            return
        cursor = page.older
