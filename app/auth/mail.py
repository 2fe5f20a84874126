"""Messages to users (one-time links, notices): by e-mail through SMTP when configured, to the log otherwise."""
from __future__ import annotations

import logging
import smtplib
from email.message import EmailMessage

log = logging.getLogger("paydesk.mail")


def send_mail(config, to: str, subject: str, text: str) -> bool:
    """E-mail the text when SMTP_HOST is set, else log it; True when e-mailed.

    A failing mail server is logged and answered with False: the action that sends the message
    (an invitation, a password link) does not fail with it.
    """
    if not config["SMTP_HOST"]:
        log.info("E-mail not configured (SMTP_HOST); message to %s: %s\n%s", to, subject, text)
        return False
    message = EmailMessage()
    message["From"] = config["SMTP_FROM"]
    message["To"] = to
    message["Subject"] = subject
    message.set_content(text)
    try:
        with smtplib.SMTP(config["SMTP_HOST"], config["SMTP_PORT"],
                          timeout=config["SMTP_TIMEOUT"]) as smtp:
            if config["SMTP_STARTTLS"]:
                smtp.starttls()
            if config["SMTP_USERNAME"]:
                smtp.login(config["SMTP_USERNAME"], config["SMTP_PASSWORD"])
            smtp.send_message(message)
    except (OSError, smtplib.SMTPException) as error:
        log.warning("Could not e-mail %s (%s): %s", to, subject, error)
        return False
    return True
