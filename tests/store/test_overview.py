"""The Overview figures on both databases: exact sums per currency and UTC day, refunds on their own
day, declines by reason, and nothing of another merchant, another mode, payouts or other days."""
from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from app.payments.model import Caller, Mode
from app.store.overview import DayFigures, DeclineCount, overview
from tests.support.overview_rows import FIRST, LAST, seed_three_days


@pytest.fixture
def seeded(app) -> Caller:
    """The seeded set's merchant, as its live caller."""
    return seed_three_days(app)


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
                   refund_count=1, declined_count=1, payouts_minor=50000, payout_count=1),
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
