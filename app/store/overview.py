"""The Overview page's figures: per currency and UTC day, what the caller's payments captured, what its
refunds returned and why payments were declined, summed by the database.

Each row counts on the UTC day it was created: a payment on the day it was made, a refund on the day
it was asked for (not its payment's day), so a day's refunded volume is the money that went back
that day. Only payments and refunds count; payouts are not sales.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import Connection, Date, cast, func, select

from app.payments.model import DECLINE_STATUSES, Caller, Kind, Status
from app.payments.money import from_minor

from .scope import scoped_to_mode
from .tables import transactions

# A payment that took the customer's money counts as captured whatever came after it (a refund,
# a chargeback): its refunds are subtracted on their own days.
CAPTURED_PAYMENT_STATUSES = (Status.CAPTURED, Status.REFUNDED, Status.CHARGEBACK)
# A refund returned money once its provider captured it; Pending, Failed and Declined ones did not.
RETURNED_REFUND_STATUS = Status.CAPTURED
NO_REASON = "No reason given"
_CAPTURED = frozenset(s.value for s in CAPTURED_PAYMENT_STATUSES)
# The statuses some figure counts: Pending and Authorized rows stay in the database.
_COUNTED_STATUSES = sorted(_CAPTURED | {s.value for s in DECLINE_STATUSES})


@dataclass(frozen=True)
class DayFigures:
    """One currency's figures for one UTC day, in minor units."""

    day: date
    captured_minor: int = 0
    captured_count: int = 0
    refunded_minor: int = 0
    refund_count: int = 0
    declined_count: int = 0


@dataclass(frozen=True)
class DeclineCount:
    """How many payments were declined for one reason."""

    reason: str
    count: int


@dataclass
class CurrencyOverview:
    """One currency's figures over the range: every day of it (empty days as zeros) and the
    decline reasons, most frequent first."""

    currency: str
    days: list[DayFigures]
    declines: list[DeclineCount] = field(default_factory=list)

    @property
    def captured_minor(self) -> int:
        return sum(d.captured_minor for d in self.days)

    @property
    def refunded_minor(self) -> int:
        return sum(d.refunded_minor for d in self.days)

    @property
    def captured(self) -> Decimal:
        """Volume captured, exactly, in the currency's digits."""
        return from_minor(self.captured_minor, self.currency)

    @property
    def refunded(self) -> Decimal:
        """Volume refunded (Captured refunds asked for in the range)."""
        return from_minor(self.refunded_minor, self.currency)

    @property
    def net(self) -> Decimal:
        """Captured minus refunded; negative when refunds of earlier sales outweigh the range's."""
        return from_minor(self.captured_minor - self.refunded_minor, self.currency)

    @property
    def captured_count(self) -> int:
        return sum(d.captured_count for d in self.days)

    @property
    def refund_count(self) -> int:
        return sum(d.refund_count for d in self.days)

    @property
    def declined_count(self) -> int:
        return sum(d.declined_count for d in self.days)

    @property
    def refund_rate(self) -> Decimal | None:
        """Refunded volume as a percentage of captured volume, to one decimal (half up); None
        when nothing was captured."""
        if not self.captured_minor:
            return None
        return (Decimal(self.refunded_minor * 100) / Decimal(self.captured_minor)).quantize(
            Decimal("0.1"), rounding=ROUND_HALF_UP)


def _start_of_day(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _utc_day(conn: Connection):
    """The UTC day of created_at: PostgreSQL converts the timestamptz to UTC first (the session's
    time zone may be any); SQLite stores naive UTC text already."""
    if conn.dialect.name == "postgresql":
        return cast(func.timezone("UTC", transactions.c.created_at), Date)
    return func.date(transactions.c.created_at)


def _as_date(value) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)


def overview(conn: Connection, caller: Caller, first_day: date, last_day: date) -> list[CurrencyOverview]:
    """The caller's figures from first_day to last_day (inclusive UTC days), one entry per currency
    with any payment or refund in the range, in alphabetical order (amounts in different
    currencies do not compare).

    One scan of ix_transactions_overview (merchant, mode, created_at and every column read here):
    the database counts and sums the rows of each day, currency, kind, status and decline reason;
    Python only files those few groups under captured, refunded and declined.
    """
    day = _utc_day(conn).label("day")
    query = (
        select(day, transactions.c.currency, transactions.c.kind, transactions.c.status,
               transactions.c.decline_reason, func.count().label("rows"),
               func.sum(transactions.c.amount_minor).label("amount_minor"))
        .where(*scoped_to_mode(transactions, caller),
               transactions.c.created_at >= _start_of_day(first_day),
               transactions.c.created_at < _start_of_day(last_day + timedelta(days=1)),
               transactions.c.kind.in_([Kind.PAYMENT.value, Kind.REFUND.value]),
               transactions.c.status.in_(_COUNTED_STATUSES))
        .group_by(day, transactions.c.currency, transactions.c.kind, transactions.c.status,
                  transactions.c.decline_reason)
    )
    totals: dict[str, dict[date, DayFigures]] = {}
    reasons: dict[str, dict[str, int]] = {}
    for row in _without_sorting(conn, query):
        by_day = totals.setdefault(row.currency, {})
        on_day = by_day.get(_as_date(row.day)) or DayFigures(_as_date(row.day))
        # PostgreSQL's sum of a bigint is a numeric (a Decimal here): exact, made an int.
        amount, count = int(row.amount_minor), int(row.rows)
        if row.kind == Kind.REFUND.value:
            if row.status == RETURNED_REFUND_STATUS.value:
                on_day = replace(on_day, refunded_minor=on_day.refunded_minor + amount,
                                 refund_count=on_day.refund_count + count)
        elif row.status in _CAPTURED:
            on_day = replace(on_day, captured_minor=on_day.captured_minor + amount,
                             captured_count=on_day.captured_count + count)
        else:  # a declined or failed payment
            on_day = replace(on_day, declined_count=on_day.declined_count + count)
            per_reason = reasons.setdefault(row.currency, {})
            reason = row.decline_reason or NO_REASON
            per_reason[reason] = per_reason.get(reason, 0) + count
        by_day[on_day.day] = on_day
    every_day = [first_day + timedelta(days=n) for n in range((last_day - first_day).days + 1)]
    found = []
    for currency, by_day in totals.items():
        declines = sorted((DeclineCount(r, c) for r, c in reasons.get(currency, {}).items()),
                          key=lambda d: (-d.count, d.reason))
        found.append(CurrencyOverview(currency, [by_day.get(d) or DayFigures(d) for d in every_day],
                                      declines))
    return sorted(found, key=lambda c: c.currency)


def _without_sorting(conn: Connection, query):
    """The query's rows; on PostgreSQL planned without a sort.

    The planner cannot tell that a range's rows fall into a few thousand groups (days times
    currencies times statuses): it expects nearly one group per row and sorts them all for a
    GroupAggregate, where a HashAggregate takes half the time (90 days at 1,000,000 rows:
    about 100 ms of database CPU against 50; bench/overview.py). SET LOCAL lasts until the
    transaction ends; the RESET after the query gives the rest of it the usual plans.
    """
    if conn.dialect.name != "postgresql":
        return conn.execute(query).all()
    conn.exec_driver_sql("SET LOCAL enable_sort = off")
    try:
        return conn.execute(query).all()
    finally:
        conn.exec_driver_sql("RESET enable_sort")
