"""The API request log's rows: written in batches, searched by the Developers page, pruned by
the worker after REQUEST_LOG_RETENTION_DAYS."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, delete, func, insert, select, text

from app.payments.model import Caller

from .tables import request_log, request_log_tx

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


# The logged requests' columns as the writer sends them (request_log's id first).
_COLUMNS = ("id", "merchant_id", "mode", "token_id", "token_label", "method", "path", "status", "duration_ms",
            "request_id", "idempotency_key", "request_body", "response_body", "at")
_TX_COLUMNS = ("request_log_id", "merchant_id", "mode", "tx_no")
# On PostgreSQL a batch's ids come from request_log's sequence first, in one round trip, so that
# both tables can be written with COPY.
_NEXT_IDS = text("SELECT nextval(pg_get_serial_sequence('request_log', 'id')) FROM generate_series(1, :count)")


def write_batch(conn: Connection, rows: list[dict]) -> None:
    """Insert logged requests (their `tx_nos` into request_log_tx) in the caller's transaction.

    PostgreSQL: the batch's ids from the sequence, then one COPY into each table (the driver's
    COPY: a tenth of the CPU of an INSERT's parameters, measured in bench/request_log.py).
    SQLite: one INSERT of every row, one of their transactions."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        _copy_batch(conn, rows)
        return
    ids = conn.execute(
        insert(request_log).returning(request_log.c.id, sort_by_parameter_order=True),
        [{name: value for name, value in row.items() if name != "tx_nos"} for row in rows],
    ).scalars().all()
    touched = [{"request_log_id": log_id, "merchant_id": row["merchant_id"], "mode": row["mode"],
                "tx_no": tx_no}
               for log_id, row in zip(ids, rows) for tx_no in row["tx_nos"]]
    if touched:
        conn.execute(insert(request_log_tx), touched)


def _copy_batch(conn: Connection, rows: list[dict]) -> None:
    ids = conn.execute(_NEXT_IDS, {"count": len(rows)}).scalars().all()
    with conn.connection.driver_connection.cursor() as cursor:
        with cursor.copy(f"COPY request_log ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
            for log_id, row in zip(ids, rows):
                copy.write_row((log_id, *(row[name] for name in _COLUMNS[1:])))
        touched = [(log_id, row["merchant_id"], row["mode"], tx_no)
                   for log_id, row in zip(ids, rows) for tx_no in row["tx_nos"]]
        if touched:
            with cursor.copy(f"COPY request_log_tx ({', '.join(_TX_COLUMNS)}) FROM STDIN") as copy:
                for values in touched:
                    copy.write_row(values)


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
        query = query.where(request_log.c.id.in_(
            select(request_log_tx.c.request_log_id).where(
                request_log_tx.c.merchant_id == caller.merchant_id,
                request_log_tx.c.mode == caller.mode.value,
                request_log_tx.c.tx_no == found.tx_no)))
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
    return conn.execute(select(func.count()).select_from(request_log_tx).where(
        request_log_tx.c.merchant_id == caller.merchant_id, request_log_tx.c.mode == caller.mode.value,
        request_log_tx.c.tx_no == tx_no)).scalar_one()


def last_used(conn: Connection, token_ids: list[int]) -> dict[int, datetime]:
    """When each token last made a request the log still keeps."""
    if not token_ids:
        return {}
    rows = conn.execute(select(request_log.c.token_id, func.max(request_log.c.at))
                        .where(request_log.c.token_id.in_(token_ids))
                        .group_by(request_log.c.token_id))
    return {token_id: at for token_id, at in rows}


def prune_older_than(conn: Connection, cutoff: datetime, batch: int = PRUNE_BATCH) -> int:
    """Delete up to `batch` logged requests made before `cutoff` (their transactions' rows
    first); how many."""
    old = select(request_log.c.id).where(request_log.c.at < cutoff).order_by(request_log.c.id).limit(batch)
    ids = conn.execute(old).scalars().all()
    if not ids:
        return 0
    conn.execute(delete(request_log_tx).where(request_log_tx.c.request_log_id.in_(ids)))
    conn.execute(delete(request_log).where(request_log.c.id.in_(ids)))
    return len(ids)


def transactions_of(conn: Connection, log_id: int) -> list[str]:
    """The transaction numbers a logged request touched (its row already scoped to the caller)."""
    return list(conn.execute(select(request_log_tx.c.tx_no).where(request_log_tx.c.request_log_id == log_id)
                             .order_by(request_log_tx.c.tx_no)).scalars())
