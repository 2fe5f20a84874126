"""The API's own limits and word lists, written once for the endpoints and the OpenAPI document."""
from __future__ import annotations

from app.payments.model import Status

# The moves the sandbox helper makes as a provider would.
SANDBOX_OUTCOMES = frozenset({Status.CAPTURED, Status.DECLINED, Status.FAILED, Status.AUTHORIZED,
                              Status.CHARGEBACK})
# The most webhook events one GET /webhooks answers.
MAX_WEBHOOK_LIMIT = 100
DEFAULT_WEBHOOK_LIMIT = 50
# A webhook event's delivery state as the API writes it.
WEBHOOK_STATUS_WORDS = {"pending": "Pending", "delivered": "Delivered", "failed": "Failed"}
# GET /settlements: rows per page unless `limit` says otherwise, and the most one page holds.
DEFAULT_SETTLEMENT_LIMIT = 50
MAX_SETTLEMENT_LIMIT = 200
# The most disputes one GET /disputes page holds, and how many it holds unless told.
MAX_DISPUTE_LIMIT = 200
DEFAULT_DISPUTE_LIMIT = 50
# Dispute ids are DSP- and 16 hex digits: longer text names none.
MAX_DISPUTE_NO_LENGTH = 40
# GET /transactions: rows per page unless `limit` says otherwise, and the most one page holds.
DEFAULT_TRANSACTION_LIMIT = 20
MAX_TRANSACTION_LIMIT = 100
# GET /events: rows per page unless `limit` says otherwise, and the most one page holds.
DEFAULT_EVENT_LIMIT = 20
MAX_EVENT_LIMIT = 100
# GET /webhook-endpoints: the same for endpoints.
DEFAULT_ENDPOINT_LIMIT = 20
MAX_ENDPOINT_LIMIT = 100
