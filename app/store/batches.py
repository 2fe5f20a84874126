"""Batches and their rows, read within the caller's scope (the worker's reads say they are its).

A batch's state moves by conditional UPDATEs (review -> running, awaiting_approval -> running,
-> cancelled), so two clicks or two approvers move it once. A row moves from valid to created in
the unit of work that creates its transaction (mark_created), or to failed; never back.
"""
from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

import simplejson
from sqlalchemy import Connection, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from app.payments.batches import (
    Batch,
    BatchKeyTaken,
    BatchKind,
    BatchRow,
    BatchState,
    CheckedRow,
    RowState,
)
from app.payments.model import Caller, Kind, Mode, Transaction

from .approvals import threshold_of
from .db import is_unique_violation
from .scope import scoped_to_mode
from .tables import batch_rows, batches, transactions
from .transactions import _SELECT_TX, _row_to_transaction

# At most this many values in one IN (...) list (SQLite's default limit is 32766 parameters).
IN_LIST = 500
# A batch's rows with the transaction each made, in the batch's merchant and mode (none yet: NULLs).
_ROWS_MADE = batch_rows.join(batches, batches.c.id == batch_rows.c.batch_id).outerjoin(
    transactions, (transactions.c.tx_no == batch_rows.c.tx_no)
    & (transactions.c.merchant_id == batches.c.merchant_id) & (transactions.c.mode == batches.c.mode))


def dumps_exact(value) -> str:
    """JSON with Decimals written exactly (amounts), as the rows' input is kept."""
    # ASCII escapes: a refused row's text may hold what no database stores as such (lone surrogates).
    return simplejson.dumps(value, use_decimal=True)


def loads_exact(text: str):
    """JSON read back with numbers as int or Decimal, never float."""
    return json.loads(text, parse_float=Decimal)


def _batch(m, counts: dict[str, int]) -> Batch:
    return Batch(
        id=m["id"], public_id=m["public_id"], merchant_id=m["merchant_id"], mode=Mode(m["mode"]),
        kind=BatchKind(m["kind"]), state=BatchState(m["state"]), source=m["source"],
        file_name=m["file_name"], row_count=m["row_count"],
        totals={currency: Decimal(amount) for currency, amount in json.loads(m["totals"]).items()},
        created_by=m["created_by"], created_at=m["created_at"], submitted_by=m["submitted_by"],
        submitted_at=m["submitted_at"], approved_by=m["approved_by"], approved_at=m["approved_at"],
        finished_at=m["finished_at"], approval_id=m["approval_id"], counts=counts)


def _chunks(values: list, size: int = IN_LIST):
    for start in range(0, len(values), size):
        yield values[start:start + size]


