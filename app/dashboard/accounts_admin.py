"""Settings → users (admin): one-time password links and invitations, users' second factors,
and the merchant's two-factor rule. (Adding users, roles, deactivation: settings.py.)

Every change writes an audit entry of no mode in the same transaction.
"""
from __future__ import annotations

from flask import flash, redirect, request, url_for
from flask_login import current_user

from app.auth import throttle
from app.auth.users import check_password, current_caller, requires
from app.store import password_links, two_factor as second_factors, user_sessions
from app.store.users import user_by_id
from app.web import deps

from . import dashboard
from .account import WRONG_CURRENT_PASSWORD
from .password_links import mail_link, new_link, show_link
from .settings import ROW_ID, _member, _settings_page

@dashboard.post(f"/settings/users/<{ROW_ID}:user_id>/reset-link")
@requires("manage_settings")
def password_reset_link(user_id: int):
    """A one-time link (1 hour) with which the user chooses a new password."""
    caller = current_caller()
    with deps().uow() as uow:
        member = _member(uow, caller, user_id)
        link = new_link(uow, caller, user_id, member.email, password_links.RESET)
        uow.commit()
    emailed = mail_link(caller, member.email, password_links.RESET, link)
    return show_link(member.email, link, emailed)


@dashboard.post(f"/settings/users/<{ROW_ID}:user_id>/two-factor/reset")
@requires("manage_settings")
def reset_two_factor(user_id: int):
    """Take a user's second factor and recovery codes away (a lost phone); their sessions end.
    The admin's own password is asked again; a wrong one counts as a failed sign-in."""
    caller = current_caller()
    with deps().uow(write=False) as uow:
        _member(uow, caller, user_id)
        admin = user_by_id(uow.conn, current_user.id)
    account = throttle.account_key(current_user.email)
    if throttle.refuses(account):
        flash(throttle.TOO_MANY_ATTEMPTS, "error")
        return _settings_page(429)
    if not check_password(admin, request.form.get("current_password", "")):
        throttle.count_failure(account)
        flash(WRONG_CURRENT_PASSWORD, "error")
        return _settings_page(422)
    with deps().uow() as uow:
        member = _member(uow, caller, user_id)
        second_factors.remove_totp(uow.conn, user_id)
        ended = user_sessions.end_sessions_of(uow.conn, user_id, deps().clock(), "two-factor reset")
        uow.audit(caller, "user.two_factor_reset", target=member.email,
                  detail={"sessions_ended": ended}, both_modes=True)
        uow.commit()
    flash(f"{member.email} has no second factor now and is signed out; they set up a new one "
          "at their next sign-in if two-factor is required.", "success")
    return redirect(url_for("dashboard.settings", _anchor="users"), 303)


@dashboard.post("/settings/two-factor")
@requires("manage_settings")
def require_two_factor():
    """Require two-factor sign-in of every user of the merchant, or stop requiring it."""
    required, caller = request.form.get("required") == "1", current_caller()
    with deps().uow() as uow:
        second_factors.set_required(uow.conn, caller.merchant_id, required)
        uow.audit(caller, "merchant.two_factor_required" if required else "merchant.two_factor_optional",
                  both_modes=True)
        uow.commit()
    flash("Two-factor sign-in is now required of every user: those without it set it up at their "
          "next page." if required else "Two-factor sign-in is now optional.", "success")
    return redirect(url_for("dashboard.settings", _anchor="users"), 303)
