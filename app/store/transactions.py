"""Reading and writing transaction rows: payments, payouts and refunds, within a merchant and mode.

A merchant's data is read and written through the caller's scope (its merchant and mode): the
methods take the `Caller` and cannot be asked without it. The few reads by database id that the
worker makes, which have no caller, say so in their names. The statements that move a payment's
refund totals are the refund guard's (app.store.refund_guard); this repository runs them.
"""
from __future__ import annotations

import json
from dataclasses import fields, replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import Connection, RowMapping, bindparam, exists, select, update

from app.payments.model import (
    DECLINE_STATUSES,
    Caller,
    Kind,
    Mode,
    Status,
    StoredStatus,
    Transaction,
)
from app.payments.money import from_minor, to_minor
from app.payments.reconcile import Outcome as LineOutcome
from app.payments.sandbox import FIXTURE_CREATED_BY

from .provider_calls import due_calls
from .refund_guard import (
    HELD_TO_RESERVED,
    HOLD_REFUND,
    RELEASE_HOLD,
    RESERVE_REFUND,
    minor_units,
    reserve_params,
)
from .tables import (
    approval_requests,
    dispute_history,
    disputes,
    idempotency_keys,
    provider_calls,
    settlement_lines,
    status_history,
    transaction_notes,
    transactions,
    webhook_events,
)
from .writes import Add, Returned

if TYPE_CHECKING:
    from .unit_of_work import UnitOfWork

originals = transactions.alias("originals")


