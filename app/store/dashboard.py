"""What the dashboard reads and the user administration it does: every query scoped to one merchant."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from sqlalchemy import Connection, and_, func, literal, or_, select, tuple_, update

from app.payments.model import Kind, Mode, RefundState, Status, Transaction
from app.payments.money import from_minor
from app.util import whole_number

from .repository import UnitOfWork
from .tables import (
    Id,
    UtcDateTime,
    api_tokens,
    audit_log,
    merchants,
    status_history,
    transactions,
    users,
    webhook_secrets,
)

PAGE_SIZE = 50
EXPORT_BATCH = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


# --- transactions list ----------------------------------------------------------------------

@dataclass(frozen=True)
class TransactionFilter:
    """What the transactions list is narrowed to; an empty filter selects everything."""

    search: str = ""
    status: Status | None = None
    kind: Kind | None = None
    date_from: date | None = None
    date_to: date | None = None  # inclusive, a UTC day

    def conditions(self) -> list:
        """SQL conditions for the filter (merchant and mode are added by the caller)."""
        found = []
        term = self.search.strip()
        if term:
            pattern = "%" + _escape_like(term) + "%"
            # ILIKE on PostgreSQL (a pg_trgm index serves it), lower() LIKE on SQLite.
            found.append(or_(transactions.c.reference.ilike(pattern, escape="\\"),
                             transactions.c.tx_no.in_({term, term.upper()})))
        if self.status:
            found.append(transactions.c.status == self.status.value)
        if self.kind:
            found.append(transactions.c.kind == self.kind.value)
        if self.date_from:
            found.append(transactions.c.created_at >= _start_of_day(self.date_from))
        if self.date_to:
            found.append(transactions.c.created_at < _start_of_day(self.date_to + timedelta(days=1)))
        return found


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _start_of_day(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


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


_LIST_COLUMNS = (
    transactions.c.id, transactions.c.created_at, transactions.c.tx_no, transactions.c.kind,
    transactions.c.status, transactions.c.amount_minor, transactions.c.currency,
    transactions.c.reference, transactions.c.decline_reason, transactions.c.payment_method,
)


def _listing_key():
    return tuple_(transactions.c.created_at, transactions.c.id)


def _cursor_key(cursor: Cursor):
    return tuple_(literal(cursor.created_at, UtcDateTime()), literal(cursor.id, Id))


def _row(row) -> TransactionRow:
    return TransactionRow(
        id=row.id, created_at=row.created_at, tx_no=row.tx_no, kind=Kind(row.kind),
        status=Status(row.status), amount=from_minor(row.amount_minor, row.currency),
        currency=row.currency, reference=row.reference, decline_reason=row.decline_reason,
        payment_method=row.payment_method,
    )


def list_transactions(conn: Connection, merchant_id: int, mode: Mode, flt: TransactionFilter, *,
                      older_than: Cursor | None = None, newer_than: Cursor | None = None,
                      limit: int = PAGE_SIZE) -> TransactionPage:
    """A newest-first page by keyset on (created_at, id), the order of ix_transactions_listing.

    Never OFFSET: page 10,000 costs what page 1 costs. `newer_than` walks back towards the newest.
    """
    query = select(*_LIST_COLUMNS).where(
        transactions.c.merchant_id == merchant_id, transactions.c.mode == mode.value,
        *flt.conditions(),
    )
    if newer_than is not None:
        query = query.where(_listing_key() > _cursor_key(newer_than)).order_by(
            transactions.c.created_at.asc(), transactions.c.id.asc())
        rows = [_row(r) for r in conn.execute(query.limit(limit + 1))]
        has_newer = len(rows) > limit
        rows = list(reversed(rows[:limit]))
        return TransactionPage(rows, older=rows[-1].cursor if rows else newer_than,
                               newer=rows[0].cursor if has_newer and rows else None)
    if older_than is not None:
        query = query.where(_listing_key() < _cursor_key(older_than))
    query = query.order_by(transactions.c.created_at.desc(), transactions.c.id.desc())
    rows = [_row(r) for r in conn.execute(query.limit(limit + 1))]
    has_older = len(rows) > limit
    rows = rows[:limit]
    return TransactionPage(rows, older=rows[-1].cursor if has_older else None,
                           newer=rows[0].cursor if older_than is not None and rows else None)


def export_transactions(uow_factory, merchant_id: int, mode: Mode,
                        flt: TransactionFilter) -> Iterator[TransactionRow]:
    """Every row the filter selects, newest first, read in keyset batches (one short read each)."""
    cursor = None
    while True:
        with uow_factory(write=False) as uow:
            page = list_transactions(uow.conn, merchant_id, mode, flt, older_than=cursor,
                                     limit=EXPORT_BATCH)
        yield from page.rows
        if page.older is None:
            return
        cursor = page.older


# --- one transaction ------------------------------------------------------------------------

@dataclass(frozen=True)
class RefundArithmetic:
    """What a payment has left to refund: the numbers the refund panel shows."""

    original: Decimal
    refunded: Decimal  # Captured refunds
    pending: Decimal  # Pending refunds, which hold their amount until settled
    currency: str
    partial_refunds: bool

    @property
    def remaining(self) -> Decimal:
        """Original minus Captured and Pending refunds (Failed and Declined ones free their amount)."""
        return self.original - self.refunded - self.pending


def refund_arithmetic(uow: UnitOfWork, payment: Transaction) -> RefundArithmetic:
    """The refund numbers of a payment, from its stored refunds."""
    refunds = uow.transactions
    method = uow.methods.get(payment.merchant_id, payment.payment_method)
    return RefundArithmetic(
        original=payment.amount,
        refunded=from_minor(refunds.refund_total(payment.id, (Status.CAPTURED,)), payment.currency),
        pending=from_minor(refunds.refund_total(payment.id, (Status.PENDING,)), payment.currency),
        currency=payment.currency,
        partial_refunds=method.partial_refunds if method else True,
    )


def refund_state(payment: Transaction, arithmetic: RefundArithmetic) -> RefundState:
    """The input of the refund rules (app.payments.model.check_refund) for a pre-check."""
    return RefundState(
        tx_no=payment.tx_no, kind=payment.kind, status=payment.status, amount=payment.amount,
        currency=payment.currency, refunded_or_pending=arithmetic.refunded + arithmetic.pending,
        partial_refunds=arithmetic.partial_refunds, payment_method=payment.payment_method,
    )


def status_changes(conn: Connection, transaction_id: int) -> list:
    """The transaction's status history, oldest first (the id came from a scoped read)."""
    return list(conn.execute(
        select(status_history).where(status_history.c.transaction_id == transaction_id)
        .order_by(status_history.c.at, status_history.c.id)
    ))


