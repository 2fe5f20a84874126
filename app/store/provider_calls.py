"""The provider calls the workers owe: Pending transactions whose provider check is due, each with
the provider account it goes to, and the wake-up a worker listens for on PostgreSQL.

A request that hands a call to the workers commits its transaction with `provider_check_at` due
now; migration 0016's trigger then sends NOTIFY on CHANNEL at commit. A worker takes a call
with claim_provider_check (TransactionRepository), which pushes the check past the call's time,
so two workers never make the same call at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, or_, select

from .tables import payment_methods, transactions

# The NOTIFY channel of migration 0016.
CHANNEL = "paydesk_provider_calls"
# The key of calls to a provider account is ACCOUNT_PREFIX + its id; of calls whose method has
# no provider account (the simulator's), SIMULATOR.
ACCOUNT_PREFIX = "account:"
SIMULATOR = "simulator"


@dataclass(frozen=True)
class DueCall:
    """A transaction whose provider call is due, and the provider account the call goes to."""

    tx_id: int
    account: str  # "account:<id>" of provider_accounts, or SIMULATOR


def due_calls(conn: Connection, now: datetime, limit: int, *,
              merchant_id: int | None = None) -> list[DueCall]:
    """The calls due at `now`, oldest first (only `merchant_id`'s when given)."""
    method = and_(
        payment_methods.c.merchant_id == transactions.c.merchant_id,
        payment_methods.c.method_id == transactions.c.payment_method,
        or_(payment_methods.c.mode.is_(None), payment_methods.c.mode == transactions.c.mode),
    )
    query = (
        select(transactions.c.id, payment_methods.c.provider_account_id)
        .select_from(transactions.outerjoin(payment_methods, method))
        .where(transactions.c.provider_check_at <= now)
        .order_by(transactions.c.provider_check_at)
        .limit(limit)
    )
    if merchant_id is not None:
        query = query.where(transactions.c.merchant_id == merchant_id)
    return [DueCall(tx_id, f"{ACCOUNT_PREFIX}{account}" if account is not None else SIMULATOR)
            for tx_id, account in conn.execute(query)]

