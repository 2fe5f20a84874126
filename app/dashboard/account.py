"""The signed-in user's own account: password, second factor, sessions (every role may use it).

Every change writes an audit entry of no mode in the same transaction.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from flask import (
    abort,
    current_app,
    flash,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user, login_required

from app.auth import sessions, throttle
from app.auth.forms import ChangePasswordForm, ConfirmCodeForm
from app.auth.two_factor import (
    hash_recovery_code,
    matching_step,
    new_recovery_codes,
    new_secret,
    provisioning_uri,
    qr_code_data_uri,
)
from app.auth.users import check_password, current_caller
from app.payments.notifications import KINDS as NOTIFICATION_KINDS
from app.payments.notifications import Delivery, NotificationKind
from app.store import notifications as notification_store
from app.store import two_factor as second_factors
from app.store import user_sessions
from app.store.users import set_display, set_password_hash, user_by_id
from app.web import deps, password_hasher

from . import dashboard
from .formatting import money
from .forms import DisplayForm
from .settings import ROW_ID

# What a user who must enrol may still open.
OPEN_BEFORE_ENROLMENT = frozenset({"dashboard.two_factor", "dashboard.enable_two_factor"})
WRONG_CURRENT_PASSWORD = "Your current password is not correct."  # nosec B105 # a message, not a password
TOO_MANY_WRONG = "Too many wrong current passwords. Wait 15 minutes and try again."
# What the sessions list names a browser by: the first of its User-Agent's marks found, in
# this order (Edge and Opera also say Chrome and Safari; Chrome also says Safari).
BROWSER_MARKS = (("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"),
                 ("Safari/", "Safari"))
SYSTEM_MARKS = (("Android", "Android"), ("iPhone", "iPhone"), ("iPad", "iPad"), ("Windows", "Windows"),
                ("Mac OS X", "macOS"), ("CrOS", "ChromeOS"), ("Linux", "Linux"))


@dashboard.before_request
def enrol_first():
    """A merchant that requires two-factor sign-in sends users without a second factor to enrol."""
    if (current_user.is_authenticated and current_user.must_enrol
            and request.endpoint not in OPEN_BEFORE_ENROLMENT):
        target = url_for("dashboard.two_factor")
        if request.headers.get("HX-Request"):
            response = jsonify(error="Set up two-factor sign-in to continue")
            response.headers["HX-Redirect"] = target
            return response, 403
        flash("Your organisation requires two-factor sign-in: set it up to continue.", "info")
        return redirect(target, 303 if request.method == "POST" else 302)
    return None


def _account_page(status: int = 200, password_form=None, display_form=None):
    with deps().uow(write=False) as uow:
        codes_left = second_factors.unused_recovery_codes(uow.conn, current_user.id)
        chosen = notification_store.choices_of(uow.conn, current_user.id)
    return render_template("dashboard/account.html", codes_left=codes_left, now=deps().clock(),
                           example_amount=money(Decimal("1234.56"), "EUR"),
                           password_form=password_form or _password_form(formdata=None),
                           display_form=display_form or _display_form(
                               formdata=None, locale=current_user.locale,
                               time_zone=current_user.own_time_zone or ""),
                           notification_kinds=offered_kinds(), chosen=chosen,
                           digest_at=_next_digest(current_app.config["NOTIFICATION_DIGEST_HOUR"])), status


def _next_digest(hour: int) -> datetime:
    """When the next daily digest goes (NOTIFICATION_DIGEST_HOUR is a UTC hour), for the page to
    show in the reader's zone."""
    now = deps().clock()
    at = now.replace(hour=hour, minute=0, second=0, microsecond=0)
    return at if at > now else at + timedelta(days=1)


def _display_form(**kwargs) -> DisplayForm:
    return DisplayForm(merchant_zone=current_user.merchant_time_zone, **kwargs)


