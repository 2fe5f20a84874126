"""The provider calls the workers owe: Pending transactions whose provider check is due, each with
the provider account it goes to, and the wake-up a worker listens for on PostgreSQL.

A request that hands a call to the workers commits its transaction with `provider_check_at` due
now; migration 0016's trigger then sends NOTIFY on CHANNEL at commit. A worker takes a call
with claim_provider_checks (TransactionRepository), which pushes the check past the call's time,
so two workers never make the same call at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, exists, or_, select, update

from app.payments.model import Status

from .tables import payment_methods, transactions

# The NOTIFY channel of migrations 0016 and 0017; a notification's payload is wake_key() of the
# row that came due ("merchant_id mode method_id").
CHANNEL = "paydesk_provider_calls"
# The key of calls to a provider account is ACCOUNT_PREFIX + its id; of calls whose method has
# no provider account (the simulator's), SIMULATOR.
ACCOUNT_PREFIX = "account:"
SIMULATOR = "simulator"

# A transaction's method row: the merchant's method of that id, for its mode or for every mode.
_METHOD_OF_TRANSACTION = and_(
    payment_methods.c.merchant_id == transactions.c.merchant_id,
    payment_methods.c.method_id == transactions.c.payment_method,
    or_(payment_methods.c.mode.is_(None), payment_methods.c.mode == transactions.c.mode),
)


def wake_key(merchant_id: int, mode: str, method_id: str) -> str:
    """What migration 0017's NOTIFY says of a row that came due: its merchant, mode and method,
    which name the provider account its call goes to."""
    return f"{merchant_id} {mode} {method_id}"


@dataclass(frozen=True)
class DueCall:
    """A transaction whose provider call is due, and the provider account the call goes to."""

    tx_id: int
    account: str  # "account:<id>" of provider_accounts, or SIMULATOR
    wake_key: str = ""  # wake_key() of the transaction


def due_calls(conn: Connection, now: datetime, limit: int, *, merchant_id: int | None = None,
              skip: frozenset[str] = frozenset()) -> list[DueCall]:
    """The calls due at `now`, oldest first (only `merchant_id`'s when given), leaving out the
    calls to the accounts in `skip` (keys as DueCall.account: those with no call to spare)."""
    query = (
        select(transactions.c.id, payment_methods.c.provider_account_id, transactions.c.merchant_id,
               transactions.c.mode, transactions.c.payment_method)
        .select_from(transactions.outerjoin(payment_methods, _METHOD_OF_TRANSACTION))
        .where(transactions.c.provider_check_at <= now)
        .order_by(transactions.c.provider_check_at)
        .limit(limit)
    )
    if merchant_id is not None:
        query = query.where(transactions.c.merchant_id == merchant_id)
    skipped = [int(key.removeprefix(ACCOUNT_PREFIX)) for key in skip if key.startswith(ACCOUNT_PREFIX)]
    if skipped:
        query = query.where(or_(payment_methods.c.provider_account_id.is_(None),
                                payment_methods.c.provider_account_id.not_in(skipped)))
    if SIMULATOR in skip:
        query = query.where(payment_methods.c.provider_account_id.is_not(None))
    return [DueCall(tx_id, f"{ACCOUNT_PREFIX}{account}" if account is not None else SIMULATOR,
                    wake_key(merchant, mode, method))
            for tx_id, account, merchant, mode, method in conn.execute(query)]


def defer_account_calls(conn: Connection, account: str, now: datetime, until: datetime,
                        message: str) -> int:
    """Put off every call due now to a provider account (its circuit breaker is open) until
    `until`, each transaction left Pending with `message` as its ProviderMessage; how many.
    One statement, so a paused account's waiting calls cost nothing until it is tried again."""
    account_id = int(account.removeprefix(ACCOUNT_PREFIX))
    of_account = exists().where(_METHOD_OF_TRANSACTION, payment_methods.c.provider_account_id == account_id)
    result = conn.execute(
        update(transactions)
        .where(transactions.c.provider_check_at <= now, transactions.c.status == Status.PENDING.value,
               of_account)
        .values(provider_check_at=until, provider_message=message[:500], updated_at=now))
    return result.rowcount
