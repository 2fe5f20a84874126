"""Staff notes on transactions, read and written in the caller's merchant and mode."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import insert, select

from app.payments.model import Caller, Transaction
from app.payments.notes import Note

from .scope import scoped_to_mode
from .tables import transaction_notes


class NoteRepository:
    """The notes of the unit of work's transactions (uow.notes)."""

    def __init__(self, uow):
        self._uow = uow

    def add(self, caller: Caller, tx: Transaction, body: str, at: datetime) -> Note:
        """Store the caller's note on the transaction (one of the caller's, read in this unit)."""
        self._uow.conn.execute(insert(transaction_notes).values(
            transaction_id=tx.id, merchant_id=caller.merchant_id, mode=caller.mode.value,
            author=caller.actor, body=body, created_at=at))
        return Note(author=caller.actor, body=body, created_at=at)

    def of_transaction(self, caller: Caller, tx: Transaction) -> list[Note]:
        """The transaction's notes, newest first; none when it is not of the caller's merchant and mode."""
        rows = self._uow.conn.execute(
            select(transaction_notes.c.author, transaction_notes.c.body, transaction_notes.c.created_at)
            .where(*scoped_to_mode(transaction_notes, caller), transaction_notes.c.transaction_id == tx.id)
            .order_by(transaction_notes.c.id.desc()))
        return [Note(author=r.author, body=r.body, created_at=r.created_at) for r in rows]
