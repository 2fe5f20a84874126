"""Standard Webhooks signing: the webhook-id, webhook-timestamp and webhook-signature headers."""
from __future__ import annotations

from datetime import datetime
from math import floor

from standardwebhooks.webhooks import Webhook

USER_AGENT = "Paydesk-Webhooks/1"


def signed_headers(webhook_id: str, sent_at: datetime, body: str, secrets: list[str]) -> dict:
    """Headers of one delivery, signed with every active secret (a rotated one overlaps the new one).

    Standard Webhooks separates several signatures with spaces; a receiver
    accepts the delivery when any of them matches a secret it knows.
    """
    if not secrets:
        raise ValueError("no active webhook secret to sign with")
    signatures = " ".join(Webhook(secret).sign(webhook_id, sent_at, body) for secret in secrets)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": webhook_id,
        "webhook-timestamp": str(floor(sent_at.timestamp())),
        "webhook-signature": signatures,
    }
