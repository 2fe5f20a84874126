"""A caller's stored transaction, read as it stands (no provider is asked)."""
from __future__ import annotations

from .deps import Deps
from .model import Caller, StoredStatus, Transaction, TransactionNotFound


def get_status(deps: Deps, caller: Caller, tx_no: str) -> Transaction:
    """The stored transaction (no provider call); TransactionNotFound outside the caller's scope."""
    with deps.uow(write=False) as uow:
        return found(uow.transactions.get(caller, tx_no), tx_no)


def stored_status(deps: Deps, caller: Caller, tx_no: str) -> StoredStatus:
    """get_status's answer as the status response shows it, read alone (its columns only)."""
    with deps.uow(write=False) as uow:
        return found(uow.transactions.status_of(caller, tx_no), tx_no)


def found(read, tx_no: str):
    """What a read in the caller's scope found; TransactionNotFound when it found nothing."""
    if read is None:
        raise TransactionNotFound(tx_no)
    return read
