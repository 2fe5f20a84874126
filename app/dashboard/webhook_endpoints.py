"""Settings → Webhook endpoints (admin): list, create, edit, disable, delete, rotate a secret; an
endpoint's page with its success rate, last success, recent deliveries and "Resend all failed
since". The same services as /api/v1/webhook-endpoints (app.webhooks.endpoints)."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC

from flask import abort, current_app, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import BooleanField, DateTimeLocalField, SelectChoice, SelectMultipleField, StringField
from wtforms.widgets import CheckboxInput, ListWidget

from app.auth.users import current_caller, requires
from app.payments.events import EVENT_TYPES, SENT_EVENT_TYPES
from app.payments.model import FieldErrors
from app.web import deps
from app.webhooks import endpoints, log, receiver_check
from app.webhooks.settings import DeliverySettings

from . import dashboard
from .formatting import display
from .htmx import wants_fragment
from .settings import _reveal
from .webhooks import with_attempts

RECENT_DELIVERIES = 20
EVERY_EVENT = "Every event type (*)"
# The form's field of each API field, for the services' messages.
FORM_FIELDS = {"Url": "url", "EnabledEvents": "events", "Enabled": "enabled", "Description": "description"}


class EndpointForm(FlaskForm):
    """An endpoint's settings, as the API takes them."""

    class Meta:
        csrf = False  # CSRFProtect checks every POST already

    url = StringField("URL", description="http or https; Paydesk POSTs each event to it, signed",
                      render_kw={"spellcheck": "false", "autocomplete": "off"})
    description = StringField("Description", description="Optional; what receives these events")
    events = SelectMultipleField("Event types", option_widget=CheckboxInput(), widget=ListWidget(prefix_label=False),
                                 description="Choose every event type, or some of them")
    enabled = BooleanField("Enabled", default=True, description="A disabled endpoint gets no deliveries")

    def __init__(self, *args, kept: Iterable[str] = (), **kwargs):
        """`kept`: types the endpoint already takes, offered even if Paydesk never sends them
        (the API accepts every one of EVENT_TYPES), so saving the form does not drop them."""
        super().__init__(*args, **kwargs)
        offered = set(SENT_EVENT_TYPES) | set(kept)
        self.events.choices = [SelectChoice("*", EVERY_EVENT),
                               *(SelectChoice(t, t) for t in EVENT_TYPES if t in offered)]


class ResendForm(FlaskForm):
    """Resend an endpoint's failed deliveries since a time, in the reader's time zone as every
    time on the page is."""

    class Meta:
        csrf = False

    since = DateTimeLocalField("Failed since", format="%Y-%m-%dT%H:%M")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.since.label.text = f"Failed since ({display().zone})"


def _fields(form: EndpointForm) -> dict:
    """The form as the API's fields, checked by the same rules; errors go onto the form."""
    body = {"url": (form.url.data or "").strip(), "enabledEvents": list(form.events.data or []),
            "description": (form.description.data or "").strip() or None, "enabled": bool(form.enabled.data)}
    guard = DeliverySettings.from_config(current_app.config).guard
    try:
        return endpoints.read_fields(body, guard, partial=False)
    except FieldErrors as error:
        for name, messages in error.errors.items():
            getattr(form, FORM_FIELDS.get(name, "url")).errors = list(messages)
        return {}


def _endpoint_or_404(caller, endpoint_id: str) -> endpoints.Endpoint:
    try:
        with deps().uow(write=False) as uow:
            return endpoints.get_endpoint(uow.conn, caller, endpoint_id)
    except endpoints.EndpointNotFound:
        abort(404)


def _list_page(form: EndpointForm | None = None, status: int = 200):
    caller = current_caller()
    with deps().uow(write=False) as uow:
        found = endpoints.list_endpoints(uow.conn, caller)
        stats = {e.public_id: endpoints.stats(uow.conn, e, deps().clock()) for e in found}
    return render_template("dashboard/webhook_endpoints.html", endpoints=found, stats=stats,
                           form=form or EndpointForm(formdata=None, events=["*"])), status


def _endpoint_page(endpoint: endpoints.Endpoint, form: EndpointForm | None = None,
                   resend_form: ResendForm | None = None, status: int = 200,
                   check: receiver_check.Check | None = None):
    caller = current_caller()
    with deps().uow(write=False) as uow:
        stats = endpoints.stats(uow.conn, endpoint, deps().clock())
        deliveries = log.list_deliveries(uow.conn, caller, endpoint_row_id=endpoint.row_id,
                                         limit=RECENT_DELIVERIES)
        rows = with_attempts(uow.conn, deliveries)
    form = form or EndpointForm(formdata=None, url=endpoint.url, description=endpoint.description,
                                events=list(endpoint.enabled_events), enabled=endpoint.enabled,
                                kept=endpoint.enabled_events)
    return render_template("dashboard/webhook_endpoint.html", endpoint=endpoint, stats=stats, rows=rows,
                           form=form, resend_form=resend_form or ResendForm(formdata=None),
                           check=check), status


@dashboard.get("/settings/webhook-endpoints")
@requires("manage_settings")
def webhook_endpoints():
    """The merchant's endpoints of this mode, each with its success rate, and the form for a new one."""
    return _list_page()