class BatchRepository:
    """The caller's batches and rows; the worker's reads and moves of running batches."""

    def __init__(self, uow):
        self._uow = uow

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    # -- checking reads -------------------------------------------------------------------------

    def existing_references(self, caller: Caller, references: list[str]) -> dict[str, str]:
        """Which of these references the caller's payments and payouts use: {reference: txNo}."""
        found: dict[str, str] = {}
        for chunk in _chunks(sorted(set(references))):
            rows = self.conn.execute(select(transactions.c.reference, transactions.c.tx_no).where(
                *scoped_to_mode(transactions, caller), transactions.c.kind != Kind.REFUND.value,
                transactions.c.reference.in_(chunk)))
            found.update({row.reference: row.tx_no for row in rows})
        return found

    def payments_by_tx_no(self, caller: Caller, tx_nos: list[str]) -> dict[str, Transaction]:
        """The caller's transactions with these numbers, by txNo."""
        found: dict[str, Transaction] = {}
        for chunk in _chunks(sorted(set(tx_nos))):
            rows = self.conn.execute(_SELECT_TX.where(
                *scoped_to_mode(transactions, caller), transactions.c.tx_no.in_(chunk))).mappings()
            found.update({row["tx_no"]: _row_to_transaction(row) for row in rows})
        return found

    def threshold_of(self, caller: Caller, currency: str) -> Decimal | None:
        """The merchant's approval threshold in the currency (None: no approval)."""
        return threshold_of(self.conn, caller, currency)

    # -- writes of the web side -------------------------------------------------------------------

    def add(self, caller: Caller, public_id: str, kind: str, source: str, file_name: str | None,
            totals: dict[str, Decimal], request_key: str | None, now: datetime,
            rows: list[CheckedRow]) -> None:
        """Store a batch in review with its checked rows; BatchKeyTaken when its key made one."""
        try:
            with self.conn.begin_nested():
                batch_id = self.conn.execute(insert(batches).values(
                    public_id=public_id, merchant_id=caller.merchant_id, mode=caller.mode.value, kind=kind,
                    state=BatchState.REVIEW.value, source=source, file_name=file_name,
                    row_count=len(rows), totals=json.dumps({c: str(a) for c, a in totals.items()}),
                    request_key=request_key, created_by=caller.actor, created_at=now,
                ).returning(batches.c.id)).scalar_one()
        except IntegrityError as error:
            if is_unique_violation(error):
                raise BatchKeyTaken(request_key) from error
            raise
        self.conn.execute(insert(batch_rows), [
            {"batch_id": batch_id, "row_number": row.number, "input": dumps_exact(row.body),
             "errors": json.dumps(row.errors) if row.errors else None,
             "state": (RowState.INVALID if row.errors else RowState.VALID).value, "tx_no": None}
            for row in rows])

    def submit(self, batch_id: int, state: BatchState, actor: str, now: datetime,
               approval_id: int | None) -> bool:
        """review -> running or awaiting_approval; its invalid rows are skipped. False when the
        batch was no longer in review."""
        moved = self.conn.execute(update(batches).where(
            batches.c.id == batch_id, batches.c.state == BatchState.REVIEW.value,
        ).values(state=state.value, submitted_by=actor, submitted_at=now, approval_id=approval_id))
        if moved.rowcount != 1:
            return False
        self.conn.execute(update(batch_rows).where(
            batch_rows.c.batch_id == batch_id, batch_rows.c.state == RowState.INVALID.value,
        ).values(state=RowState.SKIPPED.value))
        return True

    def start_approved(self, caller: Caller, approval_id: int, actor: str, now: datetime) -> bool:
        """The batch of an approval request: awaiting_approval -> running."""
        moved = self.conn.execute(update(batches).where(
            batches.c.approval_id == approval_id, *scoped_to_mode(batches, caller),
            batches.c.state == BatchState.AWAITING_APPROVAL.value,
        ).values(state=BatchState.RUNNING.value, approved_by=actor, approved_at=now))
        return moved.rowcount == 1

    def cancel_awaiting(self, approval_id: int, now: datetime) -> None:
        """The batch of a rejected or expired approval request is cancelled."""
        self.conn.execute(update(batches).where(
            batches.c.approval_id == approval_id, batches.c.state == BatchState.AWAITING_APPROVAL.value,
        ).values(state=BatchState.CANCELLED.value, finished_at=now))

    def cancel(self, batch_id: int, states: tuple[BatchState, ...], now: datetime) -> bool:
        """Cancel the batch when it is in one of `states`."""
        moved = self.conn.execute(update(batches).where(
            batches.c.id == batch_id, batches.c.state.in_([s.value for s in states]),
        ).values(state=BatchState.CANCELLED.value, finished_at=now))
        return moved.rowcount == 1

    # -- reads --------------------------------------------------------------------------------------

    def _counts(self, batch_id: int) -> dict[str, int]:
        rows = self.conn.execute(select(batch_rows.c.state, func.count()).where(
            batch_rows.c.batch_id == batch_id).group_by(batch_rows.c.state))
        return {state: count for state, count in rows}

    def get(self, caller: Caller, public_id: str) -> Batch | None:
        """The caller's batch with this public id, and its rows' counts per state."""
        row = self.conn.execute(select(batches).where(
            batches.c.public_id == public_id, *scoped_to_mode(batches, caller))).mappings().first()
        return _batch(row, self._counts(row["id"])) if row else None

    def by_request_key(self, caller: Caller, request_key: str) -> Batch | None:
        """The caller's batch made with this request key."""
        row = self.conn.execute(select(batches).where(
            batches.c.request_key == request_key, *scoped_to_mode(batches, caller))).mappings().first()
        return _batch(row, self._counts(row["id"])) if row else None

    def list(self, caller: Caller, limit: int = 50) -> list[Batch]:
        """The caller's latest batches, newest first."""
        rows = self.conn.execute(select(batches).where(*scoped_to_mode(batches, caller))
                                 .order_by(batches.c.created_at.desc(), batches.c.id.desc())
                                 .limit(limit)).mappings().all()
        return [_batch(row, self._counts(row["id"])) for row in rows]

    def rows(self, batch_id: int) -> list[BatchRow]:
        """A batch's rows in order, with their transactions' statuses (the batch read in scope)."""
        query = (select(batch_rows, transactions.c.status, transactions.c.decline_reason).select_from(_ROWS_MADE)
                 .where(batch_rows.c.batch_id == batch_id).order_by(batch_rows.c.row_number))
        return [BatchRow(number=m["row_number"], body=loads_exact(m["input"]),
                         errors=json.loads(m["errors"]) if m["errors"] else None,
                         state=RowState(m["state"]), tx_no=m["tx_no"], tx_status=m["status"],
                         decline_reason=m["decline_reason"])
                for m in self.conn.execute(query).mappings()]

    def made_statuses(self, batch_id: int) -> dict[str, int]:
        """How many of a batch's rows' transactions are in each status (rows() shows them)."""
        found = self.conn.execute(select(transactions.c.status, func.count()).select_from(_ROWS_MADE)
                                  .where(batch_rows.c.batch_id == batch_id, transactions.c.status.is_not(None))
                                  .group_by(transactions.c.status))
        return {status: count for status, count in found}

    # -- the worker ---------------------------------------------------------------------------------

    def take_running(self, now: datetime, lease_until: datetime):
        """Take the lease of a running batch no worker holds: (id, merchant, mode, kind, actor),
        or None."""
        candidates = self.conn.execute(select(batches.c.id).where(
            batches.c.state == BatchState.RUNNING.value,
            or_(batches.c.lease_until.is_(None), batches.c.lease_until < now),
        ).order_by(batches.c.id).limit(5)).scalars().all()
        for batch_id in candidates:
            taken = self.conn.execute(update(batches).where(
                batches.c.id == batch_id, batches.c.state == BatchState.RUNNING.value,
                or_(batches.c.lease_until.is_(None), batches.c.lease_until < now),
            ).values(lease_until=lease_until))
            if taken.rowcount == 1:
                row = self.conn.execute(select(
                    batches.c.merchant_id, batches.c.mode, batches.c.kind, batches.c.submitted_by,
                    batches.c.created_by).where(batches.c.id == batch_id)).one()
                return batch_id, row.merchant_id, row.mode, row.kind, row.submitted_by or row.created_by
        return None

    def renew_lease(self, batch_id: int, lease_until: datetime | None) -> None:
        """Hold the batch longer (None: let it go)."""
        self.conn.execute(update(batches).where(batches.c.id == batch_id).values(lease_until=lease_until))

    def due_rows(self, batch_id: int, limit: int) -> list[tuple[int, dict]]:
        """The next valid rows to create: (row id, request body)."""
        rows = self.conn.execute(select(batch_rows.c.id, batch_rows.c.input).where(
            batch_rows.c.batch_id == batch_id, batch_rows.c.state == RowState.VALID.value,
        ).order_by(batch_rows.c.row_number).limit(limit))
        return [(row.id, loads_exact(row.input)) for row in rows]

    def mark_created(self, row_id: int, tx_no: str) -> bool:
        """valid -> created with its transaction, in that transaction's unit; False when another
        worker moved it first."""
        moved = self.conn.execute(update(batch_rows).where(
            batch_rows.c.id == row_id, batch_rows.c.state == RowState.VALID.value,
        ).values(state=RowState.CREATED.value, tx_no=tx_no))
        return moved.rowcount == 1

    def mark_failed(self, row_id: int, errors: dict[str, list[str]], tx_no: str | None) -> None:
        """valid -> failed with the service's messages (and the transaction a duplicate names)."""
        self.conn.execute(update(batch_rows).where(
            batch_rows.c.id == row_id, batch_rows.c.state == RowState.VALID.value,
        ).values(state=RowState.FAILED.value, errors=json.dumps(errors), tx_no=tx_no))

    def of_batches(self, tx_nos: list[str]) -> set[str]:
        """Which of these transactions a batch's row made (the worker opens their payouts together)."""
        found: set[str] = set()
        for chunk in _chunks(sorted(set(tx_nos))):
            found.update(self.conn.execute(select(batch_rows.c.tx_no).where(
                batch_rows.c.tx_no.in_(chunk))).scalars())
        return found

    def finish(self, batch_id: int, now: datetime) -> None:
        """A running batch with no valid row left is done."""
        self.conn.execute(update(batches).where(
            batches.c.id == batch_id, batches.c.state == BatchState.RUNNING.value,
        ).values(state=BatchState.DONE.value, finished_at=now, lease_until=None))