# --- audit log ------------------------------------------------------------------------------

def audit_entries(conn: Connection, merchant_id: int, mode: Mode, *, older_than_id: int | None = None,
                  limit: int = PAGE_SIZE) -> list:
    """The merchant's audit log for this mode (and mode-less entries such as user changes), newest first."""
    query = select(audit_log).where(
        audit_log.c.merchant_id == merchant_id,
        or_(audit_log.c.mode == mode.value, audit_log.c.mode.is_(None)),
    )
    if older_than_id is not None:
        query = query.where(audit_log.c.id < older_than_id)
    return list(conn.execute(query.order_by(audit_log.c.id.desc()).limit(limit)))


# --- credentials ----------------------------------------------------------------------------

def api_tokens_of(conn: Connection, merchant_id: int, mode: Mode) -> list:
    """The merchant's API tokens of the mode (prefix, label, dates; never the token), newest first."""
    return list(conn.execute(
        select(api_tokens.c.id, api_tokens.c.prefix, api_tokens.c.label, api_tokens.c.created_at,
               api_tokens.c.revoked_at)
        .where(api_tokens.c.merchant_id == merchant_id, api_tokens.c.mode == mode.value)
        .order_by(api_tokens.c.revoked_at.is_not(None), api_tokens.c.id.desc())
    ))


