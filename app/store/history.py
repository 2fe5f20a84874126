"""A transaction's status history, read only through the caller's merchant and mode."""
from __future__ import annotations

from sqlalchemy import Connection, select

from app.payments.model import Caller

from .scope import scoped_to_mode
from .tables import status_history, transactions


def status_changes(conn: Connection, caller: Caller, transaction_id: int) -> list:
    """The status history of one of the caller's transactions, oldest first (empty for anyone else's)."""
    return list(conn.execute(
        select(status_history)
        .join(transactions, transactions.c.id == status_history.c.transaction_id)
        .where(status_history.c.transaction_id == transaction_id, *scoped_to_mode(transactions, caller))
        .order_by(status_history.c.at, status_history.c.id)
    ))
