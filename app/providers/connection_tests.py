"""The workers' job of answering the dashboard's "Test connection": claim a due test, ask the
provider, store the answer.

A request only records that a test is asked (app.providers.accounts.request_test); no web thread
ever waits on a provider. A worker claims a due test with a conditional update (so two workers
never test an account twice for one request, and a claim lapses after CLAIM_FOR if its worker
died), calls the connector's test_connection() outside any database transaction, and stores the
answer in the fixed words of accounts.test_connection, unless the test was asked again meanwhile
(then the new request waits for its own answer). The tests run on a thread of their own beside the
worker's round, one after another: they are rare and each takes at most a call's timeouts.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from app.payments.deps import Deps
from app.store import provider_accounts as store

from . import accounts
from .passes import BackgroundPass
from .registry import ProviderRegistry

log = logging.getLogger(__name__)

# Longer than a call can take (its connect and read timeouts): a claim this old was abandoned.
CLAIM_FOR = timedelta(minutes=1)
BATCH = 20  # tests one pass makes at most
# What a test shows when Paydesk itself failed (a bug): the worker logs why; the claim is not
# left to lapse, which would try the same failing test every minute.
PAYDESK_FAILED = "{name} could not be tested: Paydesk failed; its worker log says why"


def run_due_tests(deps: Deps, registry: ProviderRegistry, limit: int = BATCH) -> int:
    """Make the connection tests due now and store their answers; how many were made."""
    with deps.uow(write=False) as uow:
        due = store.due_tests(uow.conn, deps.clock(), limit)
    made = 0
    for test in due:
        claimed_at = deps.clock()
        with deps.uow() as uow:
            claimed = store.claim_test(uow.conn, test, claimed_at, claimed_at + CLAIM_FOR)
            account = store.account_by_id(uow.conn, test.account_id) if claimed else None
            uow.commit()
        if account is None:
            continue  # another worker has it, or it was asked again (a later pass takes that)
        try:
            worked, message = accounts.test_connection(registry, account)
        except Exception:  # noqa: BLE001 - a bug of ours: say so rather than retry it forever
            log.exception("connection test of provider account %s failed", account.id)
            worked, message = False, PAYDESK_FAILED.format(name=accounts.PROVIDER_NAMES[account.provider])
        with deps.uow() as uow:
            store.save_test_result(uow.conn, test, worked=worked, message=message,
                                   finished_at=deps.clock())
            uow.commit()
        made += 1
    return made


def connection_test_pass(deps: Deps, registry: ProviderRegistry) -> BackgroundPass:
    """One worker process's passes of run_due_tests, beside its rounds (app.providers.passes)."""
    return BackgroundPass("connection-tests", lambda: run_due_tests(deps, registry))
