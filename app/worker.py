"""One round of the background worker's jobs; `flask worker` repeats it."""
from __future__ import annotations

from flask import Flask

from app.api.idempotency import REPLAY_WINDOW
from app.payments import services
from app.store import idempotency
from app.webhooks.delivery import start_delivery


def run_round(app: Flask) -> bool:
    """Settle due provider answers, expire stale Pending transactions, purge old keys, send webhooks.

    Returns True when there was work, so the loop goes on without sleeping.
    """
    deps = app.extensions["paydesk"]
    with app.app_context():
        settled = services.run_due_provider_checks(deps)
        expired = services.expire_pending(deps)
        with deps.uow() as uow:
            idempotency.purge_older_than(uow.conn, deps.clock() - REPLAY_WINDOW)
            uow.commit()
        # Webhooks are delivered continuously by this process's own delivery threads.
        start_delivery(app)
    return bool(settled or expired)
