"""Idempotency key records: claimed before an operation runs, completed with the answer it keeps.

app.payments.idempotency is given this module as its KeyRecords store.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from app.payments.idempotency import KeyRecord

from .db import is_unique_violation
from .tables import idempotency_keys


def claim(conn: Connection, merchant_id: int, mode: str, key: str, request_hash: str,
          now: datetime) -> int | None:
    """Insert a running record for the key; its id, or None when the key is already taken."""
    try:
        with conn.begin_nested():
            return conn.execute(
                insert(idempotency_keys)
                .values(merchant_id=merchant_id, mode=mode, key=key, request_hash=request_hash,
                        state="running", created_at=now, updated_at=now)
                .returning(idempotency_keys.c.id)
            ).scalar_one()
    except IntegrityError as error:
        if is_unique_violation(error):
            return None
        raise


def find(conn: Connection, merchant_id: int, mode: str, key: str) -> KeyRecord | None:
    """The record of the key, or None."""
    m = conn.execute(
        select(idempotency_keys).where(
            idempotency_keys.c.merchant_id == merchant_id,
            idempotency_keys.c.mode == mode,
            idempotency_keys.c.key == key,
        )
    ).mappings().first()
    if m is None:
        return None
    return KeyRecord(m["id"], m["request_hash"], m["state"], m["transaction_id"],
                     m["response_status"], m["response_body"], m["created_at"], m["updated_at"])


def link_transaction(uow, record_id: int, tx) -> None:
    """Note the transaction the operation created or moved, with the writes of the unit of work
    that creates or moves it (its id may not be known before they are sent)."""
    uow.writes.update(idempotency_keys, record_id, {"transaction_id": uow.writes.id_of(tx)})


def complete(conn: Connection, record_id: int, status: int, body: str, now: datetime) -> None:
    """Keep the answer to replay."""
    conn.execute(
        update(idempotency_keys)
        .where(idempotency_keys.c.id == record_id)
        .values(state="done", response_status=status, response_body=body, updated_at=now)
    )


def take_over(conn: Connection, record_id: int, seen_updated_at: datetime, now: datetime) -> bool:
    """Restart an abandoned running record; True for the one caller that wins."""
    result = conn.execute(
        update(idempotency_keys)
        .where(idempotency_keys.c.id == record_id, idempotency_keys.c.state == "running",
               idempotency_keys.c.updated_at == seen_updated_at)
        .values(updated_at=now)
    )
    return result.rowcount == 1


def release(conn: Connection, record_id: int) -> None:
    """Forget a key (expired), so it can be used again."""
    conn.execute(delete(idempotency_keys).where(idempotency_keys.c.id == record_id))


def release_unless_linked(conn: Connection, record_id: int) -> None:
    """Forget a key whose operation failed before creating anything, so it can be retried.

    A key linked to a transaction is kept: a later retry is answered from that transaction.
    """
    conn.execute(
        delete(idempotency_keys).where(
            idempotency_keys.c.id == record_id, idempotency_keys.c.transaction_id.is_(None)
        )
    )


def purge_older_than(conn: Connection, cutoff: datetime) -> int:
    """Delete records past the replay window; how many."""
    return conn.execute(delete(idempotency_keys).where(idempotency_keys.c.created_at < cutoff)).rowcount
