"""Reminders of dispute deadlines: a dispute still needing a response (nothing on its way to the
provider) whose deadline is less than REMIND_BEFORE away is told once to the users who chose
"A dispute's deadline is near" (app.payments.notifications); once per deadline: a deadline the
provider moves clears `reminded_at` (app.store.disputes, save).

A worker round (the dispute pass, app.worker) claims each such dispute by writing its
`reminded_at` and records the notification in the same unit, so a reminder is neither lost by a
crash nor sent twice by two workers.
"""
from __future__ import annotations

from datetime import timedelta

from . import notifications
from .deps import Deps

REMIND_BEFORE = timedelta(hours=48)
BATCH = 100


def remind_due_disputes(deps: Deps, limit: int = BATCH) -> int:
    """Record the reminder of each dispute now due for one; how many were recorded."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        due = uow.disputes.due_reminders(now + REMIND_BEFORE, now, limit)
    reminded = 0
    for dispute_id in due:
        with deps.uow() as uow:
            if not uow.disputes.claim_reminder(dispute_id, now):
                continue  # another worker's, or answered meanwhile
            uow.notify(notifications.dispute_due(uow.disputes.by_id_for_worker(dispute_id)))
            uow.commit()
        reminded += 1
    return reminded
