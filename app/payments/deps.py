"""What every payment operation is handed: units of work, providers, a clock, the settings (Deps).

The operations of the interface (create, refunds, settlement, cancel, expiry, bank_lists, lookup
and the sandbox reset, each a module of app.payments) take plain values in and give results
out, one unit of work each. The API and the dashboard both call them, so a rule or a message
never differs between them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .model import Transaction
from .provider import Providers


@dataclass
class Deps:
    """What the services need: units of work, providers, a clock, the expiry window."""

    uow: Callable[..., Any]  # uow(write=True) -> app.store.unit_of_work.UnitOfWork
    providers: Providers
    clock: Callable[[], datetime]
    pending_expiry: timedelta = timedelta(minutes=30)
    # The deployment runs as a demo: the simulator may decide live transactions (DEMO_MODE).
    demo_mode: bool = False
    # Tells the workers at once that a committed transaction's provider call is due (PostgreSQL's
    # NOTIFY); None: their poll finds it. For a caller that decides after its commit whether a
    # worker is needed at all (a refund its provider answers in process needs none).
    hand_over: Callable[[Transaction], None] | None = None
    # How long the API request log keeps a request (REQUEST_LOG_RETENTION_DAYS; the worker prunes).
    request_log_retention: timedelta = timedelta(days=30)


# A hook the caller may pass to run inside the unit of work that creates (or moves) a
# transaction (the API links its Idempotency-Key record to it there).
OnCreated = Callable[[Any, Transaction], None] | None
