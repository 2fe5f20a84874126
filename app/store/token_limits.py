"""What a token with a daily limit has refunded or paid out today: the one statement that takes
an amount from its limit only while it fits, so concurrent requests can never pass it.

The rule (a token may move at most its daily limit per currency and UTC day) has its home in
app.payments.tokens; this is its counterpart in the database, run in the unit of work that
writes the refund or payout, so the amount taken and the write commit or roll back together.
"""
from __future__ import annotations

from datetime import date

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite

from .tables import token_day_totals


def take(conn: Connection, token_id: int, day: date, kind: str, currency: str,
         amount_minor: int, daily_minor: int) -> int | None:
    """Add `amount_minor` to the token's total of the day when the total stays within
    `daily_minor`; None when it was taken, otherwise what is left of the limit (minor units).

    One INSERT ... ON CONFLICT DO UPDATE ... WHERE: the first amount of the day inserts the
    total; later ones add to it only when the sum fits. On PostgreSQL the update locks the
    total's row and re-reads it when a concurrent one committed first; on SQLite the unit's
    write lock (BEGIN IMMEDIATE) keeps every other writer out until the unit ends.
    """
    if amount_minor <= daily_minor:
        dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        upsert = dialect_insert(token_day_totals).values(
            token_id=token_id, day=day, kind=kind, currency=currency, used_minor=amount_minor)
        upsert = upsert.on_conflict_do_update(
            index_elements=["token_id", "day", "kind", "currency"],
            set_={"used_minor": token_day_totals.c.used_minor + upsert.excluded.used_minor},
            where=token_day_totals.c.used_minor + upsert.excluded.used_minor <= daily_minor,
        ).returning(token_day_totals.c.used_minor)
        if conn.execute(upsert).first() is not None:
            return None
    return daily_minor - used(conn, token_id, day, kind, currency)


def used(conn: Connection, token_id: int, day: date, kind: str, currency: str) -> int:
    """What the token has taken of its limit on the day (minor units)."""
    found = conn.execute(
        select(token_day_totals.c.used_minor).where(
            token_day_totals.c.token_id == token_id, token_day_totals.c.day == day,
            token_day_totals.c.kind == kind, token_day_totals.c.currency == currency)
    ).scalar()
    return found or 0