@dashboard.post("/settings/webhook-endpoints")
@requires("manage_settings")
def webhook_endpoint_create():
    """Create an endpoint and show its secret once."""
    form = EndpointForm()
    fields = _fields(form)
    if not fields:
        return _list_page(form, 422)
    created = endpoints.create_endpoint(deps(), current_caller(), fields)
    page = url_for("dashboard.webhook_endpoint", endpoint_id=created.endpoint.public_id)
    return _reveal("New webhook endpoint", "Signing secret of " + created.endpoint.url, created.secret,
                   "Verify each delivery's webhook-signature with this secret (Standard Webhooks). "
                   "Copy it now: it is not shown again.", back=page, back_label="Endpoint")


@dashboard.get("/settings/webhook-endpoints/<endpoint_id>")
@requires("manage_settings")
def webhook_endpoint(endpoint_id: str):
    """One endpoint: its settings, success rate, last success and recent deliveries."""
    return _endpoint_page(_endpoint_or_404(current_caller(), endpoint_id))


@dashboard.post("/settings/webhook-endpoints/<endpoint_id>")
@requires("manage_settings")
def webhook_endpoint_update(endpoint_id: str):
    """Save the endpoint's settings (disabling stops its waiting deliveries)."""
    caller = current_caller()
    endpoint = _endpoint_or_404(caller, endpoint_id)
    form = EndpointForm(kept=[*endpoint.enabled_events, *request.form.getlist("events")])
    fields = _fields(form)
    if not fields:
        return _endpoint_page(endpoint, form=form, status=422)
    endpoints.update_endpoint(deps(), caller, endpoint_id, fields)
    flash("Endpoint saved.", "success")
    return redirect(url_for("dashboard.webhook_endpoint", endpoint_id=endpoint_id), 303)


@dashboard.post("/settings/webhook-endpoints/<endpoint_id>/rotate")
@requires("manage_settings")
def webhook_endpoint_rotate(endpoint_id: str):
    """A new secret for the endpoint, shown once; the old one signs beside it for 24 hours."""
    try:
        rotated = endpoints.rotate_secret(deps(), current_caller(), endpoint_id)
    except endpoints.EndpointNotFound:
        abort(404)
    page = url_for("dashboard.webhook_endpoint", endpoint_id=endpoint_id)
    return _reveal("New endpoint secret", "Signing secret of " + rotated.endpoint.url, rotated.secret,
                   "Deliveries are signed with both the new and the old secret for 24 hours, so your "
                   "receiver can switch without losing any. Copy it now: it is not shown again.",
                   back=page, back_label="Endpoint")


@dashboard.post("/settings/webhook-endpoints/<endpoint_id>/delete")
@requires("manage_settings")
def webhook_endpoint_delete(endpoint_id: str):
    """Delete the endpoint: no more deliveries go to it."""
    try:
        deleted = endpoints.delete_endpoint(deps(), current_caller(), endpoint_id)
    except endpoints.EndpointNotFound:
        abort(404)
    flash(f"Endpoint {deleted.url} is deleted: it gets no more deliveries.", "success")
    return redirect(url_for("dashboard.webhook_endpoints"), 303)


@dashboard.post("/settings/webhook-endpoints/<endpoint_id>/resend-failed")
@requires("manage_settings")
def webhook_endpoint_resend(endpoint_id: str):
    """Queue again the endpoint's failed deliveries since the time given."""
    caller = current_caller()
    endpoint = _endpoint_or_404(caller, endpoint_id)
    form = ResendForm()
    if not form.validate() or form.since.data is None:
        form.since.errors = ["Give the time the failures began, e.g. 2026-11-30 12:00"]
        return _endpoint_page(endpoint, resend_form=form, status=422)
    shown = display()  # the time was typed in the reader's zone
    since = form.since.data.replace(tzinfo=shown.tz)
    try:
        resent = endpoints.resend_failed_since(deps(), caller, endpoint_id, since.astimezone(UTC))
    except FieldErrors as error:
        form.since.errors = [message for messages in error.errors.values() for message in messages]
        return _endpoint_page(endpoint, resend_form=form, status=422)
    flash(f"{resent} failed {'delivery' if resent == 1 else 'deliveries'} since "
          f"{since:%Y-%m-%d %H:%M} {shown.zone} will be sent again in a moment.", "success")
    return redirect(url_for("dashboard.webhook_endpoint", endpoint_id=endpoint_id), 303)


@dashboard.post("/settings/webhook-endpoints/<endpoint_id>/check")
@requires("manage_settings")
def webhook_endpoint_check(endpoint_id: str):
    """Ask a worker to check the endpoint's receiver; the answer polls for the result (htmx)."""
    caller = current_caller()
    try:
        check = receiver_check.request_check(deps(), caller, endpoint_id)
    except endpoints.EndpointNotFound:
        abort(404)
    if wants_fragment():
        return render_template("dashboard/_receiver_check.html", check=check, endpoint_id=endpoint_id)
    return _endpoint_page(_endpoint_or_404(caller, endpoint_id), check=check)


@dashboard.get("/settings/webhook-endpoints/<endpoint_id>/checks/<check_id>")
@requires("manage_settings")
def webhook_endpoint_check_result(endpoint_id: str, check_id: str):
    """A receiver check as it stands (what the check's fragment polls until it is done)."""
    try:
        with deps().uow(write=False) as uow:
            check = receiver_check.get_check(uow.conn, current_caller(), endpoint_id, check_id)
    except (endpoints.EndpointNotFound, receiver_check.CheckNotFound):
        abort(404)
    return render_template("dashboard/_receiver_check.html", check=check, endpoint_id=endpoint_id)
