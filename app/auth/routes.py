"""Sign in and sign out."""
from __future__ import annotations

from flask import (
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_limiter import RateLimitExceeded
from flask_login import current_user, login_required, login_user, logout_user
from flask_wtf.csrf import CSRFError

from app.dashboard.navigation import landing_endpoint
from app.payments.formats import storable_text
from app.store.merchants import password_hasher
from app.store.users import record_login, user_for_sign_in
from app.web import deps as app_deps

from . import auth, limiter
from .forms import LoginForm
from .users import DashboardUser, check_password, local_path

# Failed sign-ins only (successful ones do not count): per account, against guessing one
# password, and per address, against trying many accounts.
FAILED_LOGINS_PER_ACCOUNT = "5 per 15 minutes"
FAILED_LOGINS_PER_ADDRESS = "30 per 15 minutes"
WRONG_CREDENTIALS = "Incorrect e-mail or password."
TOO_MANY_ATTEMPTS = "Too many failed sign-in attempts. Wait 15 minutes and try again."


def _account_key() -> str:
    return "login-account:" + (request.form.get("email") or "").strip().lower()[:254]


def _failed(_response) -> bool:
    return g.get("login_failed", False)


@auth.route("/login", methods=["GET", "POST"])
@limiter.limit(FAILED_LOGINS_PER_ACCOUNT, key_func=_account_key, methods=["POST"], deduct_when=_failed)
@limiter.limit(FAILED_LOGINS_PER_ADDRESS, methods=["POST"], deduct_when=_failed)
def login():
    """Show the sign-in form; on success start a new session and go where the user was heading."""
    if current_user.is_authenticated:
        return redirect(url_for(landing_endpoint(current_user)))
    form = LoginForm()
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        return render_template("auth/login.html", form=form), status
    deps = app_deps()
    with deps.uow(write=False) as uow:
        # No user's address holds a control character (nor could PostgreSQL look one up).
        row = user_for_sign_in(uow.conn, form.email.data) if storable_text(form.email.data) else None
    if not check_password(row, form.password.data):
        g.login_failed = True
        return render_template("auth/login.html", form=form, error=WRONG_CREDENTIALS), 401
    new_hash = (password_hasher.hash(form.password.data)
                if password_hasher.check_needs_rehash(row.password_hash) else None)
    with deps.uow() as uow:
        record_login(uow.conn, row.id, deps.clock(), new_hash)
        uow.commit()
    # A new session: nothing from before sign-in survives, and the CSRF token is new.
    session.clear()
    g.pop("csrf_token", None)
    login_user(DashboardUser(row))
    # Live unless `next` is a sandbox page (/test/...): a shared sandbox link works after sign-in.
    return redirect(local_path(request.args.get("next")) or url_for(landing_endpoint(current_user)), 303)


@auth.post("/logout")
@login_required
def logout():
    """End the session."""
    logout_user()
    session.clear()
    flash("You are signed out.", "info")
    return redirect(url_for("auth.login"), 303)


@auth.errorhandler(RateLimitExceeded)
def too_many_attempts(_error):
    """The sign-in form again, saying why it refuses for now."""
    return render_template("auth/login.html", form=LoginForm(formdata=None),
                           error=TOO_MANY_ATTEMPTS), 429


@auth.errorhandler(CSRFError)
def csrf_failed(error):
    """A form without a valid CSRF token (or an expired one): refuse and offer the form again."""
    return render_template("auth/login.html", form=LoginForm(formdata=None),
                           error="Your session expired. Please sign in again."), 400
