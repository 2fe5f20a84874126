"""The workers' job of fetching provider accounts' settlements: Paystack settlements, Stripe payouts.

Each connected account is due once when connected and then every FETCH_EVERY. A worker claims a
due account with a conditional update (two workers never fetch the same one), asks the provider
outside any database transaction for its newest settlements, and fetches the lines of those it has
not stored or that changed (status or net). Each settlement is stored with its lines, matched, in
one unit of work (app/store/settlements.py): a worker killed midway loses and doubles nothing, and
the next fetch stores what it missed. A failed fetch is tried again after the bank lists' backoff.
The fetches run on a thread of their own beside the worker's round, so a slow provider delays
neither the round nor anything else.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from app.payments.deps import Deps
from app.payments.retries import retry_after
from app.store import settlements as store
from app.store.provider_accounts import account_by_id

from .passes import BackgroundPass
from .registry import ProviderRegistry

log = logging.getLogger(__name__)

FETCH_EVERY = timedelta(hours=1)
# A claimed account is not due again for this long: a worker that died mid-fetch leaves it to another.
CLAIM_FOR = timedelta(minutes=10)
BATCH = 10  # accounts one pass fetches at most


def fetch_due_settlements(deps: Deps, registry: ProviderRegistry, limit: int = BATCH) -> int:
    """Fetch the settlements of the accounts due now; how many accounts were tried."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        due = store.due_fetches(uow.conn, now, limit)
    tried = 0
    for item in due:
        account_id = item.provider_account_id
        with deps.uow() as uow:
            claimed = store.claim_fetch(uow.conn, account_id, now, now + CLAIM_FOR)
            uow.commit()
        if not claimed:
            continue  # another worker has it
        try:
            stored = fetch_account(deps, registry, account_id)
        except Exception as error:  # noqa: BLE001 - any failure keeps what is stored and is retried
            retry_at = deps.clock() + retry_after(item.failed_fetches + 1)
            log.warning("settlements of provider account %s not fetched, next try at %s: %s",
                        account_id, retry_at.isoformat(), error)
            with deps.uow() as uow:
                store.save_fetch_failure(uow.conn, account_id, str(error) or type(error).__name__, retry_at)
                uow.commit()
        else:
            fetched_at = deps.clock()
            log.info("settlements of provider account %s fetched: %d stored", account_id, stored)
            with deps.uow() as uow:
                store.save_fetch_success(uow.conn, account_id, fetched_at, fetched_at + FETCH_EVERY)
                uow.commit()
        tried += 1
    return tried


def fetch_account(deps: Deps, registry: ProviderRegistry, account_id: int) -> int:
    """Fetch one account's newest settlements and store the new and changed ones; how many were stored."""
    with deps.uow(write=False) as uow:
        account = account_by_id(uow.conn, account_id)
    connector = registry.for_account(account)
    headers = connector.settlements()
    with deps.uow(write=False) as uow:
        known = store.stored_states(uow.conn, account.merchant_id, account.mode.value, account.provider,
                                    [header.provider_settlement_id for header in headers])
    stored = 0
    for header in headers:
        if known.get(header.provider_settlement_id) == (header.status, header.net_minor):
            continue  # stored, and nothing about it changed
        complete = connector.with_lines(header)
        with deps.uow() as uow:
            store.save_settlement(uow.conn, merchant_id=account.merchant_id, mode=account.mode.value,
                                  provider=account.provider, provider_account_id=account.id,
                                  fetched=complete, fetched_at=deps.clock())
            uow.commit()
        stored += 1
    return stored


def settlement_pass(deps: Deps, registry: ProviderRegistry) -> BackgroundPass:
    """One worker process's passes of fetch_due_settlements, beside its rounds (app.providers.passes)."""
    return BackgroundPass("settlement-fetch", lambda: fetch_due_settlements(deps, registry))
