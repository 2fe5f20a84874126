"""Failed sign-ins, counted in the database so that every web process sees the same counts."""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Connection, and_, case, delete, func, insert, or_, select

from .tables import sign_in_failures

ADDRESS_LENGTH = 64
ACCOUNT_LENGTH = 254


class FailureCounts(NamedTuple):
    """Failures since a moment: from the address (any account), of the account from the address,
    and of the account from every address."""

    from_address: int
    account_from_address: int
    of_account: int


def failure_counts(conn: Connection, account: str, address: str, since: datetime) -> FailureCounts:
    """How many failures there were after `since` (one statement, both indexes)."""
    table = sign_in_failures
    at_address, of_account = table.c.address == address, table.c.account == account

    def total(condition):
        return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

    row = conn.execute(
        select(total(at_address), total(and_(at_address, of_account)), total(of_account))
        .where(table.c.failed_at > since, or_(at_address, of_account))
    ).one()
    return FailureCounts(*(int(count) for count in row))


def record_failure(conn: Connection, account: str, address: str, at: datetime) -> None:
    """Count one failed attempt on the account from the address."""
    conn.execute(insert(sign_in_failures).values(account=account, address=address, failed_at=at))


def clear_failures(conn: Connection, account: str, address: str) -> None:
    """Forget the account's failures from the address (its owner signed in from there)."""
    conn.execute(delete(sign_in_failures).where(sign_in_failures.c.account == account,
                                                sign_in_failures.c.address == address))


def purge_older_than(conn: Connection, cutoff: datetime) -> int:
    """Delete failures too old to count; how many."""
    return conn.execute(delete(sign_in_failures)
                        .where(sign_in_failures.c.failed_at < cutoff)).rowcount
