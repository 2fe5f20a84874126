"""Merchants' webhook endpoints: their settings and secrets, the fan-out of events to them, and
what their pages show (success rate, last success, resend of the failed ones).

An endpoint belongs to a merchant and mode, takes the event types it lists ("*": every one) and
signs with its own whsec_ secrets (a rotated one keeps signing beside the new one for a grace
period, as Standard Webhooks allows). The API and the dashboard both call these functions.

Fan-out: a request records its event in the unit of work of the change (no read of endpoints
on its path); a delivery worker gives each event not yet fanned out one delivery
(webhook_events row) per subscribed, enabled endpoint that existed when the event happened,
and marks it fanned out, in one transaction (PostgreSQL: FOR UPDATE SKIP LOCKED, so two workers
never fan out the same event).
"""
from __future__ import annotations

import ipaddress
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import Connection, and_, func, insert, select, update

from app.payments.events import EVENT_TYPES, endpoint_webhook_id
from app.payments.model import Caller, FieldErrors, Mode
from app.store.merchants import new_webhook_secret
from app.store.scope import scoped_to_mode
from app.store.tables import events, webhook_endpoint_secrets, webhook_endpoints, webhook_events

from .guard import AddressGuard, TargetRefused, check_url

ALL_EVENTS = "*"
MAX_URL_LENGTH = 2048
MAX_DESCRIPTION_LENGTH = 200
# Endpoint ids are we_ and 24 hex digits: longer text names none.
MAX_ENDPOINT_ID_LENGTH = 40
# How long a rotated secret keeps signing beside the new one.
ROTATION_GRACE = timedelta(hours=24)
# Events one fan-out transaction takes at most.
FAN_OUT_BATCH = 200
# The window of an endpoint's success rate.
STATS_WINDOW = timedelta(days=30)
FIELDS = {"url": "Url", "enabledEvents": "EnabledEvents", "enabled": "Enabled", "description": "Description"}
DISABLED_ERROR = "Not sent: the endpoint was disabled"
DELETED_ERROR = "Not sent: the endpoint was deleted"


class EndpointNotFound(Exception):
    """No endpoint with this id for this merchant and mode."""

    def __init__(self, endpoint_id: str):
        super().__init__(f"Webhook endpoint {endpoint_id[:MAX_ENDPOINT_ID_LENGTH]} not found")


@dataclass(frozen=True)
class Endpoint:
    """One webhook endpoint as its owner sees it."""

    row_id: int
    public_id: str
    url: str
    enabled_events: tuple[str, ...]
    enabled: bool
    description: str | None
    created_at: datetime
    updated_at: datetime

    def takes(self, event_type: str) -> bool:
        """The endpoint is subscribed to this event type."""
        return ALL_EVENTS in self.enabled_events or event_type in self.enabled_events


@dataclass(frozen=True)
class WithSecret:
    """An endpoint and its new secret (shown once), and until when the previous one still signs."""

    endpoint: Endpoint
    secret: str
    previous_expires_at: datetime | None = None


@dataclass(frozen=True)
class EndpointStats:
    """How an endpoint's deliveries of the last STATS_WINDOW went."""

    delivered: int
    failed: int  # given up, or retrying after a failed attempt
    pending: int
    last_success_at: datetime | None

    @property
    def success_rate(self) -> float | None:
        """Delivered among the finished or failing ones, 0 to 1; None before any."""
        done = self.delivered + self.failed
        return self.delivered / done if done else None


# Reading and checking what a caller sends

def read_fields(body: object, guard: AddressGuard, *, partial: bool) -> dict:
    """The endpoint fields of a request body (API names: url, enabledEvents, enabled, description);
    FieldErrors names every problem. `partial`: an update, where every field is optional."""
    if not isinstance(body, dict):
        raise FieldErrors.one("Body", "Request body must be a JSON object")
    errors: dict[str, list[str]] = {}
    for key in body:
        if key not in FIELDS:
            errors[(str(key)[:1].upper() + str(key)[1:60]) or "Body"] = ["Unknown field"]
    found: dict = {}
    for key, field in FIELDS.items():
        if key not in body:
            if not partial and key in ("url", "enabledEvents"):
                errors[field] = [f"{field} is required"]
            continue
        try:
            found[key] = READERS[key](body[key], guard)
        except FieldErrors as error:
            errors.update(error.errors)
    if errors:
        raise FieldErrors(errors)
    return found


