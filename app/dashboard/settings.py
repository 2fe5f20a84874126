"""Settings (admin): API tokens, webhook secrets, the inbox URL, users and roles, sandbox reset
(provider accounts: providers.py).

Every credential or user change writes an audit entry in the same transaction.
"""
from __future__ import annotations

from datetime import UTC, datetime, time

from flask import (
    abort,
    current_app,
    flash,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user

from app.auth.api_tokens import forget_checked_tokens
from app.auth.users import ROLE_DESCRIPTIONS, current_caller, requires
from app.payments import sandbox
from app.payments.tokens import SCOPE_DESCRIPTIONS, describe_limit, parse_limits, parse_networks
from app.store import credentials, request_log
from app.store.password_links import INVITE
from app.store.user_sessions import end_sessions_of
from app.store import users as staff
from app.store.merchants import (
    ROLES,
    create_user,
    inbox_url,
    issue_token,
    set_time_zone,
    merchant_by_id,
    revoke_token,
    rotate_webhook_secret,
)
from app.web import deps

from . import dashboard
from .forms import MerchantTimeZoneForm, NewUserForm, TokenForm
from .password_links import mail_already_a_user, mail_link, new_link
from .navigation import SETTINGS_TABS, nav_items

# Row ids are 64-bit integers: a larger number in a URL names no row (and neither database
# would take it as a parameter), so the route does not match it.
ROW_ID = f"int(max={2**63 - 1})"
LAST_ADMIN = "A merchant needs at least one active admin: make someone else admin first."
ALREADY_A_USER = "This e-mail is already a user of this merchant."


@dashboard.app_context_processor
def settings_navigation() -> dict:
    """The tabs of the settings pages (general, providers), the current one marked."""
    if request.blueprint != "dashboard" or not current_user.is_authenticated:
        return {"settings_tabs": []}
    return {"settings_tabs": nav_items(SETTINGS_TABS, request.endpoint)}


def _settings_page(status: int = 200, token_form=None, user_form=None, zone_form=None):
    caller = current_caller()
    with deps().uow(write=False) as uow:
        merchant = merchant_by_id(uow.conn, caller.merchant_id)
        tokens = credentials.api_tokens_of(uow.conn, caller)
        last_used = request_log.last_used(uow.conn, [t.id for t in tokens])
        secrets = credentials.webhook_secrets_of(uow, caller, deps().clock())
        members = staff.users_of(uow.conn, caller)
    return render_template(
        "dashboard/settings.html", tokens=tokens, secrets=secrets, last_used=last_used,
        scope_descriptions=SCOPE_DESCRIPTIONS, describe_limit=describe_limit, members=members,
        inbox_url=inbox_url(current_app.config["BASE_URL"], merchant.inbox_key),
        default_callback_url=merchant.default_callback_url, roles=ROLES,
        role_descriptions=ROLE_DESCRIPTIONS, token_form=token_form or TokenForm(formdata=None),
        two_factor_required=merchant.require_two_factor,
        user_form=user_form or NewUserForm(formdata=None),
        zone_form=zone_form or MerchantTimeZoneForm(formdata=None, time_zone=merchant.time_zone),
    ), status


def _reveal(title: str, what: str, secret: str, note: str, back: str | None = None,
            back_label: str | None = None):
    """Show a new credential once: never stored in clear, never cached, never shown again."""
    response = make_response(render_template("dashboard/reveal.html", title=title, what=what,
                                             secret=secret, note=note, back=back, back_label=back_label))
    response.headers["Cache-Control"] = "no-store"
    return response


@dashboard.get("/settings")
@requires("manage_settings")
def settings():
    """Credentials and users of the merchant, for the current mode where they belong to one."""
    return _settings_page()


@dashboard.post("/settings/tokens")
@requires("manage_settings")
def create_token():
    """Issue an API token for the current mode and show it once."""
    form = TokenForm()
    if not form.validate():
        return _settings_page(422, token_form=form)
    caller = current_caller()
    label = (form.label.data or "").strip()
    expires_at = (datetime.combine(form.expires_on.data, time(0), tzinfo=UTC)
                  if form.expires_on.data else None)
    networks = parse_networks(form.networks.data or "")
    limits = parse_limits(form.limits.data or "")
    with deps().uow() as uow:
        token = issue_token(uow.conn, caller.merchant_id, caller.mode, label, scopes=form.scopes.data,
                            expires_at=expires_at, networks=networks, limits=limits,
                            created_by=caller.actor)
        uow.audit(caller, "token.create", target=token[:12], detail={
            "label": label, "scopes": form.scopes.data,
            "expiresAt": expires_at.isoformat() if expires_at else None,
            "networks": [str(n) for n in networks], "limits": [describe_limit(l) for l in limits]})
        uow.commit()
    return _reveal("New API token", f"{caller.mode.value.title()} API token", token,
                   "Copy it now: Paydesk keeps only its hash and cannot show it again.")


@dashboard.post(f"/settings/tokens/<{ROW_ID}:token_id>/revoke")
@requires("manage_settings")
def revoke(token_id: int):
    """Revoke one of the merchant's tokens; requests with it fail from now on (this process),
    and within TOKEN_CACHE_SECONDS on every other."""
    caller = current_caller()
    with deps().uow() as uow:
        prefix = credentials.api_token_prefix(uow.conn, caller, token_id)
        if prefix is None:
            abort(404)
        if revoke_token(uow.conn, caller.merchant_id, token_id):
            uow.audit(caller, "token.revoke", target=prefix)
        uow.commit()
    forget_checked_tokens(current_app)  # other processes forget it within TOKEN_CACHE_SECONDS
    flash(f"Token {prefix}… is revoked.", "success")
    return redirect(url_for("dashboard.settings", _anchor="tokens"), 303)


@dashboard.post("/settings/time-zone")
@requires("manage_settings")
def set_merchant_time_zone():
    """The time zone every member reads times in (a member's own choice overrides it)."""
    form = MerchantTimeZoneForm()
    if not form.validate():
        return _settings_page(422, zone_form=form)
    caller = current_caller()
    with deps().uow() as uow:
        set_time_zone(uow.conn, caller.merchant_id, form.time_zone.data)
        uow.audit(caller, "merchant.time_zone", target=form.time_zone.data, both_modes=True)
        uow.commit()
    flash(f"Times are shown in {form.time_zone.data} for members who have not chosen their own.",
          "success")
    return redirect(url_for("dashboard.settings", _anchor="time-zone"), 303)


@dashboard.post("/settings/webhook-secret")
@requires("manage_settings")
def rotate_secret():
    """A new signing secret for the mode; the old one keeps signing for 24 hours beside it."""
    caller = current_caller()
    with deps().uow() as uow:
        secret = rotate_webhook_secret(uow, caller.merchant_id, caller.mode)
        uow.audit(caller, "webhook_secret.rotate", target=secret[:10])
        uow.commit()
    return _reveal("New webhook secret", f"{caller.mode.value.title()} webhook signing secret", secret,
                   "Deliveries are signed with both the new and the old secret for 24 hours, "
                   "so your receiver can switch without losing any. Copy it now: it is not shown again.")


@dashboard.post("/settings/users")
@requires("manage_settings")
def add_user():
    """Invite a dashboard user of the merchant with a role: they choose their own password
    through a one-time link that is e-mailed to them (or logged, without SMTP_HOST).

    An e-mail signs in to one merchant. When another merchant's user has it, the answer is the
    very one a new address gets, and that person is e-mailed a notice instead of an invitation:
    the answer never tells whether someone uses Paydesk elsewhere.
    """
    form = NewUserForm()
    if not form.validate():
        return _settings_page(422, user_form=form)
    email, caller = form.email.data.strip().lower(), current_caller()
    with deps().uow() as uow:
        owner = staff.merchant_of_email(uow.conn, email)
        if owner == caller.merchant_id:
            form.email.errors = [ALREADY_A_USER]
            return _settings_page(422, user_form=form)
        if owner is None:
            user_id = create_user(uow.conn, caller.merchant_id, email, form.role.data, None)
            uow.audit(caller, "user.create", target=email, detail={"role": form.role.data},
                      both_modes=True)
            link = new_link(uow, caller, user_id, email, INVITE)
            uow.commit()
    if owner is None:
        mail_link(caller, email, INVITE, link)
    else:
        mail_already_a_user(caller, email)
    flash(f"Invitation sent to {email}.", "success")
    return redirect(url_for("dashboard.settings", _anchor="users"), 303)


@dashboard.post(f"/settings/users/<{ROW_ID}:user_id>/role")
@requires("manage_settings")
def change_role(user_id: int):
    """Give a user another role; it applies on their next request."""
    role = request.form.get("role", "")
    if role not in ROLES:
        abort(400)
    caller = current_caller()
    with deps().uow() as uow:
        member = _member(uow, caller, user_id)
        if role != "admin" and _is_last_admin(uow, caller, member):
            flash(LAST_ADMIN, "error")
            return redirect(url_for("dashboard.settings", _anchor="users"), 303)
        staff.set_role(uow.conn, caller, user_id, role)
        uow.audit(caller, "user.role", target=member.email,
                  detail={"from": member.role, "to": role}, both_modes=True)
        uow.commit()
    flash(f"{member.email} is now {role}.", "success")
    return redirect(url_for("dashboard.settings", _anchor="users"), 303)


@dashboard.post(f"/settings/users/<{ROW_ID}:user_id>/active")
@requires("manage_settings")
def set_active(user_id: int):
    """Deactivate a user (signed out at once) or let them sign in again."""
    active, caller = request.form.get("active") == "1", current_caller()
    with deps().uow() as uow:
        member = _member(uow, caller, user_id)
        if not active and _is_last_admin(uow, caller, member):
            flash(LAST_ADMIN, "error")
            return redirect(url_for("dashboard.settings", _anchor="users"), 303)
        staff.set_active(uow.conn, caller, user_id, active)
        if not active:
            end_sessions_of(uow.conn, user_id, deps().clock(), "deactivated")
        uow.audit(caller, "user.activate" if active else "user.deactivate", target=member.email,
                  both_modes=True)
        uow.commit()
    flash(f"{member.email} is {'active again' if active else 'deactivated'}.", "success")
    return redirect(url_for("dashboard.settings", _anchor="users"), 303)


def _member(uow, caller, user_id: int):
    """The caller's merchant's user with this id; 404 for anyone else's."""
    member = staff.user_of(uow.conn, caller, user_id)
    if member is None:
        abort(404)
    return member


def _is_last_admin(uow, caller, member) -> bool:
    """The merchant's only active admin, who must keep both the role and access."""
    return member.role == "admin" and member.active and staff.active_admins(uow.conn, caller) <= 1


@dashboard.post("/settings/sandbox/reset")
@requires("manage_settings")
def reset_sandbox():
    """Restore the sandbox test transactions (SBX-...) to their starting states."""
    caller = current_caller()
    sandbox.reset_sandbox(deps(), caller)
    flash("Sandbox test transactions are back to their starting states.", "success")
    return redirect(url_for("dashboard.settings", _anchor="sandbox"), 303)
