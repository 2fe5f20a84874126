"""The Overview page's figures: per currency and UTC day, what the caller's payments captured, what its
refunds returned and why payments were declined, summed by the database.

Each row counts on the UTC day it was created: a payment on the day it was made, a refund on the day
it was asked for (not its payment's day), so a day's refunded volume is the money that went back
that day. Payouts are not sales: they have their own figure. A checkout that expired (DeclineReason
"Transaction Expired") is not a decline: it is counted as expired. Fees are what the settlements
paid out in the range carried (the providers report them only then). A dispute lost or accepted
counts on the day it closed: the money went back to the customer then.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import Connection, Date, and_, case, func, literal, null, select, union_all

from app.payments.disputes import LOST_STATUSES
from app.payments.model import DECLINE_STATUSES, EXPIRED, Caller, Kind, Status
from app.payments.money import from_minor

from .daily_totals import in_range
from .scope import scoped_to_mode
from .tables import dispute_history, disputes, settlements

# A payment that took the customer's money counts as captured whatever came after it (a refund,
# a chargeback): its refunds are subtracted on their own days.
CAPTURED_PAYMENT_STATUSES = (Status.CAPTURED, Status.REFUNDED, Status.CHARGEBACK)
# A refund returned money once its provider captured it; Pending, Failed and Declined ones did not.
RETURNED_REFUND_STATUS = Status.CAPTURED
# A payout sent the merchant's money once its provider captured it.
SENT_PAYOUT_STATUS = Status.CAPTURED
NO_REASON = "No reason given"
_CAPTURED = sorted(s.value for s in CAPTURED_PAYMENT_STATUSES)
_DECLINED = sorted(s.value for s in DECLINE_STATUSES)
# The statuses some figure counts: Pending and Authorized rows stay in the database.
_COUNTED_STATUSES = sorted({*_CAPTURED, *_DECLINED})


@dataclass(frozen=True)
class DayFigures:
    """One currency's figures for one UTC day, in minor units."""

    day: date
    captured_minor: int = 0
    captured_count: int = 0
    refunded_minor: int = 0
    refund_count: int = 0
    declined_count: int = 0
    expired_count: int = 0
    payouts_minor: int = 0
    payout_count: int = 0


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
    fees_minor: int | None = None  # None: no settlement paid out in the range yet
    disputes_lost_minor: int = 0  # disputes lost or accepted in the range
    disputes_lost_count: int = 0

    @property
    def fees(self) -> Decimal | None:
        """The providers' fees on the settlements paid out in the range; None until one is."""
        return None if self.fees_minor is None else from_minor(self.fees_minor, self.currency)

    @property
    def payouts_minor(self) -> int:
        return sum(d.payouts_minor for d in self.days)

    @property
    def payouts(self) -> Decimal:
        """Payouts sent (Captured) in the range."""
        return from_minor(self.payouts_minor, self.currency)

    @property
    def payout_count(self) -> int:
        return sum(d.payout_count for d in self.days)

    @property
    def expired_count(self) -> int:
        return sum(d.expired_count for d in self.days)

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
    def disputes_lost(self) -> Decimal:
        """What disputes lost or accepted in the range gave back to customers."""
        return from_minor(self.disputes_lost_minor, self.currency)

    @property
    def net_minor(self) -> int:
        return self.captured_minor - self.refunded_minor - self.disputes_lost_minor

    @property
    def net(self) -> Decimal:
        """Captured minus refunded and lost to disputes; negative when what went back for earlier
        sales outweighs the range's."""
        return from_minor(self.net_minor, self.currency)

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


def _as_date(value) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)


def _figures_query(caller: Caller, first_day: date, last_day: date):
    """One statement, so one snapshot, with two kinds of row: per day and currency, the figures
    ("day" rows); per currency and decline reason, how many were declined ("reason" rows)."""
    rows = in_range(caller, first_day, last_day,
                    [Kind.PAYMENT.value, Kind.REFUND.value, Kind.PAYOUT.value], _COUNTED_STATUSES)
    is_payment, is_refund = rows.c.kind == Kind.PAYMENT.value, rows.c.kind == Kind.REFUND.value
    captured = and_(is_payment, rows.c.status.in_(_CAPTURED))
    returned = and_(is_refund, rows.c.status == RETURNED_REFUND_STATUS.value)
    failed = and_(is_payment, rows.c.status.in_(_DECLINED))
    declined = and_(failed, rows.c.decline_reason != EXPIRED)
    expired = and_(failed, rows.c.decline_reason == EXPIRED)
    sent = and_(rows.c.kind == Kind.PAYOUT.value, rows.c.status == SENT_PAYOUT_STATUS.value)

    def total(when, column):
        return func.sum(case((when, column), else_=0))

    count, amount = rows.c.transaction_count, rows.c.amount_minor
    per_day = (select(literal("day").label("shape"), rows.c.day, rows.c.currency,
                      literal("").label("reason"), func.sum(count).label("counted"),
                      total(captured, amount).label("captured_minor"),
                      total(captured, count).label("captured_count"),
                      total(returned, amount).label("refunded_minor"),
                      total(returned, count).label("refund_count"),
                      total(declined, count).label("declined_count"),
                      total(expired, count).label("expired_count"),
                      total(sent, amount).label("payouts_minor"),
                      total(sent, count).label("payout_count"))
               .group_by(rows.c.day, rows.c.currency))
    zero = literal(0)
    per_reason = (select(literal("reason"), null().cast(Date), rows.c.currency, rows.c.decline_reason,
                         func.sum(count), zero, zero, zero, zero, func.sum(count), zero, zero, zero)
                  .where(declined).group_by(rows.c.currency, rows.c.decline_reason))
    return union_all(per_day, per_reason)


