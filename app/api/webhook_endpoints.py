"""The /api/v1/webhook-endpoints endpoints: a merchant's webhook endpoints, their secrets (shown
once, at creation and rotation) and the resend of an endpoint's failed deliveries."""
from __future__ import annotations

from flask import current_app, g

from app.payments.formats import iso_utc
from app.payments.model import FieldErrors
from app.web import deps, json_response
from app.webhooks import endpoints, receiver_check
from app.webhooks.settings import DeliverySettings

from . import api, query
from .limits import DEFAULT_ENDPOINT_LIMIT, MAX_ENDPOINT_LIMIT
from .paging import Cursor, page_limit
from .routes import read_json

CURSOR = Cursor("we:", "Cursor is not one this API gave; start again without it")


def endpoint_body(endpoint: endpoints.Endpoint) -> dict:
    """An endpoint as the API shows it (never its secret)."""
    return {
        "id": endpoint.public_id,
        "url": endpoint.url,
        "enabledEvents": list(endpoint.enabled_events),
        "enabled": endpoint.enabled,
        "description": endpoint.description,
        "createdAt": iso_utc(endpoint.created_at),
        "updatedAt": iso_utc(endpoint.updated_at),
    }


def _not_found(error: endpoints.EndpointNotFound):
    return json_response({"error": str(error)}, 404)


def _fields(*, partial: bool) -> dict:
    guard = DeliverySettings.from_config(current_app.config).guard
    return endpoints.read_fields(read_json(), guard, partial=partial)


@api.post("/webhook-endpoints")
def create_webhook_endpoint():
    """A new endpoint; its secret is in this answer and never again (201)."""
    created = endpoints.create_endpoint(deps(), g.caller, _fields(partial=False))
    return json_response({**endpoint_body(created.endpoint), "secret": created.secret}, 201)


@api.get("/webhook-endpoints")
def list_webhook_endpoints():
    """The token's endpoints, newest first, a page at a time."""
    limit, before = page_limit(DEFAULT_ENDPOINT_LIMIT, MAX_ENDPOINT_LIMIT), CURSOR.position()
    with deps().uow(write=False) as uow:
        found = endpoints.list_endpoints(uow.conn, g.caller, before=before, limit=limit + 1)
    shown = found[:limit]
    more = len(found) > limit
    return json_response({"webhookEndpoints": [endpoint_body(e) for e in shown], "hasMore": more,
                          "nextCursor": CURSOR.encode(shown[-1].row_id) if more else None})


@api.get("/webhook-endpoints/<endpoint_id>")
def get_webhook_endpoint(endpoint_id: str):
    """One of the token's endpoints; 404 for any other id."""
    try:
        with deps().uow(write=False) as uow:
            return json_response(endpoint_body(endpoints.get_endpoint(uow.conn, g.caller, endpoint_id)))
    except endpoints.EndpointNotFound as error:
        return _not_found(error)


@api.route("/webhook-endpoints/<endpoint_id>", methods=["PATCH", "POST"])
def update_webhook_endpoint(endpoint_id: str):
    """Change the fields given (url, enabledEvents, enabled, description)."""
    try:
        with deps().uow(write=False) as uow:
            endpoints.get_endpoint(uow.conn, g.caller, endpoint_id)  # 404 before reading the body
        updated = endpoints.update_endpoint(deps(), g.caller, endpoint_id, _fields(partial=True))
    except endpoints.EndpointNotFound as error:
        return _not_found(error)
    return json_response(endpoint_body(updated))


@api.delete("/webhook-endpoints/<endpoint_id>")
def delete_webhook_endpoint(endpoint_id: str):
    """Delete the endpoint: no more deliveries go to it."""
    try:
        deleted = endpoints.delete_endpoint(deps(), g.caller, endpoint_id)
    except endpoints.EndpointNotFound as error:
        return _not_found(error)
    return json_response({"id": deleted.public_id, "deleted": True})


@api.post("/webhook-endpoints/<endpoint_id>/rotate-secret")
def rotate_webhook_endpoint_secret(endpoint_id: str):
    """A new secret (shown once); the old one keeps signing beside it for 24 hours."""
    try:
        rotated = endpoints.rotate_secret(deps(), g.caller, endpoint_id)
    except endpoints.EndpointNotFound as error:
        return _not_found(error)
    return json_response({**endpoint_body(rotated.endpoint), "secret": rotated.secret,
                          "previousSecretExpiresAt": iso_utc(rotated.previous_expires_at)})


@api.post("/webhook-endpoints/<endpoint_id>/resend-failed")
def resend_failed_webhooks(endpoint_id: str):
    """Queue again the endpoint's Failed deliveries of events since `since` (query string); 202."""
    try:
        with deps().uow(write=False) as uow:
            endpoints.get_endpoint(uow.conn, g.caller, endpoint_id)
        since = query.moment("since")
        if since is None:
            raise FieldErrors.one("Since", "Since is required: " + query.TIME_WORDS)
        resent = endpoints.resend_failed_since(deps(), g.caller, endpoint_id, since)
    except endpoints.EndpointNotFound as error:
        return _not_found(error)
    return json_response({"resent": resent}, 202)


def check_body(check: receiver_check.Check) -> dict:
    """A receiver check as the API shows it: Pending until a worker has run it."""
    return {
        "id": check.public_id,
        "endpointId": check.endpoint_public_id,
        "status": "Done" if check.done else "Pending",
        "passed": check.passed,
        "requestedAt": iso_utc(check.requested_at),
        "finishedAt": iso_utc(check.finished_at),
        "results": [{"case": r.case, "httpStatus": r.http_status, "error": r.error, "accepted": r.accepted,
                     "asExpected": r.as_expected, "advice": r.advice} for r in check.results],
    }


@api.post("/webhook-endpoints/<endpoint_id>/check")
def check_webhook_receiver(endpoint_id: str):
    """Ask a worker to send the endpoint a valid, a tampered, a replayed and a stale test delivery;
    202 with the check, whose result GET .../checks/{checkId} gives."""
    try:
        check = receiver_check.request_check(deps(), g.caller, endpoint_id)
    except endpoints.EndpointNotFound as error:
        return _not_found(error)
    return json_response(check_body(check), 202)


@api.get("/webhook-endpoints/<endpoint_id>/checks/<check_id>")
def get_webhook_receiver_check(endpoint_id: str, check_id: str):
    """One receiver check of the endpoint and, once run, what the receiver accepted."""
    try:
        with deps().uow(write=False) as uow:
            check = receiver_check.get_check(uow.conn, g.caller, endpoint_id, check_id)
    except (endpoints.EndpointNotFound, receiver_check.CheckNotFound) as error:
        return json_response({"error": str(error)}, 404)
    return json_response(check_body(check))
