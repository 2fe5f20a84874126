"""The merchant's inbox: a webhook receiver served by Paydesk that verifies and logs what arrives,
with the merchant's callbackUrl secrets and those of its webhook endpoints set to the inbox."""
from __future__ import annotations

import json

from flask import Blueprint, request
from sqlalchemy import Connection, exists, insert, select
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.web import deps, json_response
from app.payments.model import Mode
from app.store.merchants import active_webhook_secrets
from app.store.tables import inbox_messages, merchants
from app.util import could_be_key
from .endpoints import secrets_of_endpoints_at

inbox = Blueprint("inbox", __name__)

MAX_BODY_BYTES = 256 * 1024
MAX_KEY_LENGTH = 64
MAX_WEBHOOK_ID_LENGTH = 200


def verifying_mode(body: str, headers: dict, secrets_by_mode: dict[Mode, list[str]]) -> Mode | None:
    """The mode one of whose secrets verifies the delivery (Standard Webhooks), or None."""
    for mode, secrets in secrets_by_mode.items():
        for secret in secrets:
            try:
                Webhook(secret).verify(body, headers, json_parse=False)
            except (WebhookVerificationError, ValueError):
                continue
            return mode
    return None


def inbox_owner(conn: Connection, inbox_key: str) -> int | None:
    """The merchant whose inbox this key addresses, or None.

    The receiver has no caller (no token, no session): the unguessable key in the URL alone
    says whose inbox it is, so whose secrets verify the request and whose log keeps it.
    """
    return conn.execute(select(merchants.c.id).where(merchants.c.inbox_key == inbox_key)).scalar()


def _as_logged(text: str) -> str:
    """Text as the log keeps it: a NUL, which PostgreSQL text cannot hold, becomes U+FFFD, the
    character invalid UTF-8 in the body already became."""
    return text.replace("\x00", "\ufffd")


@inbox.post("/inbox/<inbox_key>")
def receive(inbox_key: str):
    """Store the request with its signature verdict; 204 when signed by the merchant, 401 if not.

    An invalid signature is logged too, and answered 401 so that a real sender
    (Paydesk itself) treats a tampered delivery as failed and tries again.
    """
    if not could_be_key(inbox_key, MAX_KEY_LENGTH):
        return json_response({"error": "Inbox not found"}, 404)
    if (request.content_length or 0) > MAX_BODY_BYTES:
        return json_response({"error": f"Body larger than {MAX_BODY_BYTES // 1024} KiB"}, 413)
    raw = request.stream.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        return json_response({"error": f"Body larger than {MAX_BODY_BYTES // 1024} KiB"}, 413)
    body = raw.decode("utf-8", "replace")
    headers = dict(request.headers.items())
    webhook_id = _as_logged((request.headers.get("webhook-id") or "")[:MAX_WEBHOOK_ID_LENGTH]) or None
    now = deps().clock()
    with deps().uow() as uow:
        merchant_id = inbox_owner(uow.conn, inbox_key)
        if merchant_id is None:
            return json_response({"error": "Inbox not found"}, 404)
        secrets_by_mode = {mode: active_webhook_secrets(uow, merchant_id, mode, now)
                           for mode in Mode}
        # The merchant's webhook endpoints set to this inbox sign with secrets of their own
        # (their URLs hold the path as sent: a mount point's prefix included).
        inbox_path = request.script_root + request.path
        at_inbox = secrets_of_endpoints_at(uow.conn, uow.box, merchant_id, inbox_path, now)
        for mode, endpoint_secrets in at_inbox.items():
            secrets_by_mode[mode] = [*secrets_by_mode[mode], *endpoint_secrets]
        mode = verifying_mode(body, headers, secrets_by_mode)
        duplicate = webhook_id is not None and uow.conn.execute(
            select(exists().where(inbox_messages.c.merchant_id == merchant_id,
                                  inbox_messages.c.webhook_id == webhook_id))).scalar()
        uow.conn.execute(insert(inbox_messages).values(
            merchant_id=merchant_id,
            received_at=now,
            webhook_id=webhook_id,
            headers=json.dumps(headers),
            body=_as_logged(body),
            signature_valid=mode is not None,
            mode=mode.value if mode else None,
            duplicate=bool(duplicate),
        ))
        uow.commit()
    if mode is None:
        return json_response({"error": "Invalid webhook signature"}, 401)
    return "", 204