def offered_kinds() -> list[NotificationKind]:
    """The notification kinds the user's role may receive."""
    return [kind for kind in NOTIFICATION_KINDS if kind.permission is None or current_user.can(kind.permission)]


def _password_form(**kwargs) -> ChangePasswordForm:
    return ChangePasswordForm(meta={"csrf": False, "email": current_user.email}, **kwargs)


@dashboard.get("/account")
@login_required
def account():
    """The user's password, second factor and a link to their sessions."""
    return _account_page()


@dashboard.post("/account/password")
@login_required
def change_password():
    """A new password, the current one given; every other session of the user ends (this one stays).
    A wrong current password counts as a failed sign-in (app/auth/throttle.py): a borrowed
    session cannot guess it."""
    account = throttle.account_key(current_user.email)
    if throttle.refuses(account):
        flash(TOO_MANY_WRONG, "error")
        return _account_page(429)
    form = _password_form()
    if not form.validate():
        return _account_page(422, form)
    with deps().uow(write=False) as uow:
        row = user_by_id(uow.conn, current_user.id)
    if not check_password(row, form.current_password.data):
        throttle.count_failure(account)
        form.current_password.errors = [WRONG_CURRENT_PASSWORD]
        return _account_page(422, form)
    caller, now = current_caller(), deps().clock()
    with deps().uow() as uow:
        set_password_hash(uow.conn, current_user.id, password_hasher().hash(form.new_password.data))
        ended = user_sessions.end_sessions_of(uow.conn, current_user.id, now, "password changed",
                                              keep_session_id=current_user.session_id)
        uow.audit(caller, "user.password_change", target=current_user.email,
                  detail={"other_sessions_ended": ended}, both_modes=True)
        uow.commit()
    flash("Your password is changed. Your other sessions are signed out.", "success")
    return redirect(url_for("dashboard.account"), 303)


@dashboard.post("/account/display")
@login_required
def change_display():
    """The user's locale and own time zone (empty: the merchant's), for every page they read."""
    form = _display_form()
    if not form.validate():
        return _account_page(422, display_form=form)
    zone = form.time_zone.data or None
    with deps().uow() as uow:
        set_display(uow.conn, current_user.id, form.locale.data, zone)
        uow.audit(current_caller(), "user.display_change", target=current_user.email,
                  detail={"locale": form.locale.data, "timeZone": zone}, both_modes=True)
        uow.commit()
    flash("Dates, times and amounts now follow your choice.", "success")
    return redirect(url_for("dashboard.account", _anchor="display"), 303)


@dashboard.post("/account/notifications")
@login_required
def save_notifications():
    """The e-mail notifications the user chose: per kind off, at once or in the daily digest,
    and whether sandbox events count too. Values not offered are ignored (left off)."""
    chosen = []
    for kind in offered_kinds():
        delivery = request.form.get(f"delivery-{kind.key}", "")
        if delivery in {d.value for d in Delivery}:
            chosen.append(notification_store.Choice(kind.key, Delivery(delivery),
                                                    request.form.get(f"sandbox-{kind.key}") == "1"))
    with deps().uow() as uow:
        notification_store.set_choices(uow.conn, current_user.id, chosen)
        uow.audit(current_caller(), "user.notifications", target=current_user.email,
                  detail={c.kind: c.delivery.value + (" +sandbox" if c.sandbox else "") for c in chosen},
                  both_modes=True)
        uow.commit()
    flash("Your e-mail notifications are saved.", "success")
    return redirect(url_for("dashboard.account") + "#notifications", 303)


@dashboard.get("/account/two-factor")
@login_required
def two_factor():
    """Set up two-factor sign-in: a new secret's QR code, and the form for its first code."""
    if current_user.has_two_factor:
        return redirect(url_for("dashboard.account"))
    box = deps().providers.box
    with deps().uow() as uow:
        sealed = second_factors.enrolment_secret(uow.conn, current_user.id, box.seal(new_secret()),
                                                 deps().clock())
        uow.commit()
    return _enrol_page(box.open(sealed), ConfirmCodeForm(meta={"csrf": False}, formdata=None))


