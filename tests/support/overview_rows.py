"""A seeded set for the Overview's tests: three UTC days of a merchant's payments and refunds in
EUR, JPY and KWD, with everything that must not count around them (other days, payouts, the
sandbox, another merchant). The exact figures are asserted in tests/store/test_overview.py."""
from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import insert

from app.payments.model import Caller, Mode
from app.store.merchants import create_merchant
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


def seed_three_days(app, merchant_id: int | None = None) -> Caller:
    """Three days of a merchant's EUR, JPY and KWD payments and refunds, with everything that must
    not count around them; returns the merchant's live caller."""
    merchant_id, other_merchant = merchant_id or _merchant(app), _merchant(app)
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
