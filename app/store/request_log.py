"""The API request log's rows: written in batches, searched by the Developers page, pruned by
the worker after REQUEST_LOG_RETENTION_DAYS."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, func, insert, or_, select

from app.payments.model import Caller

from .tables import request_log

# The most rows one search answers, and one pruning statement deletes.
MAX_SHOWN = 100
PRUNE_BATCH = 5000


@dataclass(frozen=True)
class LogFilter:
    """What the Developers page searches by; None or "" matches everything."""

    path: str = ""
    status: int | None = None
    token_id: int | None = None
    tx_no: str = ""
    before_id: int | None = None  # the next page: rows older than this one


# The logged requests' columns as the writer gives them (the id is the table's own).
_COLUMNS = ("merchant_id", "mode", "token_id", "token_label", "method", "path", "status", "duration_ms",
            "request_id", "idempotency_key", "request_body", "response_body", "at", "tx_no", "other_tx_no")
_COPY = f"COPY request_log ({', '.join(_COLUMNS)}) FROM STDIN"


def write_batch(conn: Connection, rows: list[dict]) -> None:
    """Insert logged requests (each a dict of _COLUMNS) in the caller's transaction.

    PostgreSQL: one COPY, the driver's (a fifth of the CPU of an INSERT's parameters per row,
    measured with bench/request_log.py). SQLite: one INSERT of every row."""
    if not rows:
        return
    if conn.dialect.name != "postgresql":
        conn.execute(insert(request_log), rows)
        return
    with conn.connection.driver_connection.cursor() as cursor, cursor.copy(_COPY) as copy:
        for row in rows:
            copy.write_row(tuple(row[name] for name in _COLUMNS))


def touching(caller: Caller, tx_no: str):
    """The condition: a logged request of the caller's merchant and mode that touched the
    transaction (each column served by its partial index)."""
    return and_(request_log.c.merchant_id == caller.merchant_id, request_log.c.mode == caller.mode.value,
                or_(request_log.c.tx_no == tx_no, request_log.c.other_tx_no == tx_no))


def search(conn: Connection, caller: Caller, found: LogFilter, limit: int = MAX_SHOWN) -> list:
    """The caller's merchant's and mode's logged requests matching the filter, newest first."""
    query = select(request_log).where(request_log.c.merchant_id == caller.merchant_id,
                                      request_log.c.mode == caller.mode.value)
    if found.path:
        query = query.where(request_log.c.path.contains(found.path, autoescape=True))
    if found.status is not None:
        query = query.where(request_log.c.status == found.status)
    if found.token_id is not None:
        query = query.where(request_log.c.token_id == found.token_id)
    if found.tx_no:
        query = query.where(touching(caller, found.tx_no))
    if found.before_id is not None:
        query = query.where(request_log.c.id < found.before_id)
    return conn.execute(query.order_by(request_log.c.id.desc()).limit(limit)).all()


def one(conn: Connection, caller: Caller, log_id: int):
    """One of the caller's logged requests, or None (another merchant's or mode's is None too)."""
    return conn.execute(select(request_log).where(
        request_log.c.id == log_id, request_log.c.merchant_id == caller.merchant_id,
        request_log.c.mode == caller.mode.value)).first()


def count_for_transaction(conn: Connection, caller: Caller, tx_no: str) -> int:
    """How many of the caller's logged requests touched the transaction."""
    return conn.execute(select(func.count()).select_from(request_log).where(
        touching(caller, tx_no))).scalar_one()


def last_used(conn: Connection, token_ids: list[int]) -> dict[int, datetime]:
    """When each token last made a request the log still keeps."""
    if not token_ids:
        return {}
    rows = conn.execute(select(request_log.c.token_id, func.max(request_log.c.at))
                        .where(request_log.c.token_id.in_(token_ids))
                        .group_by(request_log.c.token_id))
    return {token_id: at for token_id, at in rows}


def prune_older_than(conn: Connection, cutoff: datetime, batch: int = PRUNE_BATCH) -> int:
    """Delete up to `batch` logged requests made before `cutoff`; how many."""
    old = select(request_log.c.id).where(request_log.c.at < cutoff).order_by(request_log.c.id).limit(batch)
    ids = conn.execute(old).scalars().all()
    if not ids:
        return 0
    conn.execute(delete(request_log).where(request_log.c.id.in_(ids)))
    return len(ids)


def transactions_of(row) -> list[str]:
    """The transaction numbers a logged request (its row) touched, in txNo order."""
    return [tx_no for tx_no in (row.tx_no, row.other_tx_no) if tx_no]
