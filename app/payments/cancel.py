"""Cancelling a payment: the merchant asks its provider to void it, and Paydesk declines it."""
from __future__ import annotations

from dataclasses import replace

from . import lookup, settlement
from .deps import Deps, OnCreated
from .model import CANCELLED, Caller, Status, Transaction, check_cancel
from .provider import ProviderUnavailable

# A provider's answer to a void (Provider.cancel) that leaves Paydesk to decline the payment: voided
# (Declined, whatever reason the provider gives) or nothing to void (Pending). Other answers say
# where the payment went meanwhile (Captured, say) and are recorded as they are.
VOIDED = (Status.PENDING, Status.DECLINED)


def cancel_transaction(deps: Deps, caller: Caller, tx_no: str, on_moved: OnCreated = None) -> Transaction:
    """Void a Pending or Authorized payment at its provider, then Declined, Payment Cancelled By User.

    A payment the provider reports as paid meanwhile is recorded as such and the cancel
    refused with its new status; one the provider cannot be asked about stays as it is.
    """
    tx = lookup.get_status(deps, caller, tx_no)
    check_cancel(tx)
    with deps.uow(write=False) as uow:
        method = uow.methods.of_transaction(tx)
    if method is None:
        raise ProviderUnavailable(f"Payment method {tx.payment_method} is no longer configured")
    answer = deps.providers.for_method(method).cancel(tx)
    if answer.status in VOIDED:
        answer = replace(answer, status=Status.DECLINED, decline_reason=CANCELLED,
                         provider_message=answer.provider_message or "Cancelled by the merchant")

    def audited(uow, moved: Transaction) -> None:
        uow.audit(caller, "payment.cancel", moved.tx_no, moved.amount, moved.currency,
                  {"status": moved.status.value})
        if on_moved:
            on_moved(uow, moved)

    tx = settlement.apply_outcome(deps, tx.id, answer, source=caller.actor, on_moved=audited)
    if tx.status is not Status.DECLINED:
        check_cancel(tx)  # paid meanwhile: refused, naming the status the provider gave
    return tx
