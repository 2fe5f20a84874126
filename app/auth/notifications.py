"""The worker's notification pass: hand recorded events to the users who chose them, then
e-mail each user's due copies (at once, or bundled in the daily digest) through app.auth.mail."""
from __future__ import annotations

import logging
from datetime import datetime, time, timedelta

from flask import current_app

from app.dashboard.modes import PREFIXES
from app.payments.model import Mode
from app.payments.notifications import KINDS_BY_KEY, Delivery
from app.providers.passes import BackgroundPass
from app.store import notifications as store

from .mail import send_mail
from .users import PERMISSIONS

log = logging.getLogger("paydesk.notifications")

# A refused mail is tried again after this, doubled each time, at most MAX_TRIES times in all.
FIRST_RETRY = timedelta(minutes=1)
MAX_TRIES = 6


def digest_cut(now: datetime, digest_hour: int) -> datetime:
    """The latest daily digest time (digest_hour UTC) at or before now: digest copies made
    before it are due."""
    today = datetime.combine(now.date(), time(digest_hour), tzinfo=now.tzinfo)
    return today if now >= today else today - timedelta(days=1)


def hand_out_events(deps) -> int:
    """Give every waiting event its copies (one unit per event); the copies made."""
    made = 0
    with deps.uow(write=False) as uow:
        waiting = store.waiting_events(uow.conn)
    for event in waiting:
        kind = KINDS_BY_KEY.get(event.kind)
        roles = PERMISSIONS[kind.permission] if kind is not None and kind.permission else None
        with deps.uow() as uow:
            made += store.hand_out(uow.conn, event, roles, deps.clock())
            uow.commit()
    return made


def mail_text(copies: list[store.Copy], base_url: str, digest: bool) -> tuple[str, str]:
    """The subject and text of one user's mail of these copies."""
    def link(copy: store.Copy) -> str:
        return f"{base_url.rstrip('/')}{PREFIXES[Mode(copy.mode)]}/{copy.target}"
    if len(copies) == 1 and not digest:  # one notice at once: its own subject
        copy, = copies
        return f"Paydesk: {copy.subject}", f"{copy.body}\n\nOpen it: {link(copy)}\n{_FOOTER}"
    title = "Paydesk daily digest" if digest else "Paydesk"
    parts = [f"{copy.created_at:%Y-%m-%d %H:%M} UTC · {copy.subject}\n{copy.body}\n{link(copy)}"
             for copy in copies]
    return f"{title}: {len(copies)} notifications", "\n\n".join(parts) + f"\n{_FOOTER}"


_FOOTER = "\n--\nYou chose these e-mails on your Paydesk Account page, where you can change them."


def send_due(deps, config, now: datetime | None = None) -> int:
    """E-mail each user's due copies, one mail per user (a digest when any is a digest copy);
    returns the mails sent. The copies are marked sent when claimed: a mail the server refuses
    puts them back for a later try, a crash never sends them twice."""
    now = now or deps.clock()
    cut = digest_cut(now, config["NOTIFICATION_DIGEST_HOUR"])
    sent = 0
    with deps.uow(write=False) as uow:
        user_ids = store.users_with_due(uow.conn, now, cut)
    for user_id in user_ids:
        with deps.uow() as uow:
            copies = store.claim_due(uow.conn, user_id, now, cut)
            uow.commit()
        if not copies:
            continue  # another worker claimed them
        digest = any(copy.delivery is Delivery.DIGEST for copy in copies)
        subject, text = mail_text(copies, config["BASE_URL"], digest)
        if send_mail(config, copies[0].email, subject, text) or not config["SMTP_HOST"]:
            sent += 1  # e-mailed, or (no SMTP configured) written to the log by send_mail
            continue
        ids = [copy.id for copy in copies]
        with deps.uow() as uow:
            tries = store.attempts_of(uow.conn, ids)
            if tries >= MAX_TRIES:
                store.give_up(uow.conn, ids, "the mail server refused it every time")
            else:
                store.put_back(uow.conn, ids, now + FIRST_RETRY * 2 ** (tries - 1),
                               "the mail server refused it")
            uow.commit()
    return sent


def notification_pass(deps, _providers) -> BackgroundPass:
    """One worker process's passes of notifications: hand out new events, mail what is due."""
    config = current_app.config  # the mail settings (the pass runs outside the app context)

    def run() -> None:
        hand_out_events(deps)
        send_due(deps, config)
    return BackgroundPass("notifications", run)
