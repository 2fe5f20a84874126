"""The workers' job of keeping provider accounts' bank lists fresh: fetch the due ones, store them.

A list is due when nobody has fetched it yet (a request asked for it, or its account was just
connected), an hour after its last fetch, or when a failed fetch's backoff ends. A worker claims a
due list with a conditional update (so two workers never fetch the same one), asks the provider
outside any database transaction through the connector's fetch_banks, and stores the answer. A
failed fetch keeps the stored copy, records why, and is tried again after 30 s, 1 min, 2 min, ...
at most hourly. The fetches run on a thread of their own beside the worker's round, so a slow
provider delays neither the round nor anything else.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from app.payments.bank_lists import REFRESH_AFTER
from app.payments.deps import Deps
from app.payments.retries import retry_after
from app.store import bank_lists as store

from .passes import BackgroundPass
from .registry import ProviderRegistry

log = logging.getLogger(__name__)

# A claimed list is not due again for this long: a worker that died mid-fetch leaves it to another.
CLAIM_FOR = timedelta(minutes=5)
BATCH = 20  # lists one pass fetches at most (one after another: they are few and rarely due)


def refresh_due_lists(deps: Deps, registry: ProviderRegistry, limit: int = BATCH) -> int:
    """Fetch and store the bank lists due now; how many were tried (fetched or failed)."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        due = store.due_lists(uow.conn, now, limit)
    tried = 0
    for item in due:
        with deps.uow() as uow:
            claimed = store.claim(uow.conn, item, now, now + CLAIM_FOR)
            uow.commit()
        if not claimed:
            continue  # another worker has it
        key = item.key
        try:
            banks = registry.account_connector(key.provider_account_id).fetch_banks(key.currency, key.country)
        except Exception as error:  # noqa: BLE001 - any failure keeps the old copy and is retried
            failed = item.failed_fetches + 1
            retry_at = deps.clock() + retry_after(failed)
            log.warning("bank list %s %s of provider account %s not fetched (%d in a row), next try "
                        "at %s: %s", key.currency, key.country, key.provider_account_id, failed,
                        retry_at.isoformat(), error)
            with deps.uow() as uow:
                store.save_failure(uow.conn, item.id, str(error) or type(error).__name__, retry_at)
                uow.commit()
        else:
            fetched_at = deps.clock()
            with deps.uow() as uow:
                store.save_fetched(uow.conn, item.id, banks, fetched_at, fetched_at + REFRESH_AFTER)
                uow.commit()
        tried += 1
    return tried


def bank_list_pass(deps: Deps, registry: ProviderRegistry) -> BackgroundPass:
    """One worker process's passes of refresh_due_lists, beside its rounds (app.providers.passes)."""
    return BackgroundPass("bank-list-refresh", lambda: refresh_due_lists(deps, registry))
