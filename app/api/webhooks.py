"""The /api/v1/webhooks endpoints: list a merchant's webhook events with their attempts, resend one."""
from __future__ import annotations

import json
from decimal import Decimal

from flask import g, request

from app.payments.events import MAX_WEBHOOK_ID_LENGTH
from app.payments.model import MAX_TX_NO_LENGTH, TransactionNotFound
from app.payments.formats import iso_utc
from app.util import could_be_key
from app.web import deps, json_response
from app.webhooks import log
from app.webhooks.resend import WebhookNotFound, resend_event

from . import api
from .limits import DEFAULT_WEBHOOK_LIMIT, MAX_WEBHOOK_LIMIT, WEBHOOK_STATUS_WORDS
from .paging import page_limit
from .schemas import WebhookAttempt, WebhookEvent


def attempt_body(attempt: log.Attempt) -> WebhookAttempt:
    """One attempt as the API shows it."""
    return {
        "attemptNo": attempt.attempt_no,
        "startedAt": iso_utc(attempt.started_at),
        "durationMs": attempt.duration_ms,
        "httpStatus": attempt.http_status,
        "error": attempt.error,
        "responseExcerpt": attempt.response_excerpt,
        "manual": attempt.manual,
        "requestHeaders": attempt.request_headers,
    }


def webhook_body(delivery: log.Delivery, attempts: list[log.Attempt]) -> WebhookEvent:
    """One webhook event, its exact payload and its attempts (oldest first)."""
    return {
        "webhookId": delivery.webhook_id,
        "eventType": delivery.event_type,
        "txNo": delivery.tx_no,
        "url": delivery.url,
        "status": WEBHOOK_STATUS_WORDS[delivery.state],
        "nextAttemptAt": iso_utc(delivery.next_attempt_at),
        "lastHttpStatus": delivery.last_http_status,
        "lastError": delivery.last_error,
        "createdAt": iso_utc(delivery.created_at),
        "deliveredAt": iso_utc(delivery.delivered_at),
        "payload": json.loads(delivery.payload, parse_float=Decimal),
        "attempts": [attempt_body(a) for a in attempts],
    }


@api.get("/webhooks")
def list_webhooks():
    """The token's webhook events, newest first, each with its attempts; ?txNo= narrows to one transaction."""
    tx_no = request.args.get("txNo")
    limit = page_limit(DEFAULT_WEBHOOK_LIMIT, MAX_WEBHOOK_LIMIT)
    caller = g.caller
    with deps().uow(write=False) as uow:
        if tx_no is not None:
            if not could_be_key(tx_no, MAX_TX_NO_LENGTH) or \
                    uow.transactions.get(caller, tx_no) is None:
                raise TransactionNotFound(tx_no[:MAX_TX_NO_LENGTH])
        deliveries = log.list_deliveries(uow.conn, caller, tx_no=tx_no, limit=limit)
        attempts = log.attempts_by_webhook(uow.conn, caller, [d.webhook_id for d in deliveries])
    return json_response({"webhooks": [webhook_body(d, attempts[d.webhook_id]) for d in deliveries]})


@api.post("/webhooks/<webhook_id>/resend")
def resend_webhook(webhook_id: str):
    """Queue the event for an immediate manual attempt (a fresh retry schedule follows); 202."""
    caller = g.caller
    if not could_be_key(webhook_id, MAX_WEBHOOK_ID_LENGTH):
        return json_response({"error": f"Webhook {webhook_id[:MAX_WEBHOOK_ID_LENGTH]} not found"}, 404)
    try:
        delivery = resend_event(deps(), caller, webhook_id)
    except WebhookNotFound as error:
        return json_response({"error": str(error)}, 404)
    with deps().uow(write=False) as uow:
        attempts = log.attempts_of(uow.conn, caller, webhook_id)
    return json_response(webhook_body(delivery, attempts), 202)
