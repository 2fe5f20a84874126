"""Resend: one of the caller's webhook events queued again by hand, with a fresh retry schedule."""
from __future__ import annotations

from sqlalchemy import select, update

from app.payments.model import Caller
from app.store.scope import scoped_to_mode
from app.store.tables import webhook_events

from . import log


class WebhookNotFound(Exception):
    """No webhook with this id for this merchant and mode."""

    def __init__(self, webhook_id: str):
        super().__init__(f"Webhook {webhook_id} not found")


def resend_event(deps, caller: Caller, webhook_id: str) -> log.Delivery:
    """Queue an event for an immediate manual attempt with a fresh retry schedule, and audit it."""
    now = deps.clock()
    e = webhook_events.c
    with deps.uow() as uow:
        row = uow.conn.execute(
            select(e.id, e.attempts)
            .where(*scoped_to_mode(webhook_events, caller), e.webhook_id == webhook_id)
            .with_for_update()
        ).first()
        if row is None:
            raise WebhookNotFound(webhook_id)
        uow.conn.execute(
            update(webhook_events).where(e.id == row.id)
            .values(state="pending", next_attempt_at=now, next_attempt_manual=True,
                    schedule_offset=row.attempts)
        )
        uow.audit(caller, "webhook.resend", target=webhook_id)
        uow.commit()
    with deps.uow(write=False) as uow:
        return log.get_delivery(uow.conn, caller, webhook_id)
