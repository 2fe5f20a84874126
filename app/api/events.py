"""The /api/v1/events endpoints: the token's events of the last days (EVENT_RETENTION_DAYS), so a
merchant whose receiver was down catches up without waiting for the retries."""
from __future__ import annotations

import json
from decimal import Decimal

from flask import g, request

from app.payments.events import EVENT_TYPES, MAX_EVENT_ID_LENGTH
from app.payments.formats import iso_utc
from app.payments.model import MAX_TX_NO_LENGTH
from app.util import could_be_key
from app.web import deps, json_response
from app.webhooks import events

from . import api, query
from .limits import DEFAULT_EVENT_LIMIT, MAX_EVENT_LIMIT, WEBHOOK_STATUS_WORDS
from .paging import Cursor, page_limit

CURSOR = Cursor("evt:", "Cursor is not one this API gave; start again without it")
TYPE_WORDS = {name: name for name in EVENT_TYPES}
TRUE_WORDS = {"true": True, "false": False}


def delivery_body(delivery: events.EventDelivery) -> dict:
    """One delivery of an event: where it went and where it stands."""
    return {
        "webhookId": delivery.webhook_id,
        "endpointId": delivery.endpoint_id,
        "url": delivery.url,
        "status": WEBHOOK_STATUS_WORDS[delivery.state],
        "attempts": delivery.attempts,
        "lastHttpStatus": delivery.last_http_status,
        "lastError": delivery.last_error,
        "nextAttemptAt": iso_utc(delivery.next_attempt_at),
        "deliveredAt": iso_utc(delivery.delivered_at),
    }


def event_body(event: events.Event) -> dict:
    """An event as the API shows it: data is the webhook's exact body."""
    return {
        "id": event.public_id,
        "type": event.type,
        "txNo": event.tx_no,
        "createdAt": iso_utc(event.created_at),
        "data": json.loads(event.payload, parse_float=Decimal),
        "deliveries": [delivery_body(d) for d in event.deliveries],
    }


@api.get("/events")
def list_events():
    """The token's events, newest first; filters and paging in the query string (see the OpenAPI
    document)."""
    flt = _filter()
    limit, before = page_limit(DEFAULT_EVENT_LIMIT, MAX_EVENT_LIMIT), CURSOR.position()
    with deps().uow(write=False) as uow:
        found = events.list_events(uow.conn, g.caller, flt, before=before, limit=limit + 1)
    shown = found[:limit]
    more = len(found) > limit
    return json_response({"events": [event_body(e) for e in shown], "hasMore": more,
                          "nextCursor": CURSOR.encode(shown[-1].row_id) if more else None})


@api.get("/events/<event_id>")
def get_event(event_id: str):
    """One of the token's events; 404 for another merchant's or mode's, or one past retention."""
    found = None
    if could_be_key(event_id, MAX_EVENT_ID_LENGTH):
        with deps().uow(write=False) as uow:
            found = events.get_event(uow.conn, g.caller, event_id)
    if found is None:
        return json_response({"error": f"Event {event_id[:MAX_EVENT_ID_LENGTH]} not found"}, 404)
    return json_response(event_body(found))


def _filter() -> events.EventFilter:
    """The query string's filters; FieldErrors names every one that cannot be read."""
    gathered = query.Gathered()
    read, errors = gathered.read, gathered.errors
    tx_no = request.args.get("txNo")
    if tx_no is not None and not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        errors["TxNo"] = [f"TxNo must be 1 to {MAX_TX_NO_LENGTH} printable characters"]
    failed = read(query.words, "deliveryFailed", TRUE_WORDS) or [False]
    if len(failed) > 1:
        errors["DeliveryFailed"] = ["DeliveryFailed must be true or false"]
    found = events.EventFilter(
        types=tuple(read(query.words, "type", TYPE_WORDS) or ()),
        created_from=read(query.moment, "createdFrom"),
        created_to=read(query.moment, "createdTo"),
        tx_no=tx_no,
        delivery_failed=failed[0] is True,
    )
    gathered.raise_any()
    return found