def _url(value: object, guard: AddressGuard) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FieldErrors.one("Url", "Url must be an http or https URL with a host")
    if len(value) > MAX_URL_LENGTH or not value.isprintable():
        raise FieldErrors.one("Url", f"Url must be at most {MAX_URL_LENGTH} printable characters")
    try:
        check_url(value)
    except TargetRefused:
        raise FieldErrors.one("Url", "Url must be an http or https URL with a host") from None
    # A literal address is checked now; a host name when a delivery resolves it (the same guard
    # as a callbackUrl's: no request waits on DNS).
    host = (urlsplit(value).hostname or "").split("%")[0]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return value
    refusal = guard.refusal(address)
    if refusal:
        raise FieldErrors.one("Url", f"Url is refused: {refusal.removeprefix('Refused: ')}")
    return value


def _enabled_events(value: object, _guard) -> tuple[str, ...]:
    words = f'EnabledEvents must be a non-empty list of event types, or ["{ALL_EVENTS}"] for all'
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise FieldErrors.one("EnabledEvents", words)
    unknown = [item for item in value if item not in EVENT_TYPES and item != ALL_EVENTS]
    if unknown:
        shown = ", ".join(item[:40] for item in unknown[:5])
        # Named in full, as GET /events names them for its type filter: a merchant's engineer
        # who guessed a type (refund.succeeded) reads the right one (refund.captured) here.
        raise FieldErrors.one("EnabledEvents", f"EnabledEvents has unknown event types: {shown}; "
                              f'the types are {", ".join(EVENT_TYPES)}, or ["{ALL_EVENTS}"] for all')
    if ALL_EVENTS in value and len(set(value)) > 1:
        raise FieldErrors.one("EnabledEvents", f'"{ALL_EVENTS}" stands alone: it means every event type')
    return tuple(dict.fromkeys(value))


def _enabled(value: object, _guard) -> bool:
    if not isinstance(value, bool):
        raise FieldErrors.one("Enabled", "Enabled must be true or false")
    return value


def _description(value: object, _guard) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_DESCRIPTION_LENGTH or not value.isprintable():
        raise FieldErrors.one("Description", f"Description must be at most {MAX_DESCRIPTION_LENGTH} "
                                             "printable characters")
    return value.strip() or None


READERS = {"url": _url, "enabledEvents": _enabled_events, "enabled": _enabled, "description": _description}


# Reading endpoints

def _endpoint(row) -> Endpoint:
    return Endpoint(row_id=row.id, public_id=row.public_id, url=row.url,
                    enabled_events=tuple(json.loads(row.enabled_events)), enabled=row.enabled,
                    description=row.description, created_at=row.created_at, updated_at=row.updated_at)


def _live(caller: Caller) -> tuple:
    return (*scoped_to_mode(webhook_endpoints, caller), webhook_endpoints.c.deleted_at.is_(None))


def list_endpoints(conn: Connection, caller: Caller, *, before: int | None = None,
                   limit: int = 100) -> list[Endpoint]:
    """The caller's endpoints (not deleted), newest first, after row `before` when given."""
    query = select(webhook_endpoints).where(*_live(caller))
    if before is not None:
        query = query.where(webhook_endpoints.c.id < before)
    return [_endpoint(row) for row in conn.execute(
        query.order_by(webhook_endpoints.c.id.desc()).limit(limit))]


def get_endpoint(conn: Connection, caller: Caller, public_id: str) -> Endpoint:
    """One of the caller's endpoints; EndpointNotFound for any other id."""
    if not 0 < len(public_id) <= MAX_ENDPOINT_ID_LENGTH or not public_id.isprintable():
        raise EndpointNotFound(public_id)
    row = conn.execute(select(webhook_endpoints).where(
        *_live(caller), webhook_endpoints.c.public_id == public_id)).first()
    if row is None:
        raise EndpointNotFound(public_id)
    return _endpoint(row)


def stats(conn: Connection, endpoint: Endpoint, now: datetime) -> EndpointStats:
    """The endpoint's deliveries of the last STATS_WINDOW, by state, and its last success."""
    d = webhook_events.c
    counts = dict(conn.execute(
        select(d.state, func.count()).where(d.endpoint_id == endpoint.row_id,
                                            d.created_at >= now - STATS_WINDOW)
        .group_by(d.state)).all())
    failing = conn.execute(select(func.count()).where(
        d.endpoint_id == endpoint.row_id, d.created_at >= now - STATS_WINDOW, d.state == "pending",
        (d.last_error.is_not(None)) | (d.last_http_status.is_not(None)))).scalar_one()
    last = conn.execute(select(func.max(d.delivered_at)).where(d.endpoint_id == endpoint.row_id)).scalar_one()
    return EndpointStats(delivered=counts.get("delivered", 0), failed=counts.get("failed", 0) + failing,
                         pending=counts.get("pending", 0) - failing, last_success_at=last)