def _row_to_transaction(m) -> Transaction:
    """The Transaction of a row of transactions' columns, as a mapping (`Result.mappings()`)."""
    return Transaction(
        id=m["id"],
        merchant_id=m["merchant_id"],
        mode=Mode(m["mode"]),
        tx_no=m["tx_no"],
        kind=Kind(m["kind"]),
        status=Status(m["status"]),
        amount=from_minor(m["amount_minor"], m["currency"]),
        currency=m["currency"],
        reference=m["reference"],
        payment_method=m["payment_method"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        statement_descriptor=m["statement_descriptor"],
        callback_url=m["callback_url"],
        billing=json.loads(m["billing"]) if m["billing"] else {},
        payment_details=json.loads(m["payment_details"]) if m["payment_details"] else {},
        original_id=m["original_id"],
        original_tx_no=m.get("original_tx_no"),
        decline_reason=m["decline_reason"],
        provider_transaction_id=m["provider_transaction_id"],
        provider_status=m["provider_status"],
        provider_message=m["provider_message"],
        provider_redirect_url=m["provider_redirect_url"],
        success_url=m["success_url"],
        pending_url=m["pending_url"],
        failure_url=m["failure_url"],
        udf1=m["udf1"],
        udf2=m["udf2"],
        udf3=m["udf3"],
        created_by=m["created_by"],
        provider_check_at=m["provider_check_at"],
        cancel_requested_at=m["cancel_requested_at"],
        refund_reserved=from_minor(m["refund_reserved_minor"], m["currency"]),
        refund_captured=from_minor(m["refund_captured_minor"], m["currency"]),
        refund_held=from_minor(m["refund_held_minor"], m["currency"]),
        dispute_lost=from_minor(m["dispute_lost_minor"], m["currency"]),
    )


# The hot statements are built once, here, with bound parameters: building and
# cache-keying a statement on every call cost more Python time than running it.
_SELECT_TX = select(transactions, originals.c.tx_no.label("original_tx_no")).outerjoin(
    originals, originals.c.id == transactions.c.original_id
)
_TX_BY_NUMBER = _SELECT_TX.where(
    transactions.c.merchant_id == bindparam("merchant_id"),
    transactions.c.mode == bindparam("mode"),
    transactions.c.tx_no == bindparam("tx_no"),
)
_TX_BY_NUMBER_FOR_UPDATE = _TX_BY_NUMBER.with_for_update(of=transactions)
# The status response's columns alone, in StoredStatus's order.
STORED_STATUS_COLUMNS = ("tx_no", "status", "amount_minor", "currency", "reference", "created_at",
                         "decline_reason", "provider_transaction_id", "provider_status",
                         "provider_message", "success_url", "pending_url", "failure_url", "udf1",
                         "udf2", "udf3")
_STATUS_BY_NUMBER = select(*(transactions.c[name] for name in STORED_STATUS_COLUMNS)).where(
    transactions.c.merchant_id == bindparam("merchant_id"),
    transactions.c.mode == bindparam("mode"),
    transactions.c.tx_no == bindparam("tx_no"),
)
def stored_status(row: RowMapping) -> StoredStatus:
    """A StoredStatus from a row holding STORED_STATUS_COLUMNS (read with .mappings())."""
    return StoredStatus(*(from_minor(row["amount_minor"], row["currency"]) if name == "amount_minor"
                          else Status(row[name]) if name == "status" else row[name]
                          for name in STORED_STATUS_COLUMNS))


_TX_BY_ID = _SELECT_TX.where(transactions.c.id == bindparam("tx_id"))
_TX_BY_ID_FOR_UPDATE = _TX_BY_ID.with_for_update(of=transactions)
_TX_BY_ID_IN_SCOPE = _TX_BY_ID.where(
    transactions.c.merchant_id == bindparam("merchant_id"),
    transactions.c.mode == bindparam("mode"),
)
# A transaction and its original, locked in id order (see lock_with_original).
_TX_AND_ORIGINAL_FOR_UPDATE = (
    _SELECT_TX.where(
        (transactions.c.id == bindparam("tx_id"))
        | (transactions.c.id == select(transactions.c.original_id)
           .where(transactions.c.id == bindparam("tx_id")).scalar_subquery())
    )
    .order_by(transactions.c.id)
    .with_for_update(of=transactions)
)

# A transaction (and its original) still as a caller read them without a lock: the same status
# and last change, and for the original the same captured refunds too (they decide whether it
# becomes Refunded; a reservation may have changed its other totals meanwhile). Both rows are
# locked, the original first as in lock_with_original: the transaction's row must pass the
# original's sub-select before it is locked itself.
_read_original = transactions.alias("read_original")
_TX_AS_READ = select(transactions.c.id).where(
    transactions.c.id == bindparam("read_tx_id"),
    transactions.c.status == bindparam("read_tx_status"),
    transactions.c.updated_at == bindparam("read_tx_updated_at"),
).with_for_update(of=transactions)
_TX_AND_ORIGINAL_AS_READ = _TX_AS_READ.where(exists(
    select(_read_original.c.id).where(
        _read_original.c.id == bindparam("read_original_id"),
        _read_original.c.status == bindparam("read_original_status"),
        _read_original.c.updated_at == bindparam("read_original_updated_at"),
        _read_original.c.refund_captured_minor == bindparam("read_original_captured"),
    ).with_for_update()
))


def _due_now(tx: Transaction) -> bool:
    """tx is written with its provider call due at once (a worker is to make it now)."""
    return tx.provider_check_at is not None and tx.provider_check_at <= tx.updated_at


class TransactionRepository:
    """Payments, payouts and refunds of every merchant, always read within a merchant and mode."""

    def __init__(self, uow: "UnitOfWork"):
        self._uow = uow
        self.writes = uow.writes

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def get(self, caller: Caller, tx_no: str, *, for_update: bool = False) -> Transaction | None:
        """The transaction with this number in the caller's merchant and mode, or None."""
        query = _TX_BY_NUMBER_FOR_UPDATE if for_update else _TX_BY_NUMBER
        found = self._uow.rows(query, {"merchant_id": caller.merchant_id, "mode": caller.mode.value,
                                       "tx_no": tx_no})
        return _row_to_transaction(found[0]) if found else None

    def status_of(self, caller: Caller, tx_no: str) -> StoredStatus | None:
        """What the status response shows of the caller's transaction with this number, or None."""
        found = self._uow.rows(_STATUS_BY_NUMBER, {"merchant_id": caller.merchant_id,
                                                   "mode": caller.mode.value, "tx_no": tx_no})
        return stored_status(found[0]) if found else None

    def get_by_id(self, caller: Caller, tx_id: int) -> Transaction | None:
        """The transaction with this database id in the caller's merchant and mode, or None."""
        row = self.conn.execute(_TX_BY_ID_IN_SCOPE, {"tx_id": tx_id, "merchant_id": caller.merchant_id,
                                                     "mode": caller.mode.value}).mappings().first()
        return _row_to_transaction(row) if row else None

    def get_for_worker(self, tx_id: int, *, for_update: bool = False) -> Transaction | None:
        """The transaction with this database id, in whichever merchant and mode it lives (the
        worker's reads: it settles every merchant's transactions and has no caller)."""
        query = _TX_BY_ID_FOR_UPDATE if for_update else _TX_BY_ID
        row = self.conn.execute(query, {"tx_id": tx_id}).mappings().first()
        return _row_to_transaction(row) if row else None

    def many_for_worker(self, tx_ids: list[int]) -> dict[int, Transaction]:
        """The transactions of these ids and their originals, by id, in two queries (a worker's
        batch of provider calls; like get_for_worker, in whichever merchant and mode)."""
        if not tx_ids:
            return {}
        found = {row["id"]: _row_to_transaction(row) for row in self.conn.execute(
            _SELECT_TX.where(transactions.c.id.in_(sorted(tx_ids)))).mappings()}
        originals = {tx.original_id for tx in found.values() if tx.original_id} - found.keys()
        if originals:
            found.update((row["id"], _row_to_transaction(row)) for row in self.conn.execute(
                _SELECT_TX.where(transactions.c.id.in_(sorted(originals)))).mappings())
        return found

    def lock_with_original(self, tx_id: int) -> tuple[Transaction, Transaction | None]:
        """Lock a transaction and its original (if any) in one statement, in id order.

        Settlement's step: the id is that of a transaction the service has already read in
        the caller's scope, or one the worker found due.

        The original's id is always the smaller, so it is locked first: the order
        refund creation uses too, and two lockers can never wait on each other.
        """
        rows = self.conn.execute(_TX_AND_ORIGINAL_FOR_UPDATE, {"tx_id": tx_id}).mappings().all()
        by_id = {row["id"]: _row_to_transaction(row) for row in rows}
        tx = by_id.pop(tx_id)
        return tx, (next(iter(by_id.values())) if by_id else None)

    def expect_as_read(self, tx: Transaction, original: Transaction | None) -> None:
        """Make the unit's writes depend on tx (and its original) being still as they were read,
        unlocked: checked and locked by the statement that sends the writes, first (one
        statement on PostgreSQL). When either has changed, none of the writes are made and
        commit() raises NotHeld: the caller locks the rows and decides again."""
        params = {"read_tx_id": tx.id, "read_tx_status": tx.status.value,
                  "read_tx_updated_at": tx.updated_at}
        if original is None:
            self.writes.only_if(_TX_AS_READ, params)
            return
        self.writes.only_if(_TX_AND_ORIGINAL_AS_READ, {
            **params, "read_original_id": original.id, "read_original_status": original.status.value,
            "read_original_updated_at": original.updated_at,
            "read_original_captured": to_minor(original.refund_captured, original.currency)})

    def find_for_checkout(self, tx_no: str) -> Transaction | None:
        """A payment by its number alone (the hosted checkout has no token); None if not exactly one."""
        rows = self.conn.execute(
            _SELECT_TX.where(
                transactions.c.tx_no == tx_no,
                transactions.c.kind == Kind.PAYMENT.value,
                transactions.c.created_by != FIXTURE_CREATED_BY,
            ).limit(2)
        ).mappings().all()
        return _row_to_transaction(rows[0]) if len(rows) == 1 else None

    def find_by_reference(self, caller: Caller, reference: str) -> str | None:
        """The tx_no of the caller's payment or payout with this reference, if any."""
        return self.conn.execute(
            select(transactions.c.tx_no).where(
                transactions.c.merchant_id == caller.merchant_id,
                transactions.c.mode == caller.mode.value,
                transactions.c.reference == reference,
                transactions.c.kind != Kind.REFUND.value,
            )
        ).scalar()

    def find_by_provider_id(self, caller: Caller, kind: Kind,
                            provider_transaction_id: str) -> Transaction | None:
        """The caller's transaction of this kind that the provider knows by this id (its webhooks)."""
        row = self.conn.execute(_SELECT_TX.where(
            transactions.c.merchant_id == caller.merchant_id,
            transactions.c.mode == caller.mode.value,
            transactions.c.provider_transaction_id == provider_transaction_id,
            transactions.c.kind == kind.value,
        ).limit(1)).mappings().first()
        return _row_to_transaction(row) if row else None

    def add(self, tx: Transaction, *, announce: bool = True) -> Transaction:
        """Insert a new transaction with the unit's writes; tx.id is set when they are sent.
        A duplicate reference raises ReferenceTaken then (at the latest, from commit()).
        A provider call due now is announced to the workers once the unit commits, unless
        `announce` is False (the caller hands it over itself: Deps.hand_over)."""
        self.writes.insert(transactions, dict(
            merchant_id=tx.merchant_id,
            mode=tx.mode.value,
            tx_no=tx.tx_no,
            kind=tx.kind.value,
            status=tx.status.value,
            amount_minor=minor_units(self.writes, tx.amount, tx.currency),
            currency=tx.currency,
            reference=tx.reference,
            statement_descriptor=tx.statement_descriptor,
            callback_url=tx.callback_url,
            payment_method=tx.payment_method,
            billing=json.dumps(tx.billing) if tx.billing else None,
            customer_email=tx.customer_email,
            customer_name=tx.customer_name,
            customer_reference=tx.customer_reference,
            payment_details=json.dumps(tx.payment_details) if tx.payment_details else None,
            original_id=tx.original_id,
            decline_reason=tx.decline_reason,
            provider_transaction_id=tx.provider_transaction_id,
            provider_status=tx.provider_status,
            provider_message=tx.provider_message,
            provider_redirect_url=tx.provider_redirect_url,
            success_url=tx.success_url,
            pending_url=tx.pending_url,
            failure_url=tx.failure_url,
            udf1=tx.udf1,
            udf2=tx.udf2,
            udf3=tx.udf3,
            created_by=tx.created_by,
            created_at=tx.created_at,
            updated_at=tx.updated_at,
            provider_check_at=tx.provider_check_at,
        ), row=tx)
        if announce and _due_now(tx):
            self._uow.call_due_now(tx)
        return tx

    def save_state(self, tx: Transaction) -> None:
        """Write back what a status change touches (with the unit's writes)."""
        self.writes.update(transactions, self.writes.id_of(tx), dict(
            status=tx.status.value,
            decline_reason=tx.decline_reason,
            provider_transaction_id=tx.provider_transaction_id,
            provider_status=tx.provider_status,
            provider_message=tx.provider_message,
            provider_redirect_url=tx.provider_redirect_url,
            provider_check_at=tx.provider_check_at,
            updated_at=tx.updated_at,
        ))
        if _due_now(tx):
            self._uow.call_due_now(tx)

    def request_cancel(self, tx: Transaction) -> None:
        """Write a cancel request on a payment (with the unit's writes): the time it was asked,
        its provider call (due now: announced once the unit commits) and its ProviderMessage."""
        self.writes.update(transactions, self.writes.id_of(tx), dict(
            cancel_requested_at=tx.cancel_requested_at,
            provider_message=tx.provider_message,
            provider_check_at=tx.provider_check_at,
            updated_at=tx.updated_at,
        ))
        if _due_now(tx):
            self._uow.call_due_now(tx)

    def reserve_refund(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction | None:
        """Reserve a refund's amount on the caller's payment with this number with the refund
        guard, now; the payment as it now stands (its row locked until the unit ends), or None
        when a rule refuses it (or there is no such payment)."""
        row = self.conn.execute(RESERVE_REFUND, reserve_params(caller, tx_no, amount)).mappings().first()
        return _row_to_transaction(row) if row else None

    def hold_refund(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction | None:
        """Hold a refund request's amount on the caller's payment while it awaits approval, with
        the refund guard (reserve_refund's, adding to what requests hold), now; the payment as it
        now stands, or None when refused."""
        row = self.conn.execute(HOLD_REFUND, reserve_params(caller, tx_no, amount)).mappings().first()
        return _row_to_transaction(row) if row else None

    def reserve_held_refund(self, payment_id: int, held_minor: int) -> Transaction | None:
        """Move an approved request's hold into the payment's reserved total; None (nothing
        changed) when the payment is no longer Captured."""
        row = self.conn.execute(HELD_TO_RESERVED, {"payment_id": payment_id,
                                                    "held_minor": held_minor}).mappings().first()
        return _row_to_transaction(row) if row else None

    def release_held_refund(self, payment_id: int, held_minor: int) -> None:
        """Give back what a rejected, expired or failed request held on its payment."""
        self.conn.execute(RELEASE_HOLD, {"payment_id": payment_id, "held_minor": held_minor})

    def reserve_refund_with_writes(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction:
        """reserve_refund(), sent with the unit's writes and first, without reading the payment
        before: when the guard refuses, none of the writes are made and commit() raises NotHeld.

        Returns the payment as the guard will return it. Until the writes are sent, its fields
        other than its scope and number stand for its row's columns (Returned): a refund made
        from it (app.payments.refunds.pending_refund) is written with its payment's currency,
        reference, method and callback URL as the row has them, and its amount in the currency's
        minor units as the guard converts it. Once sent, the payment and that refund hold the
        values (the payment with the amount reserved)."""
        payment = Transaction(**{f.name: Returned(f.name) for f in fields(Transaction)
                                 if f.name not in ("merchant_id", "mode", "tx_no")},
                              merchant_id=caller.merchant_id, mode=caller.mode, tx_no=tx_no)

        def returned(row: RowMapping) -> None:
            reserved = _row_to_transaction(row)
            for f in fields(Transaction):
                setattr(payment, f.name, getattr(reserved, f.name))

        self.writes.only_if(RESERVE_REFUND, reserve_params(caller, tx_no, amount), then=returned)
        return payment

    def settle_refund(self, refund: Transaction, original: Transaction) -> Transaction:
        """Move a refund that reached its final status on its original's row, in the unit that
        records that status: a Captured refund's amount joins the captured total, a Failed or
        Declined one's is given back. `original` is the refund's original as this unit locked
        it; returns it as it now stands."""
        captured = refund.amount if refund.status is Status.CAPTURED else Decimal(0)
        released = refund.amount if refund.status in DECLINE_STATUSES else Decimal(0)
        self.writes.update(transactions, original.id, dict(
            refund_reserved_minor=Add(-to_minor(released, original.currency)),
            refund_captured_minor=Add(to_minor(captured, original.currency)),
        ))
        return replace(original, refund_reserved=original.refund_reserved - released,
                       refund_captured=original.refund_captured + captured)

    def refunds_of(self, caller: Caller, original_id: int) -> list[Transaction]:
        """The refunds of the caller's original, oldest first."""
        rows = self.conn.execute(
            _SELECT_TX.where(transactions.c.original_id == original_id,
                             transactions.c.merchant_id == caller.merchant_id,
                             transactions.c.mode == caller.mode.value)
            .order_by(transactions.c.id)
        ).mappings()
        return [_row_to_transaction(r) for r in rows]

    def due_provider_checks(self, now: datetime, limit: int = 100) -> list[int]:
        """Ids of transactions whose provider answer is owed and due (each is then locked and
        re-checked): the workers' due calls (app.store.provider_calls), without their accounts."""
        return [call.tx_id for call in due_calls(self.conn, now, limit)]

    def ask_provider_now(self, tx_id: int, now: datetime) -> None:
        """Hand a Pending transaction's provider call to the workers, due now (announced once
        the unit commits)."""
        self.conn.execute(update(transactions)
                          .where(transactions.c.id == tx_id, transactions.c.status == Status.PENDING.value)
                          .values(provider_check_at=now))
        self._uow.call_due_now(None)

    def claim_provider_checks(self, tx_ids: list[int], now: datetime, until: datetime) -> dict[int, Transaction]:
        """Take due provider checks for one worker: each still due is pushed to `until` in
        provider_calls (the transactions are not written); the transactions taken, by id, as
        they stand (another worker took the others). One statement on PostgreSQL, the claim
        and the read together; two on SQLite, which has no UPDATE in a WITH."""
        if not tx_ids:
            return {}
        claim = (update(provider_calls)
                 .where(provider_calls.c.transaction_id.in_(sorted(tx_ids)), provider_calls.c.due_at <= now)
                 .values(due_at=until)
                 .returning(provider_calls.c.transaction_id))
        if self._uow.is_postgres:
            claimed = claim.cte("claimed")
            read = _SELECT_TX.join(claimed, claimed.c.transaction_id == transactions.c.id)
        else:
            taken = list(self.conn.execute(claim).scalars())
            if not taken:
                return {}
            read = _SELECT_TX.where(transactions.c.id.in_(taken))
        return {row["id"]: _row_to_transaction(row) for row in self.conn.execute(read).mappings()}

    def expired_pending(self, created_before: datetime, limit: int = 100) -> list[int]:
        """Ids of payments and payouts still Pending that were created before the cut-off."""
        query = (
            select(transactions.c.id)
            .where(
                transactions.c.status == Status.PENDING.value,
                transactions.c.created_at < created_before,
                transactions.c.kind != Kind.REFUND.value,
                transactions.c.provider_check_at.is_(None),
                transactions.c.created_by != FIXTURE_CREATED_BY,  # sandbox fixtures stay Pending
            )
            .limit(limit)
        )
        return list(self.conn.execute(query).scalars())

    def delete_sandbox_fixtures(self, caller: Caller, tx_nos: list[str]) -> None:
        """Remove the caller's sandbox test transactions (and their refunds, history, events) for a reset."""
        ids = list(
            self.conn.execute(
                select(transactions.c.id).where(
                    transactions.c.merchant_id == caller.merchant_id,
                    transactions.c.mode == Mode.SANDBOX.value,
                    transactions.c.tx_no.in_(tx_nos),
                )
            ).scalars()
        )
        if not ids:
            return
        refund_ids = list(
            self.conn.execute(
                select(transactions.c.id).where(transactions.c.original_id.in_(ids))
            ).scalars()
        )
        all_ids = ids + refund_ids
        from .tables import webhook_attempts  # local: only reset needs it

        event_ids = select(webhook_events.c.id).where(webhook_events.c.transaction_id.in_(all_ids))
        self.conn.execute(webhook_attempts.delete().where(webhook_attempts.c.event_id.in_(event_ids)))
        self.conn.execute(webhook_events.delete().where(webhook_events.c.transaction_id.in_(all_ids)))
        from .tables import events  # local, as above
        self.conn.execute(events.delete().where(
            events.c.merchant_id == caller.merchant_id, events.c.mode == Mode.SANDBOX.value,
            events.c.tx_no.in_(select(transactions.c.tx_no).where(transactions.c.id.in_(all_ids)))))
        self.conn.execute(
            idempotency_keys.update()
            .where(idempotency_keys.c.transaction_id.in_(all_ids))
            .values(transaction_id=None)
        )
        self.conn.execute(status_history.delete().where(status_history.c.transaction_id.in_(all_ids)))
        # Refund requests of the test payments go with them (their holds are on the rows deleted).
        self.conn.execute(approval_requests.delete().where(approval_requests.c.original_id.in_(ids)))
        self.conn.execute(transaction_notes.delete().where(transaction_notes.c.transaction_id.in_(all_ids)))
        # Disputes of the test payments go with them (a sandbox Chargeback opens one).
        dispute_ids = select(disputes.c.id).where(disputes.c.payment_id.in_(ids))
        self.conn.execute(dispute_history.delete().where(dispute_history.c.dispute_id.in_(dispute_ids)))
        self.conn.execute(disputes.delete().where(disputes.c.payment_id.in_(ids)))
        # A settlement line that matched a test transaction has it no more: unknown to Paydesk
        # until the next sandbox settlement run matches it to the one installed anew (its txNo).
        self.conn.execute(settlement_lines.update().where(settlement_lines.c.transaction_id.in_(all_ids))
                          .values(transaction_id=None, match_result=LineOutcome.UNKNOWN_TO_PAYDESK.value))
        self.conn.execute(transactions.delete().where(transactions.c.id.in_(refund_ids)))
        self.conn.execute(transactions.delete().where(transactions.c.id.in_(ids)))
