"""One customer's transactions, totals, refunds and declines, by customerReference or by e-mail,
scoped to the caller's merchant and mode (the dashboard's customer page)."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import Connection, case, func, select

from app.payments.model import DECLINE_STATUSES, EXPIRED, Caller, Kind, Status
from app.payments.money import from_minor

from . import listing
from .listing import Cursor, TransactionFilter, TransactionPage, TransactionRow, list_transactions
from .scope import scoped_to_mode
from .tables import transactions

# A payment whose money was taken: its refunds and lost disputes are counted against it.
TAKEN = (Status.CAPTURED, Status.REFUNDED, Status.CHARGEBACK)
DECLINES = tuple(sorted(DECLINE_STATUSES))  # the model's, in one order (a list filter takes a tuple)
DECLINES_SHOWN = 20
REFUNDS_SHOWN = 50


@dataclass(frozen=True)
class CustomerKey:
    """Who the page is about: the merchant's customerReference, or an e-mail address (any case)."""

    reference: str | None = None
    email: str | None = None

    def filter(self, **narrower) -> TransactionFilter:
        """The list filter of this customer's rows (migration 0030's indexes serve both)."""
        return TransactionFilter(customer_reference=self.reference,
                                 customer_email=None if self.reference else self.email, **narrower)

    def conditions(self) -> list:
        """SQL conditions on transactions selecting the customer's rows (with the caller's scope)."""
        return self.filter().conditions()


@dataclass(frozen=True)
class CustomerTotals:
    """One currency's sums of the customer's payments: taken, refunded and what is left."""

    currency: str
    captured: Decimal  # payments Captured, Refunded or charged back
    refunded: Decimal  # what their Captured refunds returned
    disputed: Decimal  # what lost or accepted disputes took back
    payments: int
    declines: int  # declined or failed, but not expired: as the Overview counts them
    expired: int  # checkouts the customer never finished (DeclineReason Transaction Expired)

    @property
    def net(self) -> Decimal:
        """What the merchant kept of the customer's payments."""
        return self.captured - self.refunded - self.disputed


def customer_page(conn: Connection, caller: Caller, key: CustomerKey, *,
                  older_than: Cursor | None = None, newer_than: Cursor | None = None) -> TransactionPage:
    """The customer's transactions, newest first, a keyset page at a time (as the list pages)."""
    return list_transactions(conn, caller, key.filter(), older_than=older_than,
                             newer_than=None if older_than else newer_than, limit=listing.PAGE_SIZE)


def customer_totals(conn: Connection, caller: Caller, key: CustomerKey) -> list[CustomerTotals]:
    """The customer's payment totals per currency, in one read of the customer's rows."""
    columns = transactions.c
    is_payment = columns.kind == Kind.PAYMENT.value
    taken = is_payment & columns.status.in_([s.value for s in TAKEN])
    not_taken = is_payment & columns.status.in_([s.value for s in DECLINES])
    ran_out = func.coalesce(columns.decline_reason, "") == EXPIRED

    def summed(condition, column):
        return func.coalesce(func.sum(case((condition, column), else_=0)), 0)

    rows = conn.execute(
        select(columns.currency,
               summed(taken, columns.amount_minor).label("captured"),
               summed(taken, columns.refund_captured_minor).label("refunded"),
               summed(taken, columns.dispute_lost_minor).label("disputed"),
               func.count(case((is_payment, 1))).label("payments"),
               func.count(case((not_taken & ~ran_out, 1))).label("declines"),
               func.count(case((not_taken & ran_out, 1))).label("expired"))
        .where(*scoped_to_mode(transactions, caller), *key.conditions())
        .group_by(columns.currency).order_by(columns.currency))
    return [CustomerTotals(row.currency, from_minor(row.captured, row.currency),
                           from_minor(row.refunded, row.currency), from_minor(row.disputed, row.currency),
                           row.payments, row.declines, row.expired) for row in rows]


def customer_declines(conn: Connection, caller: Caller, key: CustomerKey,
                      limit: int = DECLINES_SHOWN) -> list[TransactionRow]:
    """The customer's latest declined and failed payments, newest first."""
    flt = key.filter(kind=Kind.PAYMENT, statuses=DECLINES)
    return list_transactions(conn, caller, flt, limit=limit).rows


@dataclass(frozen=True)
class CustomerRefund:
    """A refund of one of the customer's payments."""

    tx_no: str
    original_tx_no: str
    status: Status
    amount: Decimal
    currency: str
    reason: str | None
    created_by: str
    created_at: object


def customer_refunds(conn: Connection, caller: Caller, key: CustomerKey,
                     limit: int = REFUNDS_SHOWN) -> list[CustomerRefund]:
    """The refunds of the customer's payments, newest first (refunds carry no billing: they are
    found through their payments, by ix_transactions_original)."""
    originals = transactions.alias("customer_payments")
    refunds = transactions.alias("customer_refunds")
    payments = select(transactions.c.id).where(*scoped_to_mode(transactions, caller), *key.conditions(),
                                               transactions.c.kind == Kind.PAYMENT.value)
    rows = conn.execute(
        select(refunds.c.tx_no, originals.c.tx_no.label("original_tx_no"), refunds.c.status,
               refunds.c.amount_minor, refunds.c.currency, refunds.c.udf1, refunds.c.created_by,
               refunds.c.created_at)
        .join(originals, originals.c.id == refunds.c.original_id)
        .where(refunds.c.original_id.in_(payments), refunds.c.merchant_id == caller.merchant_id,
               refunds.c.mode == caller.mode.value)
        .order_by(refunds.c.created_at.desc(), refunds.c.id.desc()).limit(limit))
    return [CustomerRefund(row.tx_no, row.original_tx_no, Status(row.status),
                           from_minor(row.amount_minor, row.currency), row.currency, row.udf1,
                           row.created_by, row.created_at) for row in rows]
