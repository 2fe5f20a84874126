"""The refund ledger's check: the refund totals on every payment's row against its refund rows
(and the amount it holds for refund requests awaiting approval against those requests)."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, and_, case, func, or_, select

from app.payments.model import ACTIVE_REFUND_STATUSES, Kind, Status

from .tables import approval_requests, transactions

refunds = transactions.alias("refunds")
payments = transactions.alias("payments")

# Each payment's refunds added up: what the Pending and Captured ones hold, what the Captured
# ones returned (in minor units, as the row keeps them).
_REFUND_SUMS = (
    select(
        refunds.c.original_id,
        func.sum(case((refunds.c.status.in_([s.value for s in ACTIVE_REFUND_STATUSES]),
                       refunds.c.amount_minor), else_=0)).label("reserved"),
        func.sum(case((refunds.c.status == Status.CAPTURED.value, refunds.c.amount_minor),
                      else_=0)).label("captured"),
    )
    .where(refunds.c.kind == Kind.REFUND.value)
    .group_by(refunds.c.original_id)
    .subquery("refund_sums")
)
# What each payment's refund requests awaiting approval hold.
_HELD_SUMS = (
    select(approval_requests.c.original_id, func.sum(approval_requests.c.amount_minor).label("held"))
    .where(approval_requests.c.kind == "refund", approval_requests.c.state == "awaiting")
    .group_by(approval_requests.c.original_id)
    .subquery("held_sums")
)
_HELD_BY_REQUESTS = func.coalesce(_HELD_SUMS.c.held, 0)
_RESERVED_BY_REFUNDS = func.coalesce(_REFUND_SUMS.c.reserved, 0)
_CAPTURED_BY_REFUNDS = func.coalesce(_REFUND_SUMS.c.captured, 0)
_MISMATCHES = (
    select(payments.c.merchant_id, payments.c.mode, payments.c.tx_no, payments.c.currency,
           payments.c.refund_reserved_minor, _RESERVED_BY_REFUNDS.label("reserved_by_refunds"),
           payments.c.refund_captured_minor, _CAPTURED_BY_REFUNDS.label("captured_by_refunds"),
           payments.c.refund_held_minor, _HELD_BY_REQUESTS.label("held_by_requests"))
    .select_from(payments.outerjoin(_REFUND_SUMS, _REFUND_SUMS.c.original_id == payments.c.id)
                 .outerjoin(_HELD_SUMS, _HELD_SUMS.c.original_id == payments.c.id))
    .where(and_(payments.c.kind == Kind.PAYMENT.value,
                or_(payments.c.refund_reserved_minor != _RESERVED_BY_REFUNDS,
                    payments.c.refund_captured_minor != _CAPTURED_BY_REFUNDS,
                    payments.c.refund_held_minor != _HELD_BY_REQUESTS)))
    .order_by(payments.c.id)
)
_PAYMENTS = select(func.count()).select_from(transactions).where(
    transactions.c.kind == Kind.PAYMENT.value)


@dataclass(frozen=True)
class Mismatch:
    """A payment whose refund totals differ from the sums of its refund rows (minor units)."""

    merchant_id: int
    mode: str
    tx_no: str
    currency: str
    reserved_on_row: int
    reserved_by_refunds: int
    captured_on_row: int
    captured_by_refunds: int
    held_on_row: int = 0
    held_by_requests: int = 0


@dataclass(frozen=True)
class LedgerCheck:
    """What `flask ledger verify` found: how many payments it checked, and which do not add up."""

    payments: int
    mismatches: list[Mismatch]


def check_refund_totals(conn: Connection) -> LedgerCheck:
    """Compare every payment's refund totals with the sums of its refunds, across all merchants.

    The comparison is one statement, so it sees one snapshot: refunds committed while it runs
    cannot show as mismatches (the totals move in the same transactions as the refund rows).
    """
    mismatches = [Mismatch(*row) for row in conn.execute(_MISMATCHES)]
    return LedgerCheck(payments=conn.execute(_PAYMENTS).scalar_one(), mismatches=mismatches)
