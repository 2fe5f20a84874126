"""Repositories over one connection, and the unit of work that commits them together.

A merchant's data is read and written through the caller's scope (its merchant and mode): the
methods take the `Caller` and cannot be asked without it. The few reads by database id that the
worker makes, which have no caller, say so in their names.
"""
from __future__ import annotations

import json
import threading
import weakref
from dataclasses import fields, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from psycopg.pq import TransactionStatus
from sqlalchemy import (
    BigInteger,
    Connection,
    Engine,
    RowMapping,
    bindparam,
    case,
    cast,
    event,
    exists,
    insert,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from app.payments.events import event_payload, event_type, new_webhook_id
from app.payments.model import (
    DECLINE_STATUSES,
    Caller,
    Kind,
    Mode,
    NotHeld,
    PaymentMethod,
    ReferenceTaken,
    Status,
    StoredStatus,
    Transaction,
)
from app.payments.money import (
    currencies_by_minor_digits,
    decimal_places,
    from_minor,
    to_minor,
    to_units,
)
from app.payments.sandbox import FIXTURE_CREATED_BY
from app.util import dumps, utcnow

from .approvals import ApprovalRepository
from .db import note_commit_sent
from .encryption import SecretBox
from .method_cache import MethodCache
from .notes import NoteRepository
from .provider_calls import due_calls
from .writes import Add, Returned, Writes

_SYNCHRONOUS_COMMIT_OFF = text("SET LOCAL synchronous_commit TO OFF")
from .tables import (
    approval_requests,
    audit_log,
    idempotency_keys,
    merchants,
    payment_methods,
    status_history,
    transaction_notes,
    transactions,
    webhook_events,
)

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
        refund_reserved=from_minor(m["refund_reserved_minor"], m["currency"]),
        refund_captured=from_minor(m["refund_captured_minor"], m["currency"]),
        refund_held=from_minor(m["refund_held_minor"], m["currency"]),
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
_STATUS_BY_NUMBER = select(
    *(transactions.c[name] for name in ("tx_no", "status", "amount_minor", "currency", "reference",
                                        "created_at", "decline_reason", "provider_transaction_id",
                                        "provider_status", "provider_message", "success_url",
                                        "pending_url", "failure_url", "udf1", "udf2", "udf3"))
).where(
    transactions.c.merchant_id == bindparam("merchant_id"),
    transactions.c.mode == bindparam("mode"),
    transactions.c.tx_no == bindparam("tx_no"),
)
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


# A refund's amount in the minor units of its original's currency, chosen on the row by the
# currency's digits. It is NULL where the amount has more decimals than the currency, so no
# row matches and the refund rules, read afterwards, name the field error in their order.
_CURRENCY_DIGITS = currencies_by_minor_digits()
_COMMON_DIGITS = max(_CURRENCY_DIGITS, key=lambda digits: len(_CURRENCY_DIGITS[digits]))
def _currency_in(codes) -> Any:
    """currency IN ('BIF', 'CLP', ...) with the ISO codes written into the SQL: the statement's
    text stays the same from call to call: SQLAlchemy's compiled cache and psycopg's prepared
    statements keep it (bound lists are expanded into new text on every call)."""
    assert all(len(code) == 3 and code.isascii() and code.isalpha() and code.isupper()
               for code in codes)  # nosec B101 # ISO 4217 codes from our own table
    return transactions.c.currency.in_([literal_column(f"'{code}'") for code in sorted(codes)])


_REFUND_MINOR = case(
    *((_currency_in(codes), cast(bindparam(f"refund_minor_{digits}"), BigInteger))
      for digits, codes in _CURRENCY_DIGITS.items() if digits != _COMMON_DIGITS),
    else_=cast(bindparam(f"refund_minor_{_COMMON_DIGITS}"), BigInteger),
)
# The payment's method refuses partial refunds (one no longer configured allows them, as
# app.payments.refunds says).
_PARTIAL_REFUNDS_REFUSED = exists().where(
    payment_methods.c.merchant_id == transactions.c.merchant_id,
    payment_methods.c.method_id == transactions.c.payment_method,
    payment_methods.c.mode.is_(None) | (payment_methods.c.mode == transactions.c.mode),
    ~payment_methods.c.partial_refunds,
)


def _refund_guard(total) -> Any:
    """The refund guard, what keeps concurrent refunds from over-refunding: an UPDATE that adds a
    refund's amount (_REFUND_MINOR) to `total` on the caller's payment's row (what its refunds
    reserve, or what its requests awaiting approval hold) only when the refund rules of
    app.payments.model.check_refund allow the refund on the row as the database has it once it
    is locked. What refunds reserve and requests hold together never pass the payment's amount.
    It returns the row as it leaves it, and the amount in the payment's minor units
    (`refund_minor`); refused, it changes and returns nothing (the rules say why, on the locked
    row). tests/store/test_refund_guard_property.py drives it, the rules and the service fakes
    with the same cases. The bound values' names are not column names: update() keeps those for
    its SET clause."""
    return (
        update(transactions)
        .where(
            transactions.c.merchant_id == bindparam("caller_merchant_id"),
            transactions.c.mode == bindparam("caller_mode"),
            transactions.c.tx_no == bindparam("original_tx_no"),
            transactions.c.kind == Kind.PAYMENT.value,
            transactions.c.status == Status.CAPTURED.value,
            transactions.c.amount_minor - transactions.c.refund_reserved_minor
            - transactions.c.refund_held_minor >= _REFUND_MINOR,
            (transactions.c.amount_minor == _REFUND_MINOR) | ~_PARTIAL_REFUNDS_REFUSED,
        )
        .values({total: total + _REFUND_MINOR})
        .returning(*transactions.c, _REFUND_MINOR.label("refund_minor"))
    )


_RESERVE_REFUND = _refund_guard(transactions.c.refund_reserved_minor)
_HOLD_REFUND = _refund_guard(transactions.c.refund_held_minor)
# An approved request's hold becomes a refund's reservation, while the payment is still Captured.
_HELD_TO_RESERVED = (
    update(transactions)
    .where(transactions.c.id == bindparam("payment_id"),
           transactions.c.kind == Kind.PAYMENT.value,
           transactions.c.status == Status.CAPTURED.value,
           transactions.c.refund_held_minor >= bindparam("held_minor"))
    .values(refund_held_minor=transactions.c.refund_held_minor - bindparam("held_minor"),
            refund_reserved_minor=transactions.c.refund_reserved_minor + bindparam("held_minor"))
    .returning(*transactions.c)
)
_RELEASE_HOLD = (
    update(transactions)
    .where(transactions.c.id == bindparam("payment_id"))
    .values(refund_held_minor=transactions.c.refund_held_minor - bindparam("held_minor"))
)
# What a refund's row and its audit row take of a payment not read yet: what the refund guard
# sent with them returns.
_GUARDED_REFUND_MINOR = Returned("refund_minor")


def _reserve_params(caller: Caller, tx_no: str, amount: Decimal) -> dict:
    return {"caller_merchant_id": caller.merchant_id, "caller_mode": caller.mode.value,
            "original_tx_no": tx_no, **_refund_minor_params(amount)}


def _refund_minor_params(amount: Decimal) -> dict[str, int | None]:
    """The values of _REFUND_MINOR: the amount in units of each currency group's digits, None
    where it has more decimals than they allow."""
    places = decimal_places(amount)
    return {f"refund_minor_{digits}": to_units(amount, digits) if places <= digits else None
            for digits in _CURRENCY_DIGITS}


def _minor_units(writes: Writes, amount: Decimal, currency) -> int | Returned:
    """The amount in the currency's minor units. In the currency of a payment that the refund
    guard sent with the unit's writes returns (not known before: reserve_refund_with_writes),
    the guard's own conversion of its refund's amount, the one amount such a unit writes in it
    (the refund's row and its audit row)."""
    if currency.__class__ is not Returned:
        return to_minor(amount, currency)
    guard = writes.condition
    if guard is None or guard[0] is not _RESERVE_REFUND or any(
            guard[1][name] != value for name, value in _refund_minor_params(amount).items()):
        raise ValueError(f"{amount} in a payment's currency not known yet: only its refund's amount")
    return _GUARDED_REFUND_MINOR


# A method of the merchant offered in the mode: its own (a provider account's) or both modes'.
_METHOD_IN_MODE = (payment_methods.c.mode.is_(None)) | (payment_methods.c.mode == bindparam("mode"))
_METHOD = select(payment_methods).where(
    payment_methods.c.merchant_id == bindparam("merchant_id"),
    payment_methods.c.method_id == bindparam("method_id"),
    _METHOD_IN_MODE,
)
_ACTIVE_METHOD = _METHOD.where(payment_methods.c.active)


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
        if not found:
            return None
        tx_no, status, amount_minor, currency, *rest = found[0].values()
        return StoredStatus(tx_no, Status(status), from_minor(amount_minor, currency), currency, *rest)

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

    def add(self, tx: Transaction) -> Transaction:
        """Insert a new transaction with the unit's writes; tx.id is set when they are sent.
        A duplicate reference raises ReferenceTaken then (at the latest, from commit())."""
        self.writes.insert(transactions, dict(
            merchant_id=tx.merchant_id,
            mode=tx.mode.value,
            tx_no=tx.tx_no,
            kind=tx.kind.value,
            status=tx.status.value,
            amount_minor=_minor_units(self.writes, tx.amount, tx.currency),
            currency=tx.currency,
            reference=tx.reference,
            statement_descriptor=tx.statement_descriptor,
            callback_url=tx.callback_url,
            payment_method=tx.payment_method,
            billing=json.dumps(tx.billing) if tx.billing else None,
            customer_email=tx.customer_email,
            customer_name=tx.customer_name,
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

    def reserve_refund(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction | None:
        """Reserve a refund's amount on the caller's payment with this number with the refund
        guard, now; the payment as it now stands (its row locked until the unit ends), or None
        when a rule refuses it (or there is no such payment)."""
        row = self.conn.execute(_RESERVE_REFUND, _reserve_params(caller, tx_no, amount)).mappings().first()
        return _row_to_transaction(row) if row else None

    def hold_refund(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction | None:
        """Hold a refund request's amount on the caller's payment while it awaits approval, with
        the refund guard (reserve_refund's, adding to what requests hold), now; the payment as it
        now stands, or None when refused."""
        row = self.conn.execute(_HOLD_REFUND, _reserve_params(caller, tx_no, amount)).mappings().first()
        return _row_to_transaction(row) if row else None

    def reserve_held_refund(self, payment_id: int, held_minor: int) -> Transaction | None:
        """Move an approved request's hold into the payment's reserved total; None (nothing
        changed) when the payment is no longer Captured."""
        row = self.conn.execute(_HELD_TO_RESERVED, {"payment_id": payment_id,
                                                    "held_minor": held_minor}).mappings().first()
        return _row_to_transaction(row) if row else None

    def release_held_refund(self, payment_id: int, held_minor: int) -> None:
        """Give back what a rejected, expired or failed request held on its payment."""
        self.conn.execute(_RELEASE_HOLD, {"payment_id": payment_id, "held_minor": held_minor})

    def reserve_refund_with_writes(self, caller: Caller, tx_no: str, amount: Decimal) -> Transaction:
        """reserve_refund(), sent with the unit's writes and first, without reading the payment
        before: when the guard refuses, none of the writes are made and commit() raises NotHeld.

        Returns the payment as the guard will return it. Until the writes are sent, its fields
        other than its scope and number stand for its row's columns (Returned): a refund made
        from it (app.payments.services.pending_refund) is written with its payment's currency,
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

        self.writes.only_if(_RESERVE_REFUND, _reserve_params(caller, tx_no, amount), then=returned)
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
        """Hand a Pending transaction's provider call to the workers, due now (announced at
        commit on PostgreSQL, migration 0016)."""
        self.conn.execute(update(transactions)
                          .where(transactions.c.id == tx_id, transactions.c.status == Status.PENDING.value)
                          .values(provider_check_at=now))

    def claim_provider_checks(self, tx_ids: list[int], now: datetime, until: datetime) -> set[int]:
        """Take due provider checks for one worker in one statement: each still due is pushed to
        `until`; the ids taken (another worker took the others)."""
        if not tx_ids:
            return set()
        taken = self.conn.execute(
            update(transactions)
            .where(transactions.c.id.in_(tx_ids), transactions.c.provider_check_at <= now)
            .values(provider_check_at=until)
            .returning(transactions.c.id)
        )
        return set(taken.scalars())

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
        self.conn.execute(
            idempotency_keys.update()
            .where(idempotency_keys.c.transaction_id.in_(all_ids))
            .values(transaction_id=None)
        )
        self.conn.execute(status_history.delete().where(status_history.c.transaction_id.in_(all_ids)))
        # Refund requests of the test payments go with them (their holds are on the rows deleted).
        self.conn.execute(approval_requests.delete().where(approval_requests.c.original_id.in_(ids)))
        self.conn.execute(transaction_notes.delete().where(transaction_notes.c.transaction_id.in_(all_ids)))
        self.conn.execute(transactions.delete().where(transactions.c.id.in_(refund_ids)))
        self.conn.execute(transactions.delete().where(transactions.c.id.in_(ids)))


class MethodRepository:
    """A merchant's payment methods (new transactions' look-ups through the process's cache)."""

    def __init__(self, uow: "UnitOfWork", cache: MethodCache | None = None):
        self._uow = uow
        self.cache = cache or MethodCache(0)

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def get(self, caller: Caller, method_id: str) -> PaymentMethod | None:
        """The caller's method with this identifier that takes new transactions, or None."""
        def load() -> PaymentMethod | None:
            row = self.conn.execute(_ACTIVE_METHOD, {"merchant_id": caller.merchant_id,
                                                     "mode": caller.mode.value,
                                                     "method_id": method_id}).mappings().first()
            return _row_to_method(row) if row else None

        return self.cache.get((caller.merchant_id, caller.mode.value, method_id), load)

    def forget_merchant(self, merchant_id: int) -> None:
        """This process changed the merchant's methods: its cache forgets them now."""
        self.cache.forget_merchant(merchant_id)

    def of_transaction(self, tx: Transaction) -> PaymentMethod | None:
        """The method a stored transaction was made with, even if its provider account was
        disconnected (None when it is no longer configured at all)."""
        def load() -> PaymentMethod | None:
            row = self.conn.execute(_METHOD, {"merchant_id": tx.merchant_id, "mode": tx.mode.value,
                                              "method_id": tx.payment_method}).mappings().first()
            return _row_to_method(row) if row else None

        return self.cache.get((tx.merchant_id, tx.mode.value, tx.payment_method, "configured"), load)

    def list(self, caller: Caller) -> list[PaymentMethod]:
        """The caller's methods that take new transactions, card methods first."""
        rows = self.conn.execute(
            select(payment_methods)
            .where(payment_methods.c.merchant_id == caller.merchant_id, payment_methods.c.active,
                   (payment_methods.c.mode.is_(None)) | (payment_methods.c.mode == caller.mode.value))
            .order_by(payment_methods.c.kind, payment_methods.c.method_id)
        ).mappings()
        return [_row_to_method(r) for r in rows]

    def add(self, merchant_id: int, method: PaymentMethod) -> None:
        """Give a merchant being created a method (there is no caller before the merchant exists)."""
        self.conn.execute(
            insert(payment_methods).values(
                merchant_id=merchant_id,
                method_id=method.method_id,
                name=method.name,
                kind=method.kind,
                currencies=json.dumps(method.currencies),
                countries=json.dumps(method.countries),
                bank_list=method.bank_list,
                account_rule=method.account_rule,
                partial_refunds=method.partial_refunds,
                provider=method.provider,
            )
        )


def _row_to_method(m) -> PaymentMethod:
    """The PaymentMethod of a row of payment_methods' columns, as a mapping (`Result.mappings()`)."""
    return PaymentMethod(
        method_id=m["method_id"],
        name=m["name"],
        kind=m["kind"],
        currencies=json.loads(m["currencies"]),
        countries=json.loads(m["countries"]),
        bank_list=m["bank_list"],
        account_rule=m["account_rule"],
        partial_refunds=bool(m["partial_refunds"]),
        provider=m["provider"],
        provider_account_id=m["provider_account_id"],
        active=bool(m["active"]),
    )


class MerchantRepository:
    """What the services read of a merchant's own settings."""

    def __init__(self, uow: "UnitOfWork"):
        self._uow = uow

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def default_callback_url(self, caller: Caller) -> str | None:
        """Where the caller's merchant's own notifications go by default (its Paydesk inbox)."""
        return self.conn.execute(
            select(merchants.c.default_callback_url).where(merchants.c.id == caller.merchant_id)
        ).scalar()


class UnitOfWork:
    """One database transaction: `with UnitOfWork(engine) as uow: ...; uow.commit()`.

    Leaving the block without commit() rolls back. `write=True` takes SQLite's
    write lock at BEGIN (PostgreSQL locks rows with FOR UPDATE instead); a read
    unit (`write=False`) runs in autocommit on PostgreSQL.

    Inserts and updates that nothing reads back (new transactions, status changes, history,
    audit, outbox) wait in `writes` and are sent together (app.store.writes): at commit(), or
    before the unit's next statement. A unit made of such writes alone is one statement.
    """

    def __init__(self, engine: Engine, *, write: bool = True, method_cache: MethodCache | None = None,
                 box: SecretBox | None = None):
        self.engine = engine
        self.write = write
        self.method_cache = method_cache
        self.box = box  # seals and opens secrets at rest (webhook signing secrets); None: none here

    def __enter__(self) -> "UnitOfWork":
        self._conn: Connection | None = None
        self._tx = None  # SQLAlchemy's transaction (none for a read unit on PostgreSQL)
        self._autocommit = None  # the driver connection a read unit put in autocommit
        self.writes = Writes()
        self._relax = False  # relax_durability() was asked for
        self._relaxed = False  # ... and the database was told
        self._sending = False
        self.transactions = TransactionRepository(self)
        self.methods = MethodRepository(self, self.method_cache)
        self.merchants = MerchantRepository(self)
        self.approvals = ApprovalRepository(self)
        self.notes = NoteRepository(self)
        return self

    @property
    def conn(self) -> Connection:
        """The unit's connection, taken from the pool when first needed (a unit whose reads
        the method cache answers takes none)."""
        if self._conn is None:
            conn = self.engine.connect()
            if self.write:
                _send_writes_before_statements(self.engine)
                _WRITE_UNITS[conn] = self
                if not self.is_postgres:
                    conn = conn.execution_options(write=True)  # BEGIN IMMEDIATE (app.store.db)
                self._tx = conn.begin()
            elif self.is_postgres:
                # Reads see committed data statement by statement; without BEGIN and
                # ROLLBACK they cost one round trip each instead of three. The driver's own
                # switch, set back before the connection returns to the pool: SQLAlchemy's
                # isolation_level option costs more than this unit's statement.
                self._autocommit = conn.connection.driver_connection
                self._autocommit.autocommit = True
            else:
                self._tx = conn.begin()
            self._conn = conn
        return self._conn

    def __exit__(self, *exc) -> None:
        if self._conn is None:
            return
        try:
            if self._tx is not None and self._tx.is_active:
                self._tx.rollback()
        finally:
            if self._autocommit is not None:
                self._leave_autocommit(self._autocommit)
            _WRITE_UNITS.pop(self._conn, None)  # (the unit holds its connection: never collected)
            self._conn.close()

    def _leave_autocommit(self, dbapi) -> None:
        """The unit's driver connection out of autocommit, or thrown away (a broken one): never
        pooled in autocommit."""
        try:
            dbapi.autocommit = False
        except Exception:  # noqa: BLE001 - a broken connection: discarded, not returned
            self._conn.invalidate()

    def commit(self) -> None:
        """Make everything done in this unit permanent."""
        if self._conn is None and not self.writes.waiting:
            return  # nothing was read or written
        if self.writes.waiting and self.is_postgres and self._nothing_sent():
            # The writes are the whole transaction: one statement in autocommit, no BEGIN or
            # COMMIT (SQLAlchemy's commit below then finds no transaction open on the server).
            dbapi = self.conn.connection.driver_connection
            dbapi.autocommit = True
            try:
                note_commit_sent()  # from here on the writes may have taken effect
                self._send_writes()
            finally:
                self._leave_autocommit(dbapi)
        else:
            self._send_writes()
        if self._tx is not None:  # (a read unit on PostgreSQL commits each statement itself)
            self._tx.commit()

    def rows(self, statement, params: dict) -> list[RowMapping]:
        """The rows of a read, each a mapping of its columns in order (a write unit's queued
        writes go first, as before any statement: see before_statement)."""
        return self.conn.execute(statement, params).mappings().all()

    def _nothing_sent(self) -> bool:
        """No statement of this unit has gone to PostgreSQL yet (no BEGIN either)."""
        return self.conn.connection.driver_connection.info.transaction_status is TransactionStatus.IDLE

    def before_statement(self) -> None:
        """Whatever the next statement reads sees the queued writes and the unit's durability."""
        if self._sending:
            return
        if self.writes.waiting:
            self._send_writes()
        elif self._relax and not self._relaxed:
            self._sending = True
            try:
                self.conn.execute(_SYNCHRONOUS_COMMIT_OFF)
            finally:
                self._sending = False
            self._relaxed = True

    def _send_writes(self) -> None:
        new_references = [write.values["reference"] for write in self.writes.pending
                          if write.is_insert and write.table is transactions]
        relax = self._relax and not self._relaxed
        self._sending = True
        try:
            held = self.writes.send(self.conn, postgres=self.is_postgres, relax_durability=relax)
        except IntegrityError as error:
            if new_references and is_unique_violation(error):
                raise ReferenceTaken(new_references[0]) from error
            raise
        finally:
            self._sending = False
        if not held:
            raise NotHeld()
        self._relaxed = self._relaxed or relax

    def relax_durability(self) -> None:
        """Let this unit's commit return before the database has flushed it to disk.

        For work that is redone if a database server crash loses it (a provider's answer the
        worker asks for again, delivery bookkeeping): PostgreSQL's synchronous_commit off for
        this transaction only, set with the unit's next statement (by the statement that sends
        its writes, when that comes first). Other sessions see the commit at once, as always;
        the wait for the disk flush is what is saved. SQLite (embedded, synchronous=NORMAL in
        WAL mode) is left as it is.
        """
        self._relax = self.is_postgres

    @property
    def is_postgres(self) -> bool:
        """PostgreSQL (row locks, SKIP LOCKED) rather than SQLite."""
        return self.engine.dialect.name == "postgresql"

    def record_history(self, tx: Transaction, from_status: Status | None, source: str, note=None):
        """Append a status change to the transaction's history."""
        self.writes.insert(status_history, dict(
            transaction_id=self.writes.id_of(tx),
            from_status=from_status.value if from_status else None,
            to_status=tx.status.value,
            source=source,
            note=note,
            at=tx.updated_at,
        ))

    def enqueue_webhook(self, tx: Transaction, webhook_id: str | None = None) -> None:
        """Write the webhook event for tx's new status into the outbox, in this same transaction,
        under webhook_id (a new random one when none is given)."""
        if not tx.callback_url:
            return
        self.writes.insert(webhook_events, dict(
            merchant_id=tx.merchant_id,
            mode=tx.mode.value,
            transaction_id=self.writes.id_of(tx),
            webhook_id=webhook_id or new_webhook_id(),
            event_type=event_type(tx),
            url=tx.callback_url,
            payload=dumps(event_payload(tx)),
            state="pending",
            attempts=0,
            next_attempt_at=tx.updated_at,
            created_at=tx.updated_at,
        ))

    def link_idempotency_key(self, record_id: int, tx: Transaction) -> None:
        """Note on an Idempotency-Key's record the transaction its request created or moved."""
        self.writes.update(idempotency_keys, record_id, dict(transaction_id=self.writes.id_of(tx)))

    def audit(self, caller: Caller, action: str, target=None, amount=None, currency=None,
              detail=None, *, both_modes: bool = False) -> None:
        """Append to the caller's audit log: who did what, for how much, from where (`both_modes`
        for changes that belong to no mode, such as users)."""
        self.writes.insert(audit_log, dict(
            merchant_id=caller.merchant_id,
            mode=None if both_modes else caller.mode.value,
            actor=caller.actor,
            action=action,
            target=target,
            amount_minor=_minor_units(self.writes, amount, currency) if amount is not None else None,
            currency=currency,
            detail=json.dumps(detail) if detail else None,
            ip=caller.ip,
            at=utcnow(),
        ))


# The write unit each connection serves while the unit lasts, for the statement listener below
# (a dictionary rather than an execution option: setting one costs a write unit a third of its
# pool checkout). The unit removes itself when it ends.
_WRITE_UNITS: dict = {}
_ENGINES_WITH_UNITS: weakref.WeakSet = weakref.WeakSet()
_REGISTERING = threading.Lock()


def _send_writes_before_statements(engine: Engine) -> None:
    """Have every statement on a write unit's connection run the unit's before_statement first
    (one listener per engine: one per connection cost more than the statement's own Python)."""
    if engine in _ENGINES_WITH_UNITS:
        return
    with _REGISTERING:
        if engine in _ENGINES_WITH_UNITS:
            return

        @event.listens_for(engine, "before_execute")
        def _before(conn, _statement, _multiparams, _params, _execution_options):
            unit = _WRITE_UNITS.get(conn)
            if unit is not None:
                unit.before_statement()

        _ENGINES_WITH_UNITS.add(engine)


def is_unique_violation(error: IntegrityError) -> bool:
    """True when the IntegrityError is a unique-constraint violation."""
    text = str(error.orig).lower()
    return "unique" in text or "duplicate key" in text
