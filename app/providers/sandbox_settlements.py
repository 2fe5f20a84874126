"""The simulator's daily settlements of sandbox payments, so a merchant can try reconciliation
without a provider.

Every UTC day's simulator payments (Captured, or Refunded or charged back since), Captured
refunds and disputes lost or accepted (on the day they closed) in one currency make one
settlement, SIM-<YYYYMMDD>-<currency>, paid out the next day (its status "pending" until then,
"paid" from then on; a run after it updates it): each payment a line less SANDBOX_FEE (1.5% +
0.10), each refund and lost dispute a negative line without a fee (a dispute's line names its
payment, as providers' do). A dispute still open or won takes nothing. Running it again settles
the same days the same way (the store upserts by that id), plus what happened since.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from app.payments.deps import Deps
from app.payments.model import Caller, Kind
from app.payments.money import minor_digits
from app.payments.reconcile import SANDBOX_FEE, FetchedLine, FetchedSettlement, LineType
from app.store import settlements as store

PROVIDER = "simulator"
# How far back a run settles: a month of sandbox testing.
SETTLES_DAYS = 31
PAID_OUT_AFTER = timedelta(days=1)
# What each settled item is as a settlement line (a lost dispute's is "dispute").
_LINE_TYPES = {Kind.PAYMENT.value: LineType.PAYMENT, Kind.REFUND.value: LineType.REFUND, "dispute": LineType.DISPUTE}


def settle_sandbox(deps: Deps, caller: Caller, *, amount_differs_for: str | None = None) -> list[int]:
    """Store the caller's sandbox settlements (their ids, oldest day first).

    amount_differs_for: a txNo whose line is settled one unit of its currency short (1.00 EUR),
    so its outcome is amount_differs.
    """
    now = deps.clock()
    since = now - timedelta(days=SETTLES_DAYS)
    with deps.uow(write=False) as uow:
        settleable = store.sandbox_settleable(uow.conn, caller, since)
        lost = store.sandbox_lost_disputes(uow.conn, caller, since)
    days: dict[tuple, list[FetchedLine]] = defaultdict(list)
    for item in settleable + lost:
        digits = minor_digits(item.currency)
        line_type = _LINE_TYPES[item.kind]
        gross = item.amount_minor if line_type is LineType.PAYMENT else -item.amount_minor
        if item.tx_no == amount_differs_for and line_type is not LineType.DISPUTE:
            gross -= 10 ** digits if gross > 0 else -(10 ** digits)
        fee = SANDBOX_FEE.of(abs(gross), digits) if line_type is LineType.PAYMENT else 0
        days[(item.created_at.date(), item.currency)].append(FetchedLine(
            item.provider_transaction_id or item.tx_no, line_type, gross, fee, gross - fee, item.currency,
            item.tx_no))
    stored = []
    for (day, currency), lines in sorted(days.items()):
        gross = sum(line.gross_minor for line in lines)
        fees = sum(line.fee_minor for line in lines)
        paid_out = day + PAID_OUT_AFTER
        # A payout dated after today is not paid yet: "pending", as a provider says of it.
        status = "paid" if paid_out <= now.date() else "pending"
        fetched = FetchedSettlement(f"SIM-{day:%Y%m%d}-{currency}", paid_out, currency, gross, fees,
                                    gross - fees, status, lines)
        with deps.uow() as uow:
            stored.append(store.save_settlement(uow.conn, merchant_id=caller.merchant_id, mode=caller.mode.value,
                                                provider=PROVIDER, provider_account_id=None, fetched=fetched,
                                                fetched_at=now))
            uow.commit()
    return stored
