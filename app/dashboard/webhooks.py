"""Webhook logs: what Paydesk sent (with every attempt, and Resend), what the merchant's inbox received,
and what the providers sent to the merchant's provider accounts."""
from __future__ import annotations

from flask import abort, current_app, flash, redirect, render_template, request, url_for
from flask_login import login_required

from app.payments.events import MAX_WEBHOOK_ID_LENGTH
from app.auth.users import current_caller, local_path, requires
from app.providers.accounts import PROVIDER_NAMES
from app.store import provider_accounts
from app.store.merchants import inbox_url, merchant_by_id
from app.util import could_be_key, whole_number
from app.web import deps
from app.webhooks import log
from app.webhooks.resend import WebhookNotFound, resend_event
from app.webhooks.settings import RETRY_DELAYS

from . import dashboard
from .formatting import duration, in_words
from .htmx import page_or_fragment, wants_fragment

PAGE_SIZE = 50
MAX_PAGES = 200  # the log pages by offset; deeper than this, use the transaction's own page
RETRY_SCHEDULE = in_words([duration(delay) for delay in RETRY_DELAYS])
PROVIDER_EVENTS_SHOWN = 100
# How a provider event's result is marked: acted on, refused; anything else (no change,
# ignored, duplicate, retry later) is neither.
RESULT_STATES = {"applied": "delivered", "bad signature": "failed", "bad payload": "failed",
                 "disconnected": "failed", "unknown transaction": "failed", "amount mismatch": "failed"}


def _page_number() -> int:
    page = whole_number(request.args.get("page", "1"), 5) or 1
    return min(page, MAX_PAGES)


def with_attempts(conn, deliveries: list[log.Delivery]) -> list[tuple[log.Delivery, list]]:
    """Each delivery beside its attempts, newest attempt first."""
    attempts = log.attempts_by_webhook(conn, current_caller(), [d.webhook_id for d in deliveries])
    return [(d, list(reversed(attempts[d.webhook_id]))) for d in deliveries]


@dashboard.get("/webhooks")
@login_required
def webhooks():
    """Webhook deliveries of this mode, newest first (those in one state when asked): state,
    attempts, last answer, next try."""
    page, caller = _page_number(), current_caller()
    state = request.args.get("state", "")
    problems = [] if state in ("", *log.DELIVERY_STATES) else [f"Unknown state {state[:20]!r}"]
    found = []
    with deps().uow(write=False) as uow:
        if not problems:
            found = log.list_deliveries(uow.conn, caller, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE,
                                        state=state or None)
        rows = with_attempts(uow.conn, found[:PAGE_SIZE])
    return render_template("dashboard/webhooks.html", rows=rows, page=page, state=state,
                           states=log.DELIVERY_STATES, problems=problems,
                           has_more=len(found) > PAGE_SIZE and page < MAX_PAGES,
                           retry_schedule=RETRY_SCHEDULE)


@dashboard.post("/webhooks/<webhook_id>/resend")
@requires("resend_webhook")
def resend_webhook(webhook_id: str):
    """Queue the event for an immediate new attempt (audited); the worker sends it."""
    caller = current_caller()
    if not could_be_key(webhook_id, MAX_WEBHOOK_ID_LENGTH):
        abort(404)
    try:
        delivery = resend_event(deps(), caller, webhook_id)
    except WebhookNotFound:
        abort(404)
    if not wants_fragment():
        flash(f"Webhook {webhook_id} will be sent again in a moment.", "success")
        return redirect(local_path(request.form.get("back")) or url_for("dashboard.webhooks"), 303)
    with deps().uow(write=False) as uow:
        (row,) = with_attempts(uow.conn, [delivery])
    # The delivery then asks for its progress until the attempt after those it has now is made.
    return page_or_fragment("dashboard/_delivery.html", "dashboard/_delivery.html", row=row,
                            notice="Queued: the worker sends it again within seconds.",
                            watch_after=delivery.attempts)


@dashboard.get("/webhooks/<webhook_id>/progress")
@login_required
def webhook_progress(webhook_id: str):
    """What a resent delivery asks for every few seconds (htmx polling, see _delivery.html):
    nothing (204) until it has more than `after` attempts; then the delivery with its new
    attempts, and the polling stops."""
    after = whole_number(request.args.get("after", ""), 9)
    if after is None or not could_be_key(webhook_id, MAX_WEBHOOK_ID_LENGTH):
        abort(404)
    caller = current_caller()
    with deps().uow(write=False) as uow:
        delivery = log.get_delivery(uow.conn, caller, webhook_id)
        if delivery is None:
            abort(404)
        if delivery.attempts <= after:
            return "", 204
        (row,) = with_attempts(uow.conn, [delivery])
    latest = row[1][0]
    answer = f"HTTP {latest.http_status}" if latest.http_status else "no answer"
    return render_template("dashboard/_delivery.html", row=row, attempts_open=True,
                           notice=f"Attempt {latest.attempt_no}: {answer}; the delivery is {delivery.state}.",
                           notice_kind="success" if delivery.state == "delivered" else "info")


@dashboard.get("/webhooks/inbox")
@login_required
def inbox():
    """Webhooks received at the merchant's inbox URL: headers, body, signature verdict, duplicates."""
    page, caller = _page_number(), current_caller()
    with deps().uow(write=False) as uow:
        found = log.list_inbox(uow.conn, caller, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
        merchant = merchant_by_id(uow.conn, caller.merchant_id)
    return render_template("dashboard/inbox.html", messages=found[:PAGE_SIZE], page=page,
                           inbox_url=inbox_url(current_app.config["BASE_URL"], merchant.inbox_key),
                           has_more=len(found) > PAGE_SIZE and page < MAX_PAGES)


@dashboard.get("/webhooks/providers")
@login_required
def provider_events():
    """Webhooks the providers sent to the merchant's accounts of this mode, newest first, with what came of them."""
    with deps().uow(write=False) as uow:
        events = provider_accounts.events_of(uow.conn, current_caller(), limit=PROVIDER_EVENTS_SHOWN)
    return render_template("dashboard/provider_events.html", events=events, names=PROVIDER_NAMES,
                           result_states=RESULT_STATES, shown=PROVIDER_EVENTS_SHOWN)
