"""The workers' job of naming payout accounts: claim a due resolution, ask the provider whose the
account is (Paystack's GET /bank/resolve), store the answer for the payout form.

A request only records the account it wants named (app.payments.account_names); no web thread
waits on a provider. A worker claims a due row with a conditional update (two workers never ask
twice for one request; a claim lapses after CLAIM_FOR if its worker died), calls the connector's
resolve_account() outside any database transaction, and stores the name or the provider's
refusal. A try that got no answer keeps why and is tried again after 30 s, 1 min, 2 min, ... at
most hourly. The calls run on a thread of their own beside the worker's round.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from app.payments.deps import Deps
from app.payments.provider import AccountNotResolved
from app.payments.retries import retry_after
from app.store import account_resolutions as store

from .passes import BackgroundPass
from .registry import ProviderRegistry

log = logging.getLogger(__name__)

# Longer than a call can take (its connect and read timeouts): a claim this old was abandoned.
CLAIM_FOR = timedelta(minutes=1)
BATCH = 20  # resolutions one pass asks at most, one after another


def resolve_due_accounts(deps: Deps, registry: ProviderRegistry, limit: int = BATCH) -> int:
    """Ask the providers to name the accounts due now and store their answers; how many were tried."""
    with deps.uow(write=False) as uow:
        due = store.due_resolutions(uow.conn, deps.clock(), limit)
    tried = 0
    for item in due:
        claimed_at = deps.clock()
        with deps.uow() as uow:
            claimed = store.claim(uow.conn, item, claimed_at, claimed_at + CLAIM_FOR)
            uow.commit()
        if not claimed:
            continue  # another worker has it
        key = item.key
        name = refusal = None
        try:
            name = registry.account_connector(key.provider_account_id).resolve_account(
                key.account_number, key.bank_code)
        except AccountNotResolved as refused:
            refusal = refused.message
        except Exception as error:  # noqa: BLE001 - no answer about the account: asked again later
            failed = item.failed_tries + 1
            retry_at = deps.clock() + retry_after(failed)
            # Never the account number in the log: its last four digits, as the dashboard shows it.
            log.warning("account ••••%s at bank %s of provider account %s not named (%d in a row), "
                        "next try at %s: %s", key.account_number[-4:], key.bank_code,
                        key.provider_account_id, failed, retry_at.isoformat(), error)
            with deps.uow() as uow:
                store.save_failure(uow.conn, item.id, str(error) or type(error).__name__, retry_at)
                uow.commit()
            tried += 1
            continue
        with deps.uow() as uow:
            store.save_answer(uow.conn, item.id, holder_name=name, refusal=refusal,
                              answered_at=deps.clock())
            uow.commit()
        tried += 1
    return tried


def account_resolution_pass(deps: Deps, registry: ProviderRegistry) -> BackgroundPass:
    """One worker process's passes of resolve_due_accounts, beside its rounds (app.providers.passes)."""
    return BackgroundPass("account-resolutions", lambda: resolve_due_accounts(deps, registry))