def _enrol_page(secret: str, form, status: int = 200, error: str | None = None):
    uri = provisioning_uri(secret, current_user.email)
    response = make_response(render_template(
        "dashboard/two_factor.html", form=form, secret=secret, qr_code=qr_code_data_uri(uri),
        error=error), status)
    response.headers["Cache-Control"] = "no-store"
    return response


@dashboard.post("/account/two-factor")
@login_required
def enable_two_factor():
    """Confirm the new secret with the user's password and a code from the app; show the ten
    recovery codes once. A wrong password counts as a failed sign-in (app/auth/throttle.py)."""
    with deps().uow(write=False) as uow:
        sealed = second_factors.pending_enrolment(uow.conn, current_user.id)
        row = user_by_id(uow.conn, current_user.id)
    if current_user.has_two_factor or sealed is None:
        return redirect(url_for("dashboard.two_factor"), 303)
    secret = deps().providers.box.open(sealed)
    form = ConfirmCodeForm(meta={"csrf": False})
    if not form.validate():
        return _enrol_page(secret, form, 422)
    account = throttle.account_key(current_user.email)
    if throttle.refuses(account):
        return _enrol_page(secret, form, 429, throttle.TOO_MANY_ATTEMPTS)
    if not check_password(row, form.current_password.data):
        throttle.count_failure(account)
        form.current_password.errors = [WRONG_CURRENT_PASSWORD]
        return _enrol_page(secret, form, 422)
    step = matching_step(secret, form.code.data)
    if step is None:
        return _enrol_page(secret, form, 422, "That code is not right. Check the app shows "
                                              "Paydesk and your e-mail, and type its current code.")
    codes = new_recovery_codes()
    caller = current_caller()
    with deps().uow() as uow:
        second_factors.enable_totp(uow.conn, current_user.id, deps().providers.box.seal(secret), step,
                                   [hash_recovery_code(code) for code in codes])
        uow.audit(caller, "user.two_factor_enable", target=current_user.email, both_modes=True)
        uow.commit()
    response = make_response(render_template("dashboard/recovery_codes.html", codes=codes))
    response.headers["Cache-Control"] = "no-store"
    return response


@dashboard.get("/account/sessions")
@login_required
def account_sessions():
    """Where the user is signed in, this session marked; each can be ended."""
    with deps().uow(write=False) as uow:
        rows = user_sessions.sessions_of(uow.conn, current_user.id,
                                         sessions.sessions_started_after(deps().clock()))
    return render_template("dashboard/sessions.html", rows=rows, browser_name=browser_name)


def browser_name(user_agent: str | None) -> str:
    """A short name such as "Chrome on Linux" for a well-known browser, else the User-Agent as sent."""
    agent = user_agent or ""
    browser = next((name for mark, name in BROWSER_MARKS if mark in agent), None)
    system = next((name for mark, name in SYSTEM_MARKS if mark in agent), None)
    if browser and system:
        return f"{browser} on {system}"
    return agent or "Unknown browser"


@dashboard.post(f"/account/sessions/<{ROW_ID}:session_id>/end")
@login_required
def end_session(session_id: int):
    """End one of the user's sessions (this one signs out); another user's is not found."""
    caller = current_caller()
    with deps().uow() as uow:
        if not user_sessions.end_session(uow.conn, current_user.id, session_id, deps().clock(),
                                         "ended by user"):
            abort(404)
        uow.audit(caller, "user.session_end", target=current_user.email,
                  detail={"session": session_id}, both_modes=True)
        uow.commit()
    if session_id == current_user.session_id:
        sessions.end_current("ended by user")
        flash("You are signed out.", "info")
        return redirect(url_for("auth.login"), 303)
    flash("The session is ended: it is signed out on its next request.", "success")
    return redirect(url_for("dashboard.account_sessions"), 303)
