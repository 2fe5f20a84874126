"""Which token scope each /api/v1 endpoint needs: the one table (docs/tokens.md shows it, and
tests/api/test_token_scopes.py checks that every endpoint of the blueprint is in it)."""
from __future__ import annotations

from app.payments.tokens import SCOPES

# Endpoint name -> the scopes of which a token needs one (empty: any valid token).
# A create lets a token with payments or payouts in; the create service then asks for the one
# its payment method needs (app.payments.create).
ENDPOINT_SCOPES: dict[str, tuple[str, ...]] = {
    "api.openapi": (),
    "api.list_transactions": ("read",),
    "api.transaction_status": ("read",),
    "api.payment_methods": ("read",),
    "api.banks": ("read", "payouts"),
    "api.list_settlements": ("read",),
    "api.get_settlement": ("read",),
    "api.list_disputes": ("read",),
    "api.get_dispute": ("read",),
    "api.list_webhooks": ("read",),
    "api.create_transaction": ("payments", "payouts"),
    "api.cancel_transaction": ("payments",),
    "api.send_evidence": ("payments",),
    "api.add_dispute_file": ("payments",),
    "api.accept_dispute": ("payments",),
    "api.refund_transaction": ("refunds",),
    "api.resend_webhook": ("webhooks",),
    "api.sandbox_outcome": ("sandbox",),
    "api.sandbox_reset": ("sandbox",),
    "api.sandbox_dispute_outcome": ("sandbox",),
    "api.run_sandbox_settlements": ("sandbox",),
    # A batch's kind needs its scope, asked by the service (app.payments.batches).
    "api.get_batch": ("read",),
    "api.create_batch": ("payouts", "refunds"),
    "api.run_batch": ("payouts", "refunds"),
    "api.cancel_batch": ("payouts", "refunds"),
    "api.list_events": ("read",),
    "api.get_event": ("read",),
    # Endpoints hold a signing secret and decide where events go: the webhooks scope, reads too.
    "api.create_webhook_endpoint": ("webhooks",),
    "api.list_webhook_endpoints": ("webhooks",),
    "api.get_webhook_endpoint": ("webhooks",),
    "api.update_webhook_endpoint": ("webhooks",),
    "api.delete_webhook_endpoint": ("webhooks",),
    "api.rotate_webhook_endpoint_secret": ("webhooks",),
    "api.resend_failed_webhooks": ("webhooks",),
    "api.check_webhook_receiver": ("webhooks",),
    "api.get_webhook_receiver_check": ("webhooks",),
}
assert all(set(needed) <= set(SCOPES) for needed in ENDPOINT_SCOPES.values())  # nosec B101


def needed_scopes(endpoint: str | None) -> tuple[str, ...] | None:
    """The scopes of which a request to the endpoint needs one; None for an endpoint missing from
    the table (refused: a new endpoint must be given its scope here)."""
    return ENDPOINT_SCOPES.get(endpoint or "")