def active_secrets(conn: Connection, box, endpoint_ids: set[int], now: datetime) -> dict[int, list[str]]:
    """The secrets each endpoint signs with now, newest first."""
    found: dict[int, list[str]] = {endpoint_id: [] for endpoint_id in endpoint_ids}
    if not endpoint_ids:
        return found
    s = webhook_endpoint_secrets.c
    rows = conn.execute(select(s.endpoint_id, s.secret).where(
        s.endpoint_id.in_(endpoint_ids), s.expires_at.is_(None) | (s.expires_at > now)).order_by(s.id.desc()))
    for endpoint_id, sealed in rows:
        found[endpoint_id].append(box.open(sealed))
    return found


def secrets_of_endpoints_at(conn: Connection, box, merchant_id: int, path: str,
                            now: datetime) -> dict[Mode, list[str]]:
    """The secrets the merchant's endpoints whose URL has this path sign with now, by mode: the
    receiver Paydesk serves (the inbox) verifies its endpoints' deliveries with them."""
    rows = conn.execute(select(webhook_endpoints.c.id, webhook_endpoints.c.mode, webhook_endpoints.c.url).where(
        webhook_endpoints.c.merchant_id == merchant_id, webhook_endpoints.c.deleted_at.is_(None)))
    mode_of = {row.id: Mode(row.mode) for row in rows if urlsplit(row.url).path == path}
    found: dict[Mode, list[str]] = {}
    for endpoint_id, secrets_now in active_secrets(conn, box, set(mode_of), now).items():
        found.setdefault(mode_of[endpoint_id], []).extend(secrets_now)
    return found


# Changing endpoints

def create_endpoint(deps, caller: Caller, fields: dict) -> WithSecret:
    """A new endpoint of the caller's merchant and mode, with its first secret; audited."""
    now = deps.clock()
    public_id = "we_" + secrets.token_hex(12)
    with deps.uow() as uow:
        row_id = uow.conn.execute(insert(webhook_endpoints).values(
            public_id=public_id, merchant_id=caller.merchant_id, mode=caller.mode.value,
            url=fields["url"], enabled_events=json.dumps(list(fields["enabledEvents"])),
            enabled=fields.get("enabled", True), description=fields.get("description"),
            created_at=now, updated_at=now)).inserted_primary_key[0]
        secret = _add_secret(uow, row_id, now)
        uow.audit(caller, "webhook_endpoint.create", target=public_id, detail={"url": fields["url"]})
        endpoint = get_endpoint(uow.conn, caller, public_id)
        uow.commit()
    return WithSecret(endpoint, secret)


def update_endpoint(deps, caller: Caller, public_id: str, fields: dict) -> Endpoint:
    """Change the given fields; a disabled endpoint's waiting deliveries stop (Failed, resendable),
    a new URL takes the waiting ones with it. Audited."""
    now = deps.clock()
    with deps.uow() as uow:
        before = get_endpoint(uow.conn, caller, public_id)
        values: dict = {"updated_at": now}
        if "url" in fields:
            values["url"] = fields["url"]
        if "enabledEvents" in fields:
            values["enabled_events"] = json.dumps(list(fields["enabledEvents"]))
        if "enabled" in fields:
            values["enabled"] = fields["enabled"]
        if "description" in fields:
            values["description"] = fields["description"]
        uow.conn.execute(update(webhook_endpoints).where(webhook_endpoints.c.id == before.row_id).values(values))
        waiting = and_(webhook_events.c.endpoint_id == before.row_id, webhook_events.c.state == "pending")
        if "url" in fields and fields["url"] != before.url:
            uow.conn.execute(update(webhook_events).where(waiting).values(url=fields["url"]))
        if fields.get("enabled") is False and before.enabled:
            _stop_waiting(uow, before.row_id, DISABLED_ERROR)
        uow.audit(caller, "webhook_endpoint.update", target=public_id,
                  detail={key: (list(value) if isinstance(value, tuple) else value) for key, value in fields.items()})
        endpoint = get_endpoint(uow.conn, caller, public_id)
        uow.commit()
    return endpoint


def delete_endpoint(deps, caller: Caller, public_id: str) -> Endpoint:
    """Delete the endpoint: it gets no more deliveries (its log stays); audited."""
    now = deps.clock()
    with deps.uow() as uow:
        endpoint = get_endpoint(uow.conn, caller, public_id)
        uow.conn.execute(update(webhook_endpoints).where(webhook_endpoints.c.id == endpoint.row_id)
                         .values(deleted_at=now, enabled=False, updated_at=now))
        _stop_waiting(uow, endpoint.row_id, DELETED_ERROR)
        uow.audit(caller, "webhook_endpoint.delete", target=public_id)
        uow.commit()
    return endpoint


