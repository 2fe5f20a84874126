"""Settings -> Providers (admin): the merchant's Paystack and Stripe accounts in the current mode.

Connecting, testing and disconnecting go through app.providers.accounts, the same functions
`flask provider` uses; it seals the keys and writes the audit entries. Testing only asks: a worker
calls the provider (app.providers.connection_tests), never a request.
"""
from __future__ import annotations

from flask import abort, current_app, flash, make_response, redirect, render_template, url_for
from flask_wtf import FlaskForm
from wtforms import PasswordField, SelectChoice, SelectField, StringField

from app.auth.users import current_caller, requires
from app.payments.model import FieldErrors
from app.providers import accounts
from app.providers.methods import PROVIDER_METHODS
from app.store import provider_accounts as store
from app.web import deps

from . import dashboard
from .htmx import wants_fragment
from .settings import ROW_ID


class ProviderForm(FlaskForm):
    """A provider account for the current mode. It has no validators: the service checks the
    values, so the dashboard and the CLI give the same messages."""

    class Meta:
        csrf = False  # CSRFProtect checks every POST already (form field or X-CSRFToken header)

    provider = SelectField("Provider", validate_choice=False, choices=[
        SelectChoice(p, accounts.PROVIDER_NAMES[p]) for p in accounts.PROVIDERS])
    secret_key = PasswordField(
        "Secret key", description="From the provider's dashboard: sk_test_… for sandbox, sk_live_… for live",
        render_kw={"autocomplete": "off", "spellcheck": "false"})
    webhook_secret = PasswordField(
        "Webhook secret", description="Required for Stripe: the signing secret (whsec_…) of the "
                                      "webhook endpoint. Not used by Paystack.",
        render_kw={"autocomplete": "off", "spellcheck": "false"})
    base_url = StringField(
        "Base URL", description="Optional, for tests and regional hosts; leave empty for the provider's public API",
        render_kw={"autocomplete": "off", "spellcheck": "false", "inputmode": "url"})

    # The service's field names -> this form's fields.
    FIELDS = {"provider": "provider", "secretKey": "secret_key", "webhookSecret": "webhook_secret",
              "baseUrl": "base_url"}

    def show(self, errors: dict[str, list[str]]) -> None:
        """Put the service's field errors beside the fields they are about."""
        for name, messages in errors.items():
            field = getattr(self, self.FIELDS.get(name, "provider"))
            field.errors = [*field.errors, *messages]


def _providers_page(status: int = 200, form: ProviderForm | None = None):
    caller = current_caller()
    with deps().uow(write=False) as uow:
        found = store.accounts_of(uow.conn, caller)
    base_url, now = current_app.config["BASE_URL"], deps().clock()
    return render_template(
        "dashboard/providers.html", accounts=found, names=accounts.PROVIDER_NAMES,
        webhook_urls={a.id: accounts.webhook_url(base_url, a.webhook_key) for a in found},
        tests={a.id: accounts.connection_test_state(a, now) for a in found},
        form=form or ProviderForm(formdata=None),
    ), status


def _account_or_404(account_id: int) -> store.ProviderAccount:
    """The caller's connected account in its mode; 404 for another merchant's, mode's or a
    disconnected one (there is nothing left to test or disconnect)."""
    with deps().uow(write=False) as uow:
        account = store.caller_account(uow.conn, current_caller(), account_id)
    if account is None or not account.connected:
        abort(404)
    return account


@dashboard.get("/settings/providers")
@requires("manage_settings")
def providers():
    """The mode's provider accounts, and the form to connect one."""
    return _providers_page()


@dashboard.post("/settings/providers")
@requires("manage_settings")
def connect_provider():
    """Connect an account (or replace the keys of the connected one) and say what to set at the provider."""
    form, caller, app_deps = ProviderForm(), current_caller(), deps()
    try:
        connected = accounts.connect(
            app_deps.uow, app_deps.providers.box, caller, form.provider.data or "",
            secret_key=form.secret_key.data or "", webhook_secret=form.webhook_secret.data,
            base_url=form.base_url.data, paydesk_url=current_app.config["BASE_URL"],
            now=app_deps.clock())
    except FieldErrors as refused:
        form.show(refused.errors)
        return _providers_page(422, form)
    return render_template("dashboard/provider_connected.html", connected=connected,
                           name=accounts.PROVIDER_NAMES[connected.provider],
                           methods=PROVIDER_METHODS[connected.provider],
                           steps=accounts.setup_steps(connected.provider, caller.mode))


@dashboard.post(f"/settings/providers/<{ROW_ID}:account_id>/test")
@requires("manage_settings")
def test_provider_connection(account_id: int):
    """Ask a worker to test the account's connection and answer at once: "Asking Paystack…" in
    place (it asks again until the answer is stored), or without JavaScript back to the page."""
    account = _account_or_404(account_id)
    if not accounts.request_test(deps().uow, current_caller(), account_id, deps().clock()):
        abort(404)  # disconnected meanwhile
    if not wants_fragment():
        flash(f"Paydesk is asking {accounts.PROVIDER_NAMES[account.provider]}; reload this page "
              "for the answer", "info")
        return redirect(url_for("dashboard.providers", _anchor=f"account-{account_id}"), 303)
    return _connection_test(_account_or_404(account_id), asked_now=True)


@dashboard.get(f"/settings/providers/<{ROW_ID}:account_id>/test")
@requires("manage_settings")
def provider_connection_test(account_id: int):
    """Where the account's latest test stands (the in-place answer asks here until it is stored)."""
    account = _account_or_404(account_id)
    if wants_fragment():
        return _connection_test(account)
    response = redirect(url_for("dashboard.providers", _anchor=f"account-{account_id}"), 303)
    response.vary.add("HX-Request")
    return response


def _connection_test(account: store.ProviderAccount, asked_now: bool = False):
    """The test's fragment: asking (read out once, when just asked), or its answer."""
    response = make_response(render_template(
        "dashboard/_provider_test.html", account=account, asked_now=asked_now,
        test=accounts.connection_test_state(account, deps().clock())))
    response.vary.add("HX-Request")
    return response


@dashboard.get(f"/settings/providers/<{ROW_ID}:account_id>/disconnect")
@requires("manage_settings")
def confirm_disconnect_provider(account_id: int):
    """Say what disconnecting does before doing it."""
    account = _account_or_404(account_id)
    return render_template("dashboard/provider_disconnect.html", account=account,
                           name=accounts.PROVIDER_NAMES[account.provider],
                           methods=PROVIDER_METHODS[account.provider])


@dashboard.post(f"/settings/providers/<{ROW_ID}:account_id>/disconnect")
@requires("manage_settings")
def disconnect_provider(account_id: int):
    """Forget the account's keys and stop its methods (audited)."""
    account = _account_or_404(account_id)
    if not accounts.disconnect(deps().uow, current_caller(), account_id, deps().clock()):
        abort(404)  # disconnected meanwhile
    flash(f"{accounts.PROVIDER_NAMES[account.provider]} is disconnected: its methods take no new "
          "transactions.", "success")
    return redirect(url_for("dashboard.providers"), 303)
