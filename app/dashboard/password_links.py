"""One-time password links as the admin hands them out: made and audited, e-mailed or logged,
and shown once (reset links: accounts_admin.py; invitations: settings.py)."""
from __future__ import annotations

from flask import current_app, make_response, render_template, url_for

from app.auth.mail import send_link
from app.store import password_links
from app.web import deps

_SUBJECTS = {password_links.RESET: "Reset your Paydesk password",
             password_links.INVITE: "You are invited to Paydesk"}
_LIFETIME_WORDS = {password_links.RESET: "1 hour", password_links.INVITE: "7 days"}


def new_link(uow, caller, user_id: int, email: str, purpose: str) -> str:
    """A new one-time link for the user, audited in the caller's unit of work (which commits)."""
    token = password_links.issue_link(uow.conn, user_id, purpose, caller.actor, deps().clock())
    uow.audit(caller, f"user.{purpose}_link", target=email, both_modes=True)
    return current_app.config["BASE_URL"] + url_for("auth.set_password", token=token)


def mail_link(caller, email: str, purpose: str, link: str) -> bool:
    """E-mail the link when SMTP is configured, log it otherwise; True when e-mailed. Called
    after the commit: a slow mail server holds no database transaction open."""
    invite = purpose == password_links.INVITE
    text = (f"{caller.actor} {'invites you to' if invite else 'sent you a password link for'} "
            f"the Paydesk dashboard.\n\nChoose your password here (the link works once and "
            f"expires in {_LIFETIME_WORDS[purpose]}):\n{link}\n")
    return send_link(current_app.config, email, _SUBJECTS[purpose], text)


def show_link(email: str, purpose: str, link: str, emailed: bool):
    """The link, once, for the admin to pass on (never cached)."""
    response = make_response(render_template(
        "dashboard/password_link.html", email=email, purpose=purpose, link=link, emailed=emailed,
        lifetime=_LIFETIME_WORDS[purpose]))
    response.headers["Cache-Control"] = "no-store"
    return response
