"""One delivery attempt over HTTP: signed, guarded, time-limited, and its outcome in words (no database work)."""
from __future__ import annotations

import time
from datetime import datetime

import requests
from urllib3 import Timeout
from urllib3.exceptions import HTTPError, NameResolutionError, NewConnectionError

from .guard import TargetRefused, check_url
from .outbox import AttemptResult, ClaimedEvent
from .settings import DeliverySettings
from .signing import signed_headers

EXCERPT_BYTES = 4096
# A URL requests cannot use will never work: the event fails at once.
UNUSABLE_URL = (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                requests.exceptions.MissingSchema)


def send(session: requests.Session, settings: DeliverySettings, event: ClaimedEvent,
         sent_at: datetime) -> AttemptResult:
    """Make one HTTP attempt (no database work here)."""
    headers = {}
    started = time.monotonic()

    def result(**values) -> AttemptResult:
        elapsed_ms = round((time.monotonic() - started) * 1000)
        return AttemptResult(started_at=sent_at, duration_ms=elapsed_ms,
                             request_headers=headers, **values)

    if not event.secrets:  # the merchant needs a secret first; the schedule tries again later
        return result(error=f"Not sent: no active {event.mode.value} webhook secret")
    try:
        check_url(event.url)
        headers = signed_headers(event.webhook_id, sent_at, event.payload, event.secrets)
        response = session.post(
            event.url, data=event.payload.encode(), headers=headers, allow_redirects=False,
            stream=True, timeout=Timeout(connect=settings.connect_timeout, read=settings.timeout,
                                         total=settings.timeout))
    except TargetRefused as refused:
        return result(error=str(refused), stop_retrying=True)
    except UNUSABLE_URL as error:
        return result(error=f"Refused: callbackUrl is not usable ({error})"[:500], stop_retrying=True)
    except requests.RequestException as error:
        return result(error=_describe(error, settings))
    with response:
        excerpt, read_error = _excerpt(response)
    elapsed = time.monotonic() - started
    status = response.status_code
    if 200 <= status < 300:
        if elapsed <= settings.timeout:
            return result(http_status=status, response_excerpt=excerpt, delivered=True)
        return result(http_status=status, response_excerpt=excerpt,
                      error=f"Answered after {elapsed:.1f} s, over the {settings.timeout:g} s limit")
    if status == 410:
        return result(http_status=status, response_excerpt=excerpt,
                      error="410 Gone: the receiver asked for no more deliveries", stop_retrying=True)
    if 300 <= status < 400:
        location = response.headers.get("Location", "")[:300]
        return result(http_status=status, response_excerpt=excerpt,
                      error=f"Redirects are not followed (Location: {location})")
    return result(http_status=status, response_excerpt=excerpt, error=read_error)


def _excerpt(response: requests.Response) -> tuple[str, str | None]:
    """The first 4 KiB of the answer (the rest is never read) and a read error, if any."""
    try:
        data = response.raw.read(EXCERPT_BYTES, decode_content=True)
    except (HTTPError, OSError) as error:
        return "", f"Answer body could not be read: {type(error).__name__}"
    return data.decode("utf-8", "replace"), None


def _describe(error: requests.RequestException, settings: DeliverySettings) -> str:
    """A short, readable reason for a failed request."""
    if isinstance(error, requests.ConnectTimeout):
        return f"Connection timed out after {settings.connect_timeout:g} s"
    if isinstance(error, requests.Timeout):
        return f"No answer within {settings.timeout:g} s"
    reason = error.args[0] if error.args else error
    reason = getattr(reason, "reason", reason)
    if isinstance(reason, NameResolutionError):
        return f"Could not resolve host {reason.conn.host if reason.conn else ''}".strip()
    if isinstance(reason, NewConnectionError):
        cause = reason.__cause__ or reason.__context__
        detail = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(reason)
        return f"Connection failed: {detail}"[:500]
    if isinstance(error, requests.exceptions.SSLError):
        return f"TLS error: {reason}"[:500]
    return f"{type(error).__name__}: {reason}"[:500]
