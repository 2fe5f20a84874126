"""Each merchant's transactions counted and summed per UTC day: what the Overview page reads instead
of the transactions themselves, so a year costs about what a week does.

The database keeps the totals. Triggers on transactions (migration 0012) write a row into
daily_total_changes in the same database transaction as every insert, delete and change of a
column a total is grouped or summed by: +1 and the amount for the row as it now is, -1 and minus
the amount for the row as it was. They only insert, so two payments never wait on one counter.
The worker folds the changes into daily_totals (`fold_changes`), one row per merchant, mode, UTC
day, currency, kind, status and decline reason ('' for none).

A reader sums both tables (`in_range`) in one statement, so one snapshot: what it reads is exact
whether or not the worker has folded. `check_daily_totals` compares them with the transactions.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import CTE, Connection, Date, cast, delete, func, insert, literal, or_, select, union_all
from sqlalchemy.dialects import postgresql, sqlite

from app.payments.model import Caller

from .scope import scoped_to_mode
from .tables import daily_total_changes, daily_totals, transactions

# What a total is kept per, in daily_totals' primary key order.
KEY = ("merchant_id", "mode", "day", "currency", "kind", "status", "decline_reason")
# Change rows folded per statement: a worker round stays short however many are waiting.
FOLD_BATCH = 50_000
# Two workers fold one after the other (PostgreSQL advisory lock; SQLite has one writer anyway).
_FOLD_LOCK = 0x7061_7964_6179  # "payday"


def utc_day(conn: Connection, created_at):
    """The UTC day of a timestamp column: PostgreSQL converts the timestamptz to UTC first (the
    session's time zone may be any); SQLite keeps naive UTC text already. The triggers compute
    the same day (migration 0012)."""
    if conn.dialect.name == "postgresql":
        return cast(func.timezone("UTC", created_at), Date)
    return func.date(created_at)


def in_range(caller: Caller, first_day: date, last_day: date, kinds: list[str],
             statuses: list[str]) -> CTE:
    """The caller's daily totals and unfolded changes of these kinds and statuses from first_day
    to last_day (inclusive UTC days), as one set of rows (day, currency, kind, status,
    decline_reason, transaction_count, amount_minor) to sum in a single statement.

    A group whose transactions all moved on (a Pending payment now Captured) sums to a count of
    0, and a group may have several rows: only their sums mean anything.
    """
    parts = [
        select(table.c.day, table.c.currency, table.c.kind, table.c.status, table.c.decline_reason,
               table.c.transaction_count, table.c.amount_minor)
        .where(*scoped_to_mode(table, caller), table.c.day >= first_day, table.c.day <= last_day,
               table.c.kind.in_(kinds), table.c.status.in_(statuses))
        for table in (daily_totals, daily_total_changes)
    ]
    return union_all(*parts).cte("totals_and_changes")


def fold_changes(conn: Connection, batch: int = FOLD_BATCH) -> int:
    """Fold up to `batch` of the oldest change rows into daily_totals and delete them, in the
    caller's transaction (commit it). Returns how many were folded.

    On PostgreSQL one statement deletes the changes and adds what it deleted (DELETE ...
    RETURNING in a CTE): a change committed meanwhile is either in both or in neither. On
    SQLite the unit's write lock (BEGIN IMMEDIATE) keeps every other writer out between the
    sum and the delete.
    """
    changes = daily_total_changes
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(_FOLD_LOCK)))
        moved = (delete(changes)
                 .where(changes.c.id.in_(select(changes.c.id).order_by(changes.c.id).limit(batch)))
                 .returning(*(changes.c[column] for column in KEY), changes.c.transaction_count,
                            changes.c.amount_minor)
                 .cte("moved"))
        folded = _add_up(postgresql.insert, moved).cte("folded")
        return conn.execute(select(func.count()).select_from(moved).add_cte(folded)).scalar_one()
    oldest = select(changes.c.id).order_by(changes.c.id).limit(batch).subquery()
    last, count = conn.execute(select(func.max(oldest.c.id), func.count())).one()
    if not count:
        return 0
    conn.execute(_add_up(sqlite.insert, select(changes).where(changes.c.id <= last).subquery()))
    conn.execute(delete(changes).where(changes.c.id <= last))
    return count


def _add_up(dialect_insert, rows):
    """INSERT ... ON CONFLICT DO UPDATE adding the rows' counts and amounts, summed per group, to
    daily_totals (groups in key order, so two folds lock totals in the same order)."""
    group = [rows.c[column] for column in KEY]
    summed = (select(*group, func.sum(rows.c.transaction_count), func.sum(rows.c.amount_minor))
              .group_by(*group).order_by(*group))
    upsert = dialect_insert(daily_totals).from_select([*KEY, "transaction_count", "amount_minor"], summed)
    return upsert.on_conflict_do_update(index_elements=list(KEY), set_={
        "transaction_count": daily_totals.c.transaction_count + upsert.excluded.transaction_count,
        "amount_minor": daily_totals.c.amount_minor + upsert.excluded.amount_minor,
    })


def record_bulk_load(conn: Connection, first_id: int) -> int:
    """For a bulk load that went around the triggers (bench/seed.py: COPY with PostgreSQL's
    session_replication_role = replica, which skips every trigger), add its transactions, id
    first_id on, as change rows: one per group, as the triggers would have summed them. Returns
    how many change rows it wrote."""
    group = (transactions.c.merchant_id, transactions.c.mode,
             utc_day(conn, transactions.c.created_at).label("day"), transactions.c.currency,
             transactions.c.kind, transactions.c.status,
             func.coalesce(transactions.c.decline_reason, "").label("decline_reason"))
    summed = (select(*group, func.count(), func.sum(transactions.c.amount_minor))
              .where(transactions.c.id >= first_id).group_by(*group))
    return conn.execute(insert(daily_total_changes).from_select(
        [*KEY, "transaction_count", "amount_minor"], summed)).rowcount


@dataclass(frozen=True)
class DailyMismatch:
    """A group whose transactions differ from its daily total (transactions minus totals)."""

    merchant_id: int
    mode: str
    day: date | str
    currency: str
    kind: str
    status: str
    decline_reason: str
    count_difference: int
    amount_difference: int


def check_daily_totals(conn: Connection) -> list[DailyMismatch]:
    """Every group, across all merchants, whose transactions do not add up to its daily total
    plus its unfolded changes. One statement, so it sees one snapshot: a change committed while
    it runs cannot show as a mismatch (the change row moves with its transaction)."""
    signed = [
        select(transactions.c.merchant_id, transactions.c.mode,
               utc_day(conn, transactions.c.created_at).label("day"), transactions.c.currency,
               transactions.c.kind, transactions.c.status,
               func.coalesce(transactions.c.decline_reason, "").label("decline_reason"),
               literal(1).label("transaction_count"), transactions.c.amount_minor),
        *(select(*(table.c[column] for column in KEY), (-table.c.transaction_count).label("transaction_count"),
                 (-table.c.amount_minor).label("amount_minor"))
          for table in (daily_totals, daily_total_changes)),
    ]
    every = union_all(*signed).subquery("signed")
    group = [every.c[column] for column in KEY]
    count, amount = func.sum(every.c.transaction_count), func.sum(every.c.amount_minor)
    query = (select(*group, count, amount).group_by(*group).having(or_(count != 0, amount != 0))
             .order_by(*group))
    return [DailyMismatch(*row[:-2], int(row[-2]), int(row[-1])) for row in conn.execute(query)]
