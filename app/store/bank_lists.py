"""Provider accounts' bank lists as the workers fetched them: read by requests, kept by workers."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Insert, and_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.payments.bank_lists import ListKey
from app.payments.provider import Bank

from .tables import bank_lists, provider_accounts

MAX_ERROR_LENGTH = 500  # bank_lists.last_error


@dataclass(frozen=True)
class StoredBankList:
    """A stored bank list; banks is None while it has been asked for and not fetched yet."""

    banks: list[Bank] | None
    fetched_at: datetime | None
    refresh_due_at: datetime
    failed_fetches: int
    last_error: str | None


@dataclass(frozen=True)
class DueList:
    """A list a worker should fetch now, and how many fetches of it failed in a row."""

    id: int
    key: ListKey
    failed_fetches: int


def _is_key(key: ListKey):
    return and_(bank_lists.c.provider_account_id == key.provider_account_id,
                bank_lists.c.currency == key.currency, bank_lists.c.country == key.country)


class BankListRepository:
    """The unit of work's reads and requests of stored bank lists (uow.bank_lists)."""

    def __init__(self, uow):
        self._uow = uow

    def get(self, key: ListKey) -> StoredBankList | None:
        """The stored list, or None when nobody has asked for it yet."""
        row = self._uow.conn.execute(select(bank_lists).where(_is_key(key))).mappings().first()
        if row is None:
            return None
        banks = None if row["banks"] is None else [Bank(b["code"], b["name"]) for b in json.loads(row["banks"])]
        return StoredBankList(banks, row["fetched_at"], row["refresh_due_at"], row["failed_fetches"],
                              row["last_error"])

    def ask_for(self, key: ListKey, now: datetime) -> None:
        """Make a list nobody asked for yet due now; one already known keeps its schedule (its
        backoff after failures too), so repeated requests never hurry a failing provider."""
        self._uow.conn.execute(_insert(self._uow.conn, key, now).on_conflict_do_nothing(
            index_elements=[bank_lists.c.provider_account_id, bank_lists.c.currency,
                            bank_lists.c.country]))

    def make_due(self, key: ListKey, now: datetime) -> None:
        """Due now, whatever its schedule (an account just connected or re-keyed); a stored copy
        stays and is served until the fetch replaces it."""
        self._uow.conn.execute(_insert(self._uow.conn, key, now).on_conflict_do_update(
            index_elements=[bank_lists.c.provider_account_id, bank_lists.c.currency,
                            bank_lists.c.country],
            set_={"refresh_due_at": now, "failed_fetches": 0}))


def _insert(conn: Connection, key: ListKey, now: datetime) -> Insert:
    """INSERT of a list not fetched yet, due now, in the dialect that knows ON CONFLICT."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(bank_lists).values(
        provider_account_id=key.provider_account_id, currency=key.currency, country=key.country,
        refresh_due_at=now, failed_fetches=0)


def due_lists(conn: Connection, now: datetime, limit: int) -> list[DueList]:
    """Lists of connected accounts due by `now`, the longest waiting first."""
    rows = conn.execute(
        select(bank_lists.c.id, bank_lists.c.provider_account_id, bank_lists.c.currency,
               bank_lists.c.country, bank_lists.c.failed_fetches)
        .join(provider_accounts, provider_accounts.c.id == bank_lists.c.provider_account_id)
        .where(bank_lists.c.refresh_due_at <= now, provider_accounts.c.disconnected_at.is_(None))
        .order_by(bank_lists.c.refresh_due_at).limit(limit))
    return [DueList(row.id, ListKey(row.provider_account_id, row.currency, row.country),
                    row.failed_fetches) for row in rows]


def claim(conn: Connection, due: DueList, now: datetime, until: datetime) -> bool:
    """Take a due list for one worker's fetch: it is not due again before `until` (then another
    worker takes it, if this one died). False when another worker took it first."""
    return conn.execute(update(bank_lists).where(bank_lists.c.id == due.id,
                                                 bank_lists.c.refresh_due_at <= now)
                        .values(refresh_due_at=until)).rowcount == 1


def save_fetched(conn: Connection, list_id: int, banks: list[Bank], fetched_at: datetime,
                 refresh_due_at: datetime) -> None:
    """The fetched banks replace the stored copy; the failures are forgotten."""
    conn.execute(update(bank_lists).where(bank_lists.c.id == list_id).values(
        banks=json.dumps([{"code": b.code, "name": b.name} for b in banks], ensure_ascii=False),
        fetched_at=fetched_at, refresh_due_at=refresh_due_at, failed_fetches=0, last_error=None))


def save_failure(conn: Connection, list_id: int, error: str, retry_at: datetime) -> None:
    """A failed fetch: the stored copy stays; the error is kept and the fetch tried at retry_at."""
    conn.execute(update(bank_lists).where(bank_lists.c.id == list_id).values(
        refresh_due_at=retry_at, failed_fetches=bank_lists.c.failed_fetches + 1,
        last_error=error[:MAX_ERROR_LENGTH]))
