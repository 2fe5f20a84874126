"""Cancelling a payment: its provider is asked to void it, and Paydesk declines it.

The simulator answers in process: it is asked inside the request and its answer recorded at once
(Declined, Payment Cancelled By User). A provider behind a network (Paystack, Stripe) is never
asked on the request's thread (issue 29): the request commits a cancel request (the payment's
`cancel_requested_at`, its provider call due now) and answers with the payment as it stands; a
worker asks the provider to void it (settlement.settle_with_provider) and records the answer
the same way, with the same audit row and webhook.
"""
from __future__ import annotations

from . import lookup, settlement
from .deps import Deps, OnCreated
from .model import Caller, Status, Transaction, cancel_outstanding, check_cancel
from .provider import Provider, ProviderUnavailable
from .voids import as_cancelled

# The ProviderMessage of a payment whose cancel the provider is still to be asked about.
REQUESTED = "Cancellation requested; waiting for the provider"


def cancel_transaction(deps: Deps, caller: Caller, tx_no: str, on_moved: OnCreated = None) -> Transaction:
    """Cancel a Pending or Authorized payment: Declined, Payment Cancelled By User, once its
    provider has voided it; the payment as it then stands.

    The simulator voids it at once: the payment returned is Declined. A payment the provider
    reports as paid meanwhile is recorded as such and the cancel refused with its new status;
    one the provider cannot be asked about stays as it is (ProviderUnavailable). Through a
    provider behind a network, the cancel is requested (request_cancel) and the payment
    returned still Pending or Authorized, with the request outstanding (cancel_outstanding).
    """
    tx = lookup.get_status(deps, caller, tx_no)
    check_cancel(tx)
    with deps.uow(write=False) as uow:
        method = uow.methods.of_transaction(tx)
    if method is None:
        raise ProviderUnavailable(f"Payment method {tx.payment_method} is no longer configured")
    provider = deps.providers.in_process_provider(method)
    if provider is None:
        return request_cancel(deps, caller, tx_no, on_moved)
    return _void_in_process(deps, caller, tx, provider, on_moved)


def _void_in_process(deps: Deps, caller: Caller, tx: Transaction, provider: Provider,
                     on_moved: OnCreated) -> Transaction:
    """Ask a provider that answers in process (the simulator) to void the payment, and record
    its answer as a worker records any provider's (the audit row by the caller)."""
    answer = as_cancelled(provider.cancel(tx))
    audited = settlement.audit_cancel(caller.actor)

    def moved_by_caller(uow, moved: Transaction) -> None:
        audited(uow, moved)
        if on_moved:
            on_moved(uow, moved)

    tx = settlement.apply_outcome(deps, tx.id, answer, source=caller.actor, on_moved=moved_by_caller)
    if tx.status is not Status.DECLINED:
        check_cancel(tx)  # paid meanwhile: refused, naming the status the provider gave
    return tx


def request_cancel(deps: Deps, caller: Caller, tx_no: str, on_moved: OnCreated = None) -> Transaction:
    """Commit a cancel request for a worker to take to the provider; the payment as it stands.

    One unit, on the payment's locked row: check_cancel again (the payment may have moved since
    it was read), then its `cancel_requested_at`, its provider call due now (announced to the
    workers once committed), ProviderMessage REQUESTED, a `payment.cancel.requested` audit row
    and on_moved (the Idempotency-Key's link). A cancel already outstanding writes nothing and
    answers the payment as it stands.
    """
    with deps.uow() as uow:
        tx = lookup.found(uow.transactions.get(caller, tx_no, for_update=True), tx_no)
        check_cancel(tx)
        if cancel_outstanding(tx):
            return tx
        now = deps.clock()
        tx.cancel_requested_at = now
        tx.provider_check_at = now
        tx.provider_message = REQUESTED
        tx.updated_at = now
        uow.transactions.request_cancel(tx)
        uow.audit(caller, "payment.cancel.requested", tx.tx_no, tx.amount, tx.currency,
                  {"status": tx.status.value})
        if on_moved:
            on_moved(uow, tx)
        uow.commit()
    return tx
