"""Sign in (password, then the second factor when the user has one), sign out, and the
one-time links that let a user choose a password."""
from __future__ import annotations

from datetime import timedelta

from flask import (
    flash,
    g,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_login import current_user, login_required, login_user
from flask_wtf.csrf import CSRFError

from app.dashboard.navigation import landing_endpoint
from app.payments.model import Caller, Mode
from app.payments.formats import storable_text
from app.store import password_links, two_factor as second_factors, user_sessions
from app.store.users import set_password_hash, user_by_id, user_for_sign_in
from app.web import deps as app_deps, password_hasher

from . import auth, sessions, throttle
from .forms import CodeForm, LoginForm, NewPasswordForm
from .two_factor import hash_recovery_code, looks_like_recovery_code, matching_step
from .users import check_password, load_user, local_path

WRONG_CREDENTIALS = "Incorrect e-mail or password."
WRONG_CODE = "Incorrect or already used code."
LINK_UNUSABLE = ("This link has expired or was already used. Ask your admin for a new one.")
# Between the password and the code: the user id and when the password was right.
PENDING_USER, PENDING_SINCE, PENDING_NEXT = "two_factor_user", "two_factor_since", "two_factor_next"
# The code must follow the password within this time, or the password is asked again.
CODE_WAIT = timedelta(minutes=5)


@auth.route("/login", methods=["GET", "POST"])
def login():
    """Show the sign-in form; on success start a new session and go where the user was heading
    (failures are throttled per address and account: app/auth/throttle.py)."""
    if current_user.is_authenticated:
        return redirect(url_for(landing_endpoint(current_user)))
    form = LoginForm()
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        return render_template("auth/login.html", form=form), status
    account = throttle.account_key(form.email.data)
    if throttle.refuses(account):
        return _too_many_attempts()
    deps = app_deps()
    with deps.uow(write=False) as uow:
        # No user's address holds a control character (nor could PostgreSQL look one up).
        row = user_for_sign_in(uow.conn, form.email.data) if storable_text(form.email.data) else None
    if not check_password(row, form.password.data):
        throttle.count_failure(account)
        return render_template("auth/login.html", form=form, error=WRONG_CREDENTIALS), 401
    hasher = password_hasher()
    new_hash = (hasher.hash(form.password.data)
                if hasher.check_needs_rehash(row.password_hash) else None)
    target = local_path(request.args.get("next"))
    if row.has_two_factor:
        if new_hash:
            with deps.uow() as uow:
                set_password_hash(uow.conn, row.id, new_hash)
                uow.commit()
        # Nothing is signed in yet: the cookie only remembers whose code to ask for.
        session.clear()
        g.pop("csrf_token", None)
        session.update({PENDING_USER: row.id, PENDING_SINCE: deps.clock().timestamp(),
                        PENDING_NEXT: target})
        return redirect(url_for("auth.login_code"), 303)
    return _signed_in(row, target, new_hash)


def _signed_in(row, target: str | None, new_hash: str | None = None):
    """Start the user's session (their failures from this address forgotten) and go where they
    were heading."""
    throttle.forget_failures(throttle.account_key(row.email))
    sessions.begin(row.id, new_hash)
    login_user(load_user(str(row.id)))
    # Live unless `next` is a sandbox page (/test/...): a shared sandbox link works after sign-in.
    return redirect(target or url_for(landing_endpoint(current_user)), 303)


def _pending_user():
    """The user whose password was right less than CODE_WAIT ago in this browser, or None."""
    user_id, since = session.get(PENDING_USER), session.get(PENDING_SINCE)
    if not isinstance(user_id, int) or not isinstance(since, float):
        return None
    if app_deps().clock().timestamp() - since > CODE_WAIT.total_seconds():
        return None
    with app_deps().uow(write=False) as uow:
        row = user_by_id(uow.conn, user_id)
    return row if row is not None and row.active and row.has_two_factor else None


@auth.route("/login/code", methods=["GET", "POST"])
def login_code():
    """The second step of sign-in: a code from the authenticator app, or a recovery code (its
    failures count with the password's, on the same account)."""
    if current_user.is_authenticated:
        return redirect(url_for(landing_endpoint(current_user)))
    row = _pending_user()
    if row is None:
        flash("Sign in again to continue.", "info")
        return redirect(url_for("auth.login"), 303 if request.method == "POST" else 302)
    form = CodeForm()
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        return render_template("auth/code.html", form=form), status
    account = throttle.account_key(row.email)
    if throttle.refuses(account):
        return _too_many_attempts()
    if not _second_factor_accepted(row, form.code.data):
        throttle.count_failure(account)
        return render_template("auth/code.html", form=form, error=WRONG_CODE), 401
    return _signed_in(row, session.get(PENDING_NEXT))


def _second_factor_accepted(row, code: str) -> bool:
    """A TOTP code of a time-step after the last accepted one, or an unused recovery code (spent
    now, and audited)."""
    deps = app_deps()
    with deps.uow() as uow:
        if looks_like_recovery_code(code):
            accepted = second_factors.use_recovery_code(uow.conn, row.id, hash_recovery_code(code),
                                                        deps.clock())
            if accepted:
                left = second_factors.unused_recovery_codes(uow.conn, row.id)
                uow.audit(_user_caller(row), "user.recovery_code_use", target=row.email,
                          detail={"left": left}, both_modes=True)
        else:
            sealed, _last = second_factors.sealed_totp_secret(uow.conn, row.id)
            step = matching_step(deps.providers.box.open(sealed), code) if sealed else None
            accepted = step is not None and second_factors.claim_step(uow.conn, row.id, step)
        uow.commit()
    return accepted


def _user_caller(row) -> Caller:
    """The user as the audit log's actor, before (or without) a session."""
    return Caller(row.merchant_id, Mode.LIVE, row.email, request.remote_addr)


@auth.post("/logout")
@login_required
def logout():
    """End the session: its row too, so a copy of the cookie signs in no one."""
    sessions.end_current("signed out")
    flash("You are signed out.", "info")
    return redirect(url_for("auth.login"), 303)


@auth.route("/password/<token>", methods=["GET", "POST"])
def set_password(token: str):
    """A reset link or invitation: the user chooses a password, once, before the link expires."""
    deps = app_deps()
    with deps.uow(write=False) as uow:
        link = password_links.usable_link(uow.conn, token, deps.clock())
    if link is None:
        return _no_store(render_template("auth/link_unusable.html", error=LINK_UNUSABLE), 404)
    form = NewPasswordForm(meta={"email": link.email})
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        return _no_store(render_template("auth/set_password.html", form=form, link=link), status)
    now = deps.clock()
    with deps.uow() as uow:
        if not password_links.use_link(uow.conn, link.id, now):
            return _no_store(render_template("auth/link_unusable.html", error=LINK_UNUSABLE), 404)
        set_password_hash(uow.conn, link.user_id, password_hasher().hash(form.new_password.data))
        user_sessions.end_sessions_of(uow.conn, link.user_id, now, "password reset")
        uow.audit(_user_caller(link), "user.password_set", target=link.email,
                  detail={"through": link.purpose}, both_modes=True)
        uow.commit()
    flash("Your password is set. Sign in with it.", "success")
    return redirect(url_for("auth.login"), 303)


def _no_store(body, status: int):
    """A page whose URL is a secret: kept out of caches (and its Referer is same-origin only)."""
    response = make_response(body, status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _too_many_attempts():
    """The sign-in form again, saying why it refuses for now."""
    return render_template("auth/login.html", form=LoginForm(formdata=None),
                           error=throttle.TOO_MANY_ATTEMPTS), 429


@auth.errorhandler(CSRFError)
def csrf_failed(error):
    """A form without a valid CSRF token (or an expired one): refuse and offer the form again."""
    return render_template("auth/login.html", form=LoginForm(formdata=None),
                           error="Your session expired. Please sign in again."), 400
