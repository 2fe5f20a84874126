"""The Overview figures on both databases: exact sums per currency and UTC day, refunds on their own
day, declines by reason, and nothing of another merchant, another mode, payouts or other days."""
from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import insert

from app.payments.model import Caller, Mode
from app.store.merchants import create_merchant
from app.store.overview import DayFigures, DeclineCount, overview
from app.store.tables import transactions

FIRST, LAST = date(2026, 3, 1), date(2026, 3, 3)


def at(day: int, hour: int = 12, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(2026, 3, 1, tzinfo=UTC) + timedelta(days=day - 1, hours=hour, minutes=minute,
                                                         seconds=second, microseconds=micro)


def _merchant(app) -> int:
    with app.extensions["paydesk"].uow() as uow:
        created = create_merchant(uow, f"Overview {uuid.uuid4().hex[:8]}", "http://paydesk.test")
        uow.commit()
    return created.merchant_id


class Rows:
    """Transactions written straight into the table, at the moments the test names."""

    def __init__(self, conn, merchant_id: int):
        self.conn, self.merchant_id = conn, merchant_id

    def add(self, kind, status, amount_minor, currency, created, *, mode="live", reason=None,
            original=None, merchant_id=None) -> int:
        tx_no = f"{kind[:3].upper()}-{uuid.uuid4().hex[:16].upper()}"
        return self.conn.execute(insert(transactions).values(
            merchant_id=merchant_id or self.merchant_id, mode=mode, tx_no=tx_no, kind=kind,
            status=status, amount_minor=amount_minor, currency=currency,
            reference=f"ref-{tx_no}", payment_method="card", decline_reason=reason,
            original_id=original, created_at=created, updated_at=created,
        )).inserted_primary_key[0]


@pytest.fixture
def seeded(app):
    """Three days of a merchant's EUR, JPY and KWD payments and refunds, with everything that must
    not count around them; returns the merchant's live caller."""
    merchant_id, other_merchant = _merchant(app), _merchant(app)
    with app.extensions["paydesk.engine"].begin() as conn:
        rows = Rows(conn, merchant_id)
        p1 = rows.add("payment", "Captured", 10000, "EUR", at(1, 0))  # the first microsecond of day 1
        p2 = rows.add("payment", "Refunded", 5000, "EUR", at(1, 23, 59, 59, 999999))  # its last
        rows.add("payment", "Captured", 2005, "EUR", at(2))
        rows.add("payment", "Chargeback", 1000, "EUR", at(3))  # was captured
        rows.add("payment", "Declined", 3000, "EUR", at(2), reason="Insufficient Funds")
        rows.add("payment", "Declined", 4000, "EUR", at(3), reason="Insufficient Funds")
        rows.add("payment", "Failed", 500, "EUR", at(3))  # no reason recorded
        rows.add("payment", "Pending", 500, "EUR", at(2))
        rows.add("payment", "Authorized", 500, "EUR", at(2))
        rows.add("refund", "Captured", 5000, "EUR", at(2, 9), original=p2)  # the refund's own day
        rows.add("refund", "Captured", 750, "EUR", at(3, 9), original=p1)  # partial
        rows.add("refund", "Failed", 100, "EUR", at(3, 10), original=p1)
        rows.add("refund", "Pending", 200, "EUR", at(3, 11), original=p1)
        rows.add("payout", "Captured", 50000, "EUR", at(2))
        # Just outside the range, either side.
        rows.add("payment", "Captured", 99900, "EUR", at(0, 23, 59, 59, 999999))
        rows.add("payment", "Captured", 99900, "EUR", at(4, 0))
        rows.add("refund", "Captured", 300, "EUR", at(4, 0), original=p1)
        # Other currencies: no minor digits, three.
        jpy = rows.add("payment", "Captured", 1500, "JPY", at(2))
        rows.add("refund", "Captured", 500, "JPY", at(3), original=jpy)
        rows.add("payment", "Declined", 900, "JPY", at(1), reason="Declined By Bank")
        rows.add("payment", "Captured", 1250, "KWD", at(1))
        # The same merchant's sandbox, and another merchant, on the same days.
        rows.add("payment", "Captured", 77700, "EUR", at(2), mode="sandbox")
        rows.add("payment", "Declined", 77700, "EUR", at(2), mode="sandbox", reason="Suspected Fraud")
        rows.add("payment", "Captured", 88800, "EUR", at(2), merchant_id=other_merchant)
        rows.add("payment", "Captured", 88800, "GBP", at(2), merchant_id=other_merchant)
    return Caller(merchant_id, Mode.LIVE, "test")


def figures(app, caller, first=FIRST, last=LAST):
    with app.extensions["paydesk.engine"].connect() as conn:
        return overview(conn, caller, first, last)


def test_each_currency_of_the_merchant_and_mode_has_its_exact_totals(app, seeded):
    eur, jpy, kwd = figures(app, seeded)
    assert [eur.currency, jpy.currency, kwd.currency] == ["EUR", "JPY", "KWD"]
    assert (eur.captured, eur.refunded, eur.net) == (Decimal("180.05"), Decimal("57.50"), Decimal("122.55"))
    assert (eur.captured_count, eur.refund_count, eur.declined_count) == (4, 2, 3)
    assert eur.refund_rate == Decimal("31.9")  # 57.50 / 180.05 = 31.935...%
    assert (jpy.captured, jpy.refunded, jpy.net) == (Decimal("1500"), Decimal("500"), Decimal("1000"))
    assert jpy.refund_rate == Decimal("33.3")
    assert (kwd.captured, kwd.refunded, kwd.net) == (Decimal("1.250"), Decimal("0.000"), Decimal("1.250"))
    assert str(kwd.captured) == "1.250"
    assert kwd.refund_rate == Decimal("0.0")


def test_every_utc_day_of_the_range_is_there_and_refunds_count_on_their_own_day(app, seeded):
    eur = figures(app, seeded)[0]
    assert eur.days == [
        DayFigures(date(2026, 3, 1), captured_minor=15000, captured_count=2),
        DayFigures(date(2026, 3, 2), captured_minor=2005, captured_count=1, refunded_minor=5000,
                   refund_count=1, declined_count=1),
        DayFigures(date(2026, 3, 3), captured_minor=1000, captured_count=1, refunded_minor=750,
                   refund_count=1, declined_count=2),
    ]
    kwd = figures(app, seeded)[2]
    assert [d.captured_minor for d in kwd.days] == [1250, 0, 0]


def test_declines_are_counted_by_reason_most_frequent_first(app, seeded):
    eur, jpy, kwd = figures(app, seeded)
    assert eur.declines == [DeclineCount("Insufficient Funds", 2), DeclineCount("No reason given", 1)]
    assert jpy.declines == [DeclineCount("Declined By Bank", 1)]
    assert kwd.declines == []


def test_one_day_ranges_end_at_utc_midnight(app, seeded):
    [eur, jpy, kwd] = figures(app, seeded, FIRST, FIRST)
    assert eur.days == [DayFigures(FIRST, captured_minor=15000, captured_count=2)]
    assert jpy.declines == [DeclineCount("Declined By Bank", 1)] and jpy.captured_minor == 0
    [before] = figures(app, seeded, date(2026, 2, 28), date(2026, 2, 28))
    assert (before.currency, before.captured_minor) == ("EUR", 99900)


def test_the_sandbox_sees_only_its_own_rows(app, seeded):
    [eur] = figures(app, Caller(seeded.merchant_id, Mode.SANDBOX, "test"))
    assert (eur.captured_minor, eur.declines) == (77700, [DeclineCount("Suspected Fraud", 1)])


def test_a_range_without_rows_has_no_currencies(app, seeded):
    assert figures(app, seeded, date(2026, 1, 1), date(2026, 1, 31)) == []


def test_postgresql_days_are_utc_days_whatever_the_session_time_zone(app, seeded):
    engine = app.extensions["paydesk.engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite keeps UTC text and has no session time zone")
    with engine.connect() as conn:
        conn.exec_driver_sql("SET TIME ZONE 'America/New_York'")
        eur = overview(conn, seeded, FIRST, LAST)[0]
        conn.rollback()
        conn.exec_driver_sql("SET TIME ZONE 'UTC'")
    assert [d.captured_minor for d in eur.days] == [15000, 2005, 1000]
