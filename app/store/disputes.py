"""Reading and writing dispute rows, their history, their merchant webhooks and what lost
disputes took from their payments (SQLAlchemy Core, on a unit of work's connection).

Reads a caller makes are scoped to its merchant and mode; the worker's reads by database id say
so in their names, as app.store.transactions does.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, case, delete, func, insert, or_, select, update

from app.payments.dispute_files import DisputeFile
from app.payments.disputes import Action, Dispute, DisputeStatus
from app.payments.events import new_event_id
from app.payments.model import Caller, Mode
from app.payments.money import from_minor, to_minor
from app.util import dumps

from .scope import counts_per_mode
from .tables import dispute_files, dispute_history, disputes, events, transactions, webhook_events

if TYPE_CHECKING:
    from .unit_of_work import UnitOfWork

_SELECT = select(disputes, transactions.c.tx_no.label("payment_tx_no")).join(
    transactions, transactions.c.id == disputes.c.payment_id)


# A dispute still to answer: needing a response, nothing owed to the provider (check_can_act's rule).
_TO_ANSWER = (disputes.c.status == DisputeStatus.NEEDS_RESPONSE.value, disputes.c.action.is_(None))
# One a reminder may be sent for: still to answer, not reminded of yet.
_TO_REMIND = (*_TO_ANSWER, disputes.c.reminded_at.is_(None))


def _row_to_dispute(m) -> Dispute:
    return Dispute(
        id=m["id"], dispute_no=m["dispute_no"], merchant_id=m["merchant_id"], mode=m["mode"],
        payment_id=m["payment_id"], payment_tx_no=m["payment_tx_no"], provider=m["provider"],
        provider_account_id=m["provider_account_id"], provider_dispute_id=m["provider_dispute_id"],
        amount=from_minor(m["amount_minor"], m["currency"]), currency=m["currency"],
        reason=m["reason"], status=DisputeStatus(m["status"]), provider_status=m["provider_status"],
        due_by=m["due_by"], evidence=json.loads(m["evidence"]) if m["evidence"] else {},
        evidence_submitted_at=m["evidence_submitted_at"],
        evidence_submitted_by=m["evidence_submitted_by"],
        action=Action(m["action"]) if m["action"] else None, action_by=m["action_by"],
        action_due_at=m["action_due_at"], action_attempts=m["action_attempts"],
        action_error=m["action_error"], created_at=m["created_at"], updated_at=m["updated_at"])


def _one(conn: Connection, query, for_update: bool) -> Dispute | None:
    """The one dispute a query finds (locked: for_update), or None."""
    if for_update:
        query = query.with_for_update(of=disputes)
    row = conn.execute(query).mappings().first()
    return _row_to_dispute(row) if row else None


class DisputeRepository:
    """A unit of work's disputes (uow.disputes)."""

    def __init__(self, uow: "UnitOfWork"):
        self._uow = uow

    @property
    def conn(self) -> Connection:
        """The unit's connection (its queued writes are sent before each statement)."""
        return self._uow.conn

    def by_number(self, caller: Caller, dispute_no: str, *, for_update: bool = False) -> Dispute | None:
        """The caller's dispute with this number, or None."""
        return _one(self.conn, _SELECT.where(disputes.c.merchant_id == caller.merchant_id,
                                        disputes.c.mode == caller.mode.value,
                                        disputes.c.dispute_no == dispute_no), for_update)

    def by_provider_id(self, merchant_id: int, mode: str, provider: str, provider_dispute_id: str,
                       *, for_update: bool = False) -> Dispute | None:
        """The dispute a provider knows by this id, in the merchant and mode, or None."""
        return _one(self.conn, _SELECT.where(disputes.c.merchant_id == merchant_id, disputes.c.mode == mode,
                                        disputes.c.provider == provider,
                                        disputes.c.provider_dispute_id == provider_dispute_id), for_update)

    def by_id_for_worker(self, dispute_id: int, *, for_update: bool = False) -> Dispute | None:
        """The dispute with this database id, in whichever merchant and mode (the worker's read)."""
        return _one(self.conn, _SELECT.where(disputes.c.id == dispute_id), for_update)

    def of_payment(self, payment_id: int) -> list[Dispute]:
        """A payment's disputes, oldest first (the payment's id was read in the caller's scope)."""
        rows = self.conn.execute(_SELECT.where(disputes.c.payment_id == payment_id)
                            .order_by(disputes.c.id)).mappings().all()
        return [_row_to_dispute(row) for row in rows]

    def listing(self, caller: Caller, *, statuses: list[str] | None = None,
                due_before: datetime | None = None, before_id: int | None = None, limit: int = 50) -> list[Dispute]:
        """The caller's disputes, newest first, from below `before_id` (the cursor) on."""
        query = _SELECT.where(disputes.c.merchant_id == caller.merchant_id, disputes.c.mode == caller.mode.value)
        if statuses:
            query = query.where(disputes.c.status.in_(statuses))
        if due_before is not None:
            query = query.where(disputes.c.due_by < due_before)
        if before_id is not None:
            query = query.where(disputes.c.id < before_id)
        rows = self.conn.execute(query.order_by(disputes.c.id.desc()).limit(limit)).mappings().all()
        return [_row_to_dispute(row) for row in rows]

    def open_queue(self, caller: Caller, statuses: list[str], limit: int = 500) -> list[Dispute]:
        """The caller's disputes in these statuses, the nearest deadline first (none last)."""
        query = (_SELECT.where(disputes.c.merchant_id == caller.merchant_id, disputes.c.mode == caller.mode.value,
                               disputes.c.status.in_(statuses))
                 .order_by(disputes.c.due_by.is_(None), disputes.c.due_by, disputes.c.id).limit(limit))
        return [_row_to_dispute(row) for row in self.conn.execute(query).mappings().all()]

    def needing_response(self, merchant_id: int) -> dict[Mode, int]:
        """How many of the merchant's disputes await an answer in each mode: needing a response,
        with nothing owed to the provider yet (evidence or an acceptance on its way)."""
        return counts_per_mode(self.conn.execute(
            select(disputes.c.mode, func.count()).where(disputes.c.merchant_id == merchant_id, *_TO_ANSWER)
            .group_by(disputes.c.mode)))

    def insert_dispute(self, dispute: Dispute) -> Dispute:
        """Store a new dispute; it comes back with its database id."""
        dispute.id = self.conn.execute(insert(disputes).values(
            dispute_no=dispute.dispute_no, merchant_id=dispute.merchant_id, mode=dispute.mode,
            payment_id=dispute.payment_id, provider=dispute.provider,
            provider_account_id=dispute.provider_account_id, provider_dispute_id=dispute.provider_dispute_id,
            amount_minor=to_minor(dispute.amount, dispute.currency), currency=dispute.currency,
            reason=dispute.reason, status=dispute.status.value, provider_status=dispute.provider_status,
            due_by=dispute.due_by, evidence=dumps(dispute.evidence) if dispute.evidence else None,
            created_at=dispute.created_at, updated_at=dispute.updated_at,
        ).returning(disputes.c.id)).scalar_one()
        return dispute

    def save(self, dispute: Dispute, *, claimed_until: datetime | None = None) -> None:
        """Write back what may change on a dispute (its claim is set to `claimed_until`). A
        deadline the provider moved gets a reminder of its own: the one sent was for the old."""
        self.conn.execute(update(disputes).where(disputes.c.id == dispute.id).values(
            reminded_at=case((disputes.c.due_by.is_distinct_from(dispute.due_by), None),
                             else_=disputes.c.reminded_at),
            amount_minor=to_minor(dispute.amount, dispute.currency), reason=dispute.reason,
            status=dispute.status.value, provider_status=dispute.provider_status, due_by=dispute.due_by,
            evidence=dumps(dispute.evidence) if dispute.evidence else None,
            evidence_submitted_at=dispute.evidence_submitted_at,
            evidence_submitted_by=dispute.evidence_submitted_by,
            action=dispute.action.value if dispute.action else None, action_by=dispute.action_by,
            action_due_at=dispute.action_due_at, action_claimed_until=claimed_until,
            action_attempts=dispute.action_attempts, action_error=dispute.action_error,
            updated_at=dispute.updated_at))

    def add_history(self, dispute: Dispute, from_status: DisputeStatus | None, source: str,
                    note: str | None, at: datetime) -> None:
        """Append the dispute's move to its current status to its history."""
        self.conn.execute(insert(dispute_history).values(
            dispute_id=dispute.id, from_status=from_status.value if from_status else None,
            to_status=dispute.status.value, source=source[:254], note=note[:500] if note else None, at=at))

    def files(self, dispute_id: int, *, with_data: bool = False) -> list[DisputeFile]:
        """A dispute's evidence files, oldest first (their bytes only `with_data`)."""
        columns = [c for c in dispute_files.c if with_data or c.name != "data"]
        rows = self.conn.execute(select(*columns).where(dispute_files.c.dispute_id == dispute_id)
                                 .order_by(dispute_files.c.id)).mappings().all()
        return [DisputeFile(**row) for row in rows]

    def replace_file(self, dispute_id: int, kind: str, filename: str, content_type: str, data: bytes,
                     sha256: str, by: str, at: datetime) -> DisputeFile:
        """Keep a file of this kind for the dispute, in place of the one it had (one per kind)."""
        self.conn.execute(delete(dispute_files).where(dispute_files.c.dispute_id == dispute_id,
                                                      dispute_files.c.kind == kind))
        values = dict(dispute_id=dispute_id, kind=kind, filename=filename, content_type=content_type,
                      size=len(data), sha256=sha256, created_at=at, created_by=by[:254])
        file_id = self.conn.execute(insert(dispute_files).values(data=data, **values)).inserted_primary_key[0]
        return DisputeFile(id=file_id, **values)

    def file_uploaded(self, file_id: int, provider_file_id: str, at: datetime) -> None:
        """Keep the provider's id of an uploaded file (it is not uploaded again)."""
        self.conn.execute(update(dispute_files).where(dispute_files.c.id == file_id).values(
            provider_file_id=provider_file_id, uploaded_at=at))

    def history(self, dispute_id: int) -> list[dict]:
        """A dispute's status moves, oldest first."""
        rows = self.conn.execute(select(dispute_history).where(dispute_history.c.dispute_id == dispute_id)
                            .order_by(dispute_history.c.id)).mappings().all()
        return [dict(row) for row in rows]

    def enqueue_webhook(self, dispute: Dispute, url: str | None, webhook_id: str, payload: dict,
                        at: datetime) -> None:
        """The event of the dispute's change and the merchant's webhook of it, into the outbox of
        the same transaction (under its payment, whose callbackUrl it goes to)."""
        body = dumps(payload)
        kind = f"dispute.{dispute.status.value}"
        event_id = self.conn.execute(insert(events).values(
            public_id=new_event_id(), merchant_id=dispute.merchant_id, mode=dispute.mode,
            event_type=kind, transaction_id=dispute.payment_id, tx_no=dispute.payment_tx_no,
            webhook_id=webhook_id, payload=body, created_at=at)).inserted_primary_key[0]
        if not url:
            return
        self.conn.execute(insert(webhook_events).values(
            merchant_id=dispute.merchant_id, mode=dispute.mode, transaction_id=dispute.payment_id,
            webhook_id=webhook_id, event_type=kind, url=url, payload=body, state="pending",
            attempts=0, next_attempt_at=at, created_at=at, event_id=event_id))

    def delivered_webhooks(self, payment_id: int) -> list[tuple[str, datetime]]:
        """The payment's merchant webhooks delivered so far: (event type, when), oldest first."""
        rows = self.conn.execute(select(webhook_events.c.event_type, webhook_events.c.delivered_at).where(
            webhook_events.c.transaction_id == payment_id, webhook_events.c.state == "delivered")
            .order_by(webhook_events.c.id)).all()
        return [(row.event_type, row.delivered_at) for row in rows]

    def take_from_payment(self, payment_id: int, amount_minor: int) -> None:
        """Count a lost or accepted dispute's amount on its payment: no longer refundable."""
        self.conn.execute(update(transactions).where(transactions.c.id == payment_id)
                     .values(dispute_lost_minor=transactions.c.dispute_lost_minor + amount_minor))

    def due_actions(self, now: datetime, limit: int) -> list[int]:
        """Disputes whose action is due and not claimed by a live worker, the oldest due first."""
        rows = self.conn.execute(select(disputes.c.id).where(
            disputes.c.action.is_not(None), disputes.c.action_due_at <= now,
            or_(disputes.c.action_claimed_until.is_(None), disputes.c.action_claimed_until <= now),
        ).order_by(disputes.c.action_due_at).limit(limit)).all()
        return [row.id for row in rows]

    def claim_action(self, dispute_id: int, now: datetime, until: datetime) -> bool:
        """Take a due action for this worker until `until`; False when another worker holds it."""
        taken = self.conn.execute(update(disputes).where(
            disputes.c.id == dispute_id, disputes.c.action.is_not(None), disputes.c.action_due_at <= now,
            or_(disputes.c.action_claimed_until.is_(None), disputes.c.action_claimed_until <= now),
        ).values(action_claimed_until=until, action_attempts=disputes.c.action_attempts + 1))
        return taken.rowcount == 1

    def due_reminders(self, due_before: datetime, now: datetime, limit: int) -> list[int]:
        """Disputes still to answer (needing a response, nothing owed to the provider) whose
        deadline falls before `due_before` and has not passed, not yet reminded of, soonest first."""
        rows = self.conn.execute(select(disputes.c.id).where(*_TO_REMIND, disputes.c.due_by < due_before,
                                                             disputes.c.due_by > now)
                                 .order_by(disputes.c.due_by, disputes.c.id).limit(limit)).all()
        return [row.id for row in rows]

    def claim_reminder(self, dispute_id: int, now: datetime) -> bool:
        """Note the dispute's reminder as sent now; False when it was, or it needs none any more."""
        taken = self.conn.execute(update(disputes).where(disputes.c.id == dispute_id, *_TO_REMIND)
                                  .values(reminded_at=now))
        return taken.rowcount == 1

    def due_status_checks(self, checked_before: datetime, statuses: list[str], limit: int) -> list[int]:
        """Disputes in these (open) statuses of a provider behind a network, with nothing owed to
        it, that no worker has asked about since `checked_before`, the longest unasked first."""
        rows = self.conn.execute(select(disputes.c.id).where(
            disputes.c.status.in_(statuses), disputes.c.provider != "simulator", disputes.c.action.is_(None),
            or_(disputes.c.status_checked_at.is_(None), disputes.c.status_checked_at < checked_before),
        ).order_by(disputes.c.status_checked_at.is_not(None), disputes.c.status_checked_at, disputes.c.id)
            .limit(limit)).all()
        return [row.id for row in rows]

    def claim_status_check(self, dispute_id: int, checked_before: datetime, now: datetime) -> bool:
        """Note that this worker asks about the dispute now; False when another worker just did."""
        taken = self.conn.execute(update(disputes).where(
            disputes.c.id == dispute_id,
            or_(disputes.c.status_checked_at.is_(None), disputes.c.status_checked_at < checked_before),
        ).values(status_checked_at=now))
        return taken.rowcount == 1
