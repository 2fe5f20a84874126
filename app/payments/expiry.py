"""Expiry: what becomes of a payment or payout left Pending past the window (voided, Declined)."""
from __future__ import annotations

from . import settlement
from .voids import VOIDED
from .deps import Deps
from .model import EXPIRED, Status
from .provider import Outcome, ProviderDisconnected, ProviderUnavailable


def expire_pending(deps: Deps, limit: int = 100) -> int:
    """Worker: Pending payments and payouts past the window become Declined, Transaction Expired.

    The provider is asked to void each first: one the customer paid meanwhile is recorded
    as the provider says, and one the provider cannot be asked about now waits for the worker.
    """
    now = deps.clock()
    with deps.uow(write=False) as uow:
        ids = uow.transactions.expired_pending(now - deps.pending_expiry, limit)
    for tx_id in ids:
        with deps.uow(write=False) as uow:
            tx = uow.transactions.get_for_worker(tx_id)
            method = uow.methods.of_transaction(tx)
        try:
            answer = deps.providers.for_method(method).cancel(tx) if method else None
        except ProviderDisconnected:
            answer = None  # it can never be asked again: expire it like the others
        except ProviderUnavailable as error:
            settlement.provider_unavailable(deps, tx, error)
            continue
        if answer is None or answer.status in VOIDED:
            answer = Outcome(Status.DECLINED, tx.provider_transaction_id, "EXPIRED",
                             "Transaction expired before completion", decline_reason=EXPIRED)
        settlement.apply_outcome(deps, tx_id, answer, source="worker")
    return len(ids)