def overview(conn: Connection, caller: Caller, first_day: date, last_day: date) -> list[CurrencyOverview]:
    """The caller's figures from first_day to last_day (inclusive UTC days), one entry per currency
    with any payment or refund in the range, in alphabetical order (amounts in different
    currencies do not compare).

    The database keeps each day's counts and sums (app.store.daily_totals) and files them under
    captured, refunded and declined: the range's days are read, not its transactions.
    """
    by_currency: dict[str, dict[date, DayFigures]] = {}
    reasons: dict[str, list[DeclineCount]] = {}
    for row in conn.execute(_figures_query(caller, first_day, last_day)):
        # PostgreSQL's sum of a bigint is a numeric (a Decimal here): exact, made an int.
        if not int(row.counted):
            continue  # every transaction of the group moved on to a status not counted
        if row.shape == "reason":
            reasons.setdefault(row.currency, []).append(
                DeclineCount(row.reason or NO_REASON, int(row.declined_count)))
            continue
        day = _as_date(row.day)
        by_currency.setdefault(row.currency, {})[day] = DayFigures(
            day, int(row.captured_minor), int(row.captured_count), int(row.refunded_minor),
            int(row.refund_count), int(row.declined_count), int(row.expired_count),
            int(row.payouts_minor), int(row.payout_count))
    fees = settled_fees(conn, caller, first_day, last_day)
    lost = disputes_lost(conn, caller, first_day, last_day)
    every_day = [first_day + timedelta(days=n) for n in range((last_day - first_day).days + 1)]
    return [
        CurrencyOverview(currency, [by_day.get(d) or DayFigures(d) for d in every_day],
                         sorted(_merged(reasons.get(currency, [])), key=lambda d: (-d.count, d.reason)),
                         fees.get(currency), *lost.get(currency, (0, 0)))
        for currency, by_day in sorted(by_currency.items())
    ]


def settled_fees(conn: Connection, caller: Caller, first_day: date, last_day: date) -> dict[str, int]:
    """Per currency, the fees of the caller's settlements paid out from first_day to last_day
    (inclusive): a currency without one is not in it (its fees are not known yet)."""
    query = (select(settlements.c.currency, func.sum(settlements.c.fees_minor))
             .where(*scoped_to_mode(settlements, caller), settlements.c.settled_on >= first_day,
                    settlements.c.settled_on <= last_day)
             .group_by(settlements.c.currency))
    return {currency: int(fees) for currency, fees in conn.execute(query)}


def disputes_lost(conn: Connection, caller: Caller, first_day: date,
                  last_day: date) -> dict[str, tuple[int, int]]:
    """Per currency, the amount and number of the caller's disputes lost or accepted from
    first_day to last_day (inclusive UTC days), each on the day of its move to that status."""
    lost = [status.value for status in LOST_STATUSES]
    closed_at = (select(func.min(dispute_history.c.at)).where(dispute_history.c.dispute_id == disputes.c.id,
                                                             dispute_history.c.to_status.in_(lost))
                 .scalar_subquery())
    start = datetime.combine(first_day, time(), UTC)
    end = datetime.combine(last_day + timedelta(days=1), time(), UTC)
    query = (select(disputes.c.currency, func.sum(disputes.c.amount_minor), func.count())
             .where(*scoped_to_mode(disputes, caller), disputes.c.status.in_(lost),
                    closed_at >= start, closed_at < end)
             .group_by(disputes.c.currency))
    return {currency: (int(amount), int(count)) for currency, amount, count in conn.execute(query)}


def _merged(declines: list[DeclineCount]) -> list[DeclineCount]:
    """No reason recorded and an empty reason are the one NO_REASON entry."""
    counts: dict[str, int] = {}
    for decline in declines:
        counts[decline.reason] = counts.get(decline.reason, 0) + decline.count
    return [DeclineCount(reason, count) for reason, count in counts.items()]