def api_token_prefix(conn: Connection, merchant_id: int, token_id: int) -> str | None:
    """The prefix of one of the merchant's tokens, or None when it is not theirs."""
    return conn.execute(
        select(api_tokens.c.prefix).where(api_tokens.c.id == token_id,
                                          api_tokens.c.merchant_id == merchant_id)
    ).scalar()


def webhook_secrets_of(conn: Connection, merchant_id: int, mode: Mode, now: datetime) -> list[dict]:
    """The mode's signing secrets still in use, newest first, each shown only by its first characters."""
    rows = conn.execute(
        select(webhook_secrets.c.id, webhook_secrets.c.secret, webhook_secrets.c.created_at,
               webhook_secrets.c.expires_at)
        .where(webhook_secrets.c.merchant_id == merchant_id, webhook_secrets.c.mode == mode.value,
               or_(webhook_secrets.c.expires_at.is_(None), webhook_secrets.c.expires_at > now))
        .order_by(webhook_secrets.c.id.desc())
    )
    return [{"hint": row.secret[:10] + "…", "created_at": row.created_at,
             "expires_at": row.expires_at} for row in rows]


# --- users ----------------------------------------------------------------------------------

_USER_COLUMNS = (users.c.id, users.c.merchant_id, users.c.email, users.c.role, users.c.active,
                 users.c.password_hash, users.c.created_at, users.c.last_login_at,
                 merchants.c.name.label("merchant_name"))


def user_by_email(conn: Connection, email: str):
    """The user with this e-mail (any case) and their merchant's name, or None."""
    return conn.execute(
        select(*_USER_COLUMNS).join(merchants, merchants.c.id == users.c.merchant_id)
        .where(users.c.email == email.strip().lower())
    ).first()


def user_by_id(conn: Connection, user_id: int):
    """The user with this id and their merchant's name, or None."""
    return conn.execute(
        select(*_USER_COLUMNS).join(merchants, merchants.c.id == users.c.merchant_id)
        .where(users.c.id == user_id)
    ).first()


def users_of(conn: Connection, merchant_id: int) -> list:
    """The merchant's dashboard users, by e-mail."""
    return list(conn.execute(
        select(users.c.id, users.c.email, users.c.role, users.c.active, users.c.created_at,
               users.c.last_login_at)
        .where(users.c.merchant_id == merchant_id).order_by(users.c.email)
    ))


def user_of_merchant(conn: Connection, merchant_id: int, user_id: int):
    """One of the merchant's users, or None when the id is not theirs."""
    return conn.execute(
        select(users.c.id, users.c.email, users.c.role, users.c.active)
        .where(users.c.id == user_id, users.c.merchant_id == merchant_id)
    ).first()


def email_taken(conn: Connection, email: str) -> bool:
    """True when any user already signs in with this e-mail (e-mails are unique across merchants)."""
    return conn.execute(
        select(func.count()).select_from(users).where(users.c.email == email.strip().lower())
    ).scalar_one() > 0


def set_role(conn: Connection, merchant_id: int, user_id: int, role: str) -> None:
    """Give one of the merchant's users a new role."""
    conn.execute(update(users).where(users.c.id == user_id, users.c.merchant_id == merchant_id)
                 .values(role=role))


def set_active(conn: Connection, merchant_id: int, user_id: int, active: bool) -> None:
    """Let one of the merchant's users sign in again, or stop them (their sessions end at once)."""
    conn.execute(update(users).where(users.c.id == user_id, users.c.merchant_id == merchant_id)
                 .values(active=active))


def record_login(conn: Connection, user_id: int, at: datetime, new_password_hash: str | None) -> None:
    """Note a successful sign-in; store a fresh hash when the hasher's parameters have changed."""
    values = {"last_login_at": at}
    if new_password_hash:
        values["password_hash"] = new_password_hash
    conn.execute(update(users).where(users.c.id == user_id).values(**values))


def active_admins(conn: Connection, merchant_id: int) -> int:
    """How many active admins the merchant has (the last one may not be demoted or stopped)."""
    return conn.execute(
        select(func.count()).select_from(users).where(
            and_(users.c.merchant_id == merchant_id, users.c.role == "admin", users.c.active.is_(True)))
    ).scalar_one()
