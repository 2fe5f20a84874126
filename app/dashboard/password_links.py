"""One-time password links as the admin hands them out: made and audited, e-mailed or logged;
a reset link is also shown once to the admin (accounts_admin.py), an invitation only e-mailed
(settings.py: its answer must not tell a new address from another merchant's user)."""
from __future__ import annotations

from flask import current_app, make_response, render_template, url_for

from app.auth.mail import send_mail
from app.store import password_links
from app.web import deps

_SUBJECTS = {password_links.RESET: "Reset your Paydesk password",
             password_links.INVITE: "You are invited to Paydesk"}
ALREADY_A_USER_SUBJECT = "Someone tried to add you to Paydesk"
_LIFETIME_WORDS = {password_links.RESET: "1 hour", password_links.INVITE: "7 days"}


def new_link(uow, caller, user_id: int, email: str, purpose: str) -> str:
    """A new one-time link for the user, audited in the caller's unit of work (which commits)."""
    token = password_links.issue_link(uow.conn, user_id, purpose, caller.actor, deps().clock())
    # Each code written whole: the audit log's words (audit.ACTION_WORDS) are checked against them.
    uow.audit(caller, "user.reset_link" if purpose == password_links.RESET else "user.invite_link",
              target=email, both_modes=True)
    return current_app.config["BASE_URL"] + url_for("auth.set_password", token=token)


def mail_link(caller, email: str, purpose: str, link: str) -> bool:
    """E-mail the link when SMTP is configured, log it otherwise; True when e-mailed. Called
    after the commit: a slow mail server holds no database transaction open."""
    invite = purpose == password_links.INVITE
    text = (f"{caller.actor} {'invites you to' if invite else 'sent you a password link for'} "
            f"the Paydesk dashboard.\n\nChoose your password here (the link works once and "
            f"expires in {_LIFETIME_WORDS[purpose]}):\n{link}\n")
    return send_mail(current_app.config, email, _SUBJECTS[purpose], text)


def mail_already_a_user(caller, email: str) -> bool:
    """Tell the person an admin tried to invite that their address signs in for another merchant
    already, so nothing changed; True when e-mailed. Called after the unit of work, as mail_link."""
    text = (f"{caller.actor} tried to add {email} as a user of their merchant on the Paydesk "
            f"dashboard. This address already signs in to Paydesk for another merchant, and an "
            f"address belongs to one merchant only, so nothing was changed.\n\nIf you expected "
            f"this, ask them to invite another address of yours. If not, there is nothing to do.\n")
    return send_mail(current_app.config, email, ALREADY_A_USER_SUBJECT, text)


def show_link(email: str, link: str, emailed: bool):
    """A password reset link, once, for the admin to pass on (never cached)."""
    response = make_response(render_template(
        "dashboard/password_link.html", email=email, link=link, emailed=emailed,
        lifetime=_LIFETIME_WORDS[password_links.RESET]))
    response.headers["Cache-Control"] = "no-store"
    return response
