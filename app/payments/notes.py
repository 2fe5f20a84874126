"""Staff notes on a transaction: what a note may hold, and adding one with its audit row."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .formats import storable_text
from .model import Caller, PaymentError, TransactionNotFound

MAX_NOTE_LENGTH = 1000


@dataclass(frozen=True)
class Note:
    """A note as stored: who wrote it, when, and its text."""

    author: str
    body: str
    created_at: datetime


class NoteRefused(PaymentError):
    """The note cannot be stored as written (empty, too long, control characters)."""


def note_text(text: str | None) -> str:
    """The note as it is stored: trimmed; NoteRefused when nothing is left, it is longer than
    MAX_NOTE_LENGTH or holds characters the databases cannot store."""
    body = (text or "").strip()
    if not body:
        raise NoteRefused("Write the note first")
    if len(body) > MAX_NOTE_LENGTH:
        raise NoteRefused(f"A note is at most {MAX_NOTE_LENGTH:,} characters (this one has {len(body):,})")
    if not storable_text(body):
        raise NoteRefused("A note must not contain control characters")
    return body


def add_note(deps, caller: Caller, tx_no: str, text: str | None) -> Note:
    """Store the caller's note on their transaction, and an audit row (note.add) in the same
    database transaction; TransactionNotFound outside the caller's merchant and mode."""
    body = note_text(text)
    with deps.uow() as uow:
        tx = uow.transactions.get(caller, tx_no)
        if tx is None:
            raise TransactionNotFound(tx_no)
        note = uow.notes.add(caller, tx, body, deps.clock())
        uow.audit(caller, "note.add", tx.tx_no, detail={"note": body})
        uow.commit()
    return note