def rotate_secret(deps, caller: Caller, public_id: str, grace: timedelta = ROTATION_GRACE) -> WithSecret:
    """A new secret for the endpoint; the current one keeps signing beside it for `grace`. Audited."""
    now = deps.clock()
    until = now + grace
    with deps.uow() as uow:
        endpoint = get_endpoint(uow.conn, caller, public_id)
        s = webhook_endpoint_secrets.c
        uow.conn.execute(update(webhook_endpoint_secrets)
                         .where(s.endpoint_id == endpoint.row_id, s.expires_at.is_(None) | (s.expires_at > until))
                         .values(expires_at=until))
        secret = _add_secret(uow, endpoint.row_id, now)
        uow.audit(caller, "webhook_endpoint.rotate_secret", target=public_id)
        uow.commit()
    return WithSecret(endpoint, secret, previous_expires_at=until)


def resend_failed_since(deps, caller: Caller, public_id: str, since: datetime) -> int:
    """Queue again, each with a fresh retry schedule, the endpoint's Failed deliveries of events
    since `since`; how many. Audited."""
    now = deps.clock()
    e = webhook_events.c
    with deps.uow() as uow:
        endpoint = get_endpoint(uow.conn, caller, public_id)
        if not endpoint.enabled:
            raise FieldErrors.one("Endpoint", "Enable the endpoint before resending to it")
        resent = uow.conn.execute(
            update(webhook_events)
            .where(e.endpoint_id == endpoint.row_id, e.state == "failed", e.created_at >= since)
            .values(state="pending", next_attempt_at=now, next_attempt_manual=True,
                    schedule_offset=e.attempts)).rowcount
        uow.audit(caller, "webhook_endpoint.resend_failed", target=public_id,
                  detail={"since": since.isoformat(), "resent": resent})
        uow.commit()
    return resent


def _add_secret(uow, endpoint_row_id: int, now: datetime) -> str:
    secret = new_webhook_secret()
    if uow.box is None:
        raise RuntimeError("endpoint secrets are kept sealed: this unit of work has no SecretBox")
    uow.conn.execute(insert(webhook_endpoint_secrets).values(
        endpoint_id=endpoint_row_id, secret=uow.box.seal(secret), created_at=now))
    return secret


def _stop_waiting(uow, endpoint_row_id: int, why: str) -> None:
    """The endpoint's waiting deliveries are not sent: Failed, with why (a resend sends them)."""
    e = webhook_events.c
    uow.conn.execute(update(webhook_events).where(e.endpoint_id == endpoint_row_id, e.state == "pending")
                     .values(state="failed", next_attempt_at=None, last_error=why))


# Fan-out

def fan_out(deps, limit: int = FAN_OUT_BATCH) -> int:
    """Give the events not yet fanned out their endpoints' deliveries (see the module's docstring);
    how many events were fanned out."""
    now = deps.clock()
    v = events.c
    with deps.uow() as uow:
        rows = uow.conn.execute(
            select(v.id, v.merchant_id, v.mode, v.transaction_id, v.event_type, v.webhook_id, v.payload,
                   v.created_at)
            .where(v.fanned_out.is_(False)).order_by(v.id).limit(limit)
            .with_for_update(skip_locked=True)).all()
        if not rows:
            return 0
        merchants = {row.merchant_id for row in rows}
        endpoints = uow.conn.execute(select(webhook_endpoints).where(
            webhook_endpoints.c.merchant_id.in_(merchants), webhook_endpoints.c.enabled.is_(True),
            webhook_endpoints.c.deleted_at.is_(None))).all()
        deliveries = []
        for row in rows:
            for found in endpoints:
                endpoint = _endpoint(found)
                if (found.merchant_id, found.mode) != (row.merchant_id, row.mode) or \
                        found.created_at > row.created_at or not endpoint.takes(row.event_type):
                    continue
                deliveries.append(dict(
                    merchant_id=row.merchant_id, mode=row.mode, transaction_id=row.transaction_id,
                    webhook_id=endpoint_webhook_id(row.webhook_id, endpoint.public_id),
                    event_type=row.event_type, url=endpoint.url, payload=row.payload, state="pending",
                    attempts=0, next_attempt_at=now, created_at=row.created_at, event_id=row.id,
                    endpoint_id=endpoint.row_id))
        if deliveries:
            uow.conn.execute(insert(webhook_events), deliveries)
        uow.conn.execute(update(events).where(v.id.in_([row.id for row in rows])).values(fanned_out=True))
        uow.commit()
    return len(rows)

