"""What happened to a payment and its refunds, read in one query per kind of record (never one
per refund), always within the caller's merchant and mode: the payment's timeline."""
from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, select

from app.payments.model import Caller

from .scope import scoped_to_mode
from .tables import (
    dispute_history,
    disputes,
    provider_accounts,
    provider_events,
    status_history,
    transactions,
    webhook_attempts,
    webhook_events,
)


def status_changes_of(conn: Connection, caller: Caller, transaction_ids: Iterable[int]) -> list:
    """The status changes of these of the caller's transactions, each with its TxNo, oldest first."""
    ids = list(transaction_ids)
    if not ids:
        return []
    return list(conn.execute(
        select(status_history, transactions.c.tx_no)
        .join(transactions, transactions.c.id == status_history.c.transaction_id)
        .where(status_history.c.transaction_id.in_(ids), *scoped_to_mode(transactions, caller))
        .order_by(status_history.c.at, status_history.c.id)))


def webhooks_of(conn: Connection, caller: Caller, transaction_ids: Iterable[int]) -> tuple[list, dict]:
    """The caller's webhook events of these transactions (every destination), oldest first, and
    their attempts by event id, oldest first: two queries."""
    ids = list(transaction_ids)
    if not ids:
        return [], {}
    events = list(conn.execute(
        select(webhook_events.c.id, webhook_events.c.webhook_id, webhook_events.c.event_type,
               webhook_events.c.url, webhook_events.c.state, webhook_events.c.attempts,
               webhook_events.c.last_http_status, webhook_events.c.created_at,
               webhook_events.c.delivered_at, transactions.c.tx_no)
        .join(transactions, transactions.c.id == webhook_events.c.transaction_id)
        .where(webhook_events.c.transaction_id.in_(ids), *scoped_to_mode(webhook_events, caller))
        .order_by(webhook_events.c.created_at, webhook_events.c.id)))
    attempts: dict[int, list] = {event.id: [] for event in events}
    if events:
        for row in conn.execute(
                select(webhook_attempts.c.event_id, webhook_attempts.c.attempt_no,
                       webhook_attempts.c.started_at, webhook_attempts.c.duration_ms,
                       webhook_attempts.c.http_status, webhook_attempts.c.error, webhook_attempts.c.manual)
                .where(webhook_attempts.c.event_id.in_(list(attempts)))
                .order_by(webhook_attempts.c.attempt_no, webhook_attempts.c.id)):
            attempts[row.event_id].append(row)
    return events, attempts


def provider_events_of(conn: Connection, caller: Caller, tx_nos: Iterable[str]) -> list:
    """What the providers sent about these of the caller's TxNos (ix_provider_events_tx_no),
    with the provider's name, oldest first."""
    numbers = list(tx_nos)
    if not numbers:
        return []
    return list(conn.execute(
        select(provider_events.c.id, provider_events.c.received_at, provider_events.c.event_type,
               provider_events.c.tx_no, provider_events.c.result, provider_events.c.detail,
               provider_events.c.signature_valid, provider_accounts.c.provider)
        .join(provider_accounts, provider_accounts.c.id == provider_events.c.provider_account_id)
        .where(*scoped_to_mode(provider_events, caller), provider_events.c.tx_no.in_(numbers))
        .order_by(provider_events.c.received_at, provider_events.c.id)))


def dispute_moves_of(conn: Connection, caller: Caller, payment_id: int) -> list:
    """Every status move of the payment's disputes, with the dispute's number, amount and reason,
    oldest first."""
    return list(conn.execute(
        select(dispute_history.c.from_status, dispute_history.c.to_status, dispute_history.c.source,
               dispute_history.c.note, dispute_history.c.at, disputes.c.dispute_no,
               disputes.c.amount_minor, disputes.c.currency, disputes.c.reason)
        .join(disputes, disputes.c.id == dispute_history.c.dispute_id)
        .where(disputes.c.payment_id == payment_id, *scoped_to_mode(disputes, caller))
        .order_by(dispute_history.c.at, dispute_history.c.id)))
