"""The OpenAPI 3.1 document of /api/v1: every endpoint, body, status code and header as the server answers.

tests/api/test_openapi.py fuzzes the live server against it, and checks that it names
exactly the routes of the api blueprint.
"""
from __future__ import annotations

import copy
from decimal import Decimal
from functools import cache

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

from app.payments.dispute_files import FILE_KINDS, MAX_FILE_BYTES
from app.payments.disputes import EVIDENCE_FIELDS, MAX_EVIDENCE_TEXT, DisputeStatus
from app.payments.events import EVENT_TYPES, MAX_EVENT_ID_LENGTH, MAX_WEBHOOK_ID_LENGTH
from app.payments.model import MAX_TX_NO_LENGTH
from app.payments.schemas import REQUEST_MODELS, RESPONSE_MODELS
from app.webhooks.endpoints import ALL_EVENTS, MAX_DESCRIPTION_LENGTH, MAX_ENDPOINT_ID_LENGTH, MAX_URL_LENGTH

from .idempotency import MAX_KEY_LENGTH
from .limits import (
    DEFAULT_DISPUTE_LIMIT,
    DEFAULT_ENDPOINT_LIMIT,
    DEFAULT_EVENT_LIMIT,
    DEFAULT_SETTLEMENT_LIMIT,
    MAX_DISPUTE_LIMIT,
    MAX_DISPUTE_NO_LENGTH,
    MAX_ENDPOINT_LIMIT,
    MAX_EVENT_LIMIT,
    MAX_SETTLEMENT_LIMIT,
    DEFAULT_TRANSACTION_LIMIT,
    MAX_TRANSACTION_LIMIT,
    MAX_WEBHOOK_LIMIT,
    WEBHOOK_STATUS_WORDS,
)
from .listing import KIND_WORDS, MAX_CURSOR_LENGTH, MAX_FILTER_TEXT, STATUS_WORDS
from .schemas import API_REQUEST_MODELS, API_RESPONSE_MODELS

JSON = "application/json"
SCHEMA_REF = "#/components/schemas/{model}"


def openapi_document(base_url: str) -> dict:
    """The document served at /api/v1/openapi.json."""
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "Paydesk API",
            "version": "1",
            "description": ("Payments, payouts and refunds in front of external payment providers. "
                            "Amounts are JSON numbers, read exactly; timestamps are ISO 8601 UTC with Z. "
                            "Every call needs a live or sandbox bearer token, which fixes the merchant "
                            "and mode of everything it reads and writes."),
        },
        "servers": [{"url": base_url}],
        "security": [{"bearerAuth": []}],
        "paths": {
            **_transaction_paths(MAX_TX_NO_LENGTH),
            **_sandbox_paths(MAX_TX_NO_LENGTH),
            **_webhook_paths(MAX_TX_NO_LENGTH, MAX_WEBHOOK_LIMIT, MAX_WEBHOOK_ID_LENGTH),
            **_settlement_paths(),
            **_dispute_paths(),
            **_batch_paths(),
            **_event_paths(),
            **_endpoint_paths(),
            "/api/v1/openapi.json": {"get": {
                "operationId": "getOpenApiDocument",
                "summary": "This document.",
                "responses": {"200": _response("The OpenAPI 3.1 document.", {"type": "object"}),
                              "401": _shared("Unauthorized")},
            }},
        },
        "components": {
            "securitySchemes": {"bearerAuth": {
                "type": "http", "scheme": "bearer",
                "description": "A live or sandbox API token (shown once when the merchant is created).",
            }},
            "schemas": {
                **model_schemas(),
                **_error_schemas(),
                **_settlement_schemas(),
                **_dispute_schemas(),
                **_batch_schemas(),
                **_event_schemas(),
                **_endpoint_schemas(),
            },
            "responses": _shared_responses(),
        },
    }
    # The building blocks below share dicts; a caller may change its copy (schemathesis does).
    return copy.deepcopy(document)


# Building blocks

class _OpenApiSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema as this document writes it: amounts are JSON numbers (the API reads
    them exactly; it takes none as a string), and properties carry no generated titles."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def decimal_schema(self, schema) -> dict:
        bounds = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}
        return {"type": "number", **{keyword: _number(schema[bound]) for bound, keyword in bounds.items()
                                     if bound in schema}}


def _number(bound: Decimal) -> int | Decimal:
    return int(bound) if bound == int(bound) else bound


@cache
def model_schemas() -> dict:
    """The component schemas of the request and response models (app.payments.schemas, .schemas)
    and of the types they name (Amount, Currency, Billing...)."""
    inputs = [(model, "validation", TypeAdapter(model).core_schema)
              for model in REQUEST_MODELS + API_REQUEST_MODELS]
    inputs += [(model, "serialization", TypeAdapter(model).core_schema)
               for model in RESPONSE_MODELS + API_RESPONSE_MODELS]
    _refs, definitions = _OpenApiSchema(ref_template=SCHEMA_REF).generate_definitions(inputs)
    return definitions


def _ref(name: str) -> dict:
    return {"$ref": SCHEMA_REF.format(model=name)}


def _shared(name: str) -> dict:
    return {"$ref": f"#/components/responses/{name}"}


def _json(schema: dict, **extra) -> dict:
    return {"content": {JSON: {"schema": schema, **extra}}}


def _response(description: str, schema: dict | None = None, headers: dict | None = None) -> dict:
    response: dict = {"description": description}
    if schema is not None:
        response.update(_json(schema))
    if headers:
        response["headers"] = headers
    return response


def _object(properties: dict, required: list[str] | None = None, **extra) -> dict:
    """An object with exactly these fields: the server rejects unknown ones and sends no others."""
    return {"type": "object", "additionalProperties": False, "required": required or list(properties),
            "properties": properties, **extra}




def _error(const: str | None = None) -> dict:
    """An {error} body; const when the server always writes the same words."""
    return _object({"error": {"type": "string", "const": const} if const else {"type": "string"}})


def _path_parameter(name: str, max_length: int, example: str) -> dict:
    return {"name": name, "in": "path", "required": True, "example": example,
            "schema": {"type": "string", "minLength": 1, "maxLength": max_length}}


REPLAYED = {"Idempotent-Replayed": {
    "description": "true when this is the stored answer to an earlier request with the same Idempotency-Key.",
    "schema": {"type": "string", "enum": ["true"]},
}}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": ("Same key and same body within 24 hours: the first answer (success or error) is replayed "
                    "byte for byte. Same key with another body: 422. Keys are scoped per merchant and mode."),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
}


# Transactions, refunds, banks, methods

def _transaction_paths(max_tx_no: int) -> dict:
    in_progress = _error("A request with this Idempotency-Key is still being processed")
    key_errors = {"413": _shared("TooLarge"), "422": _shared("KeyReused")}
    cache_headers = {
        "Cache-Control": {"required": True, "schema": {"type": "string", "const": "private, max-age=3600"}},
        "ETag": {"required": True, "schema": {"type": "string"}, "description": "Send it back in If-None-Match."},
    }
    create_example = {
        "amount": 100.00, "currency": "EUR", "reference": "order-1001",
        "statementDescriptor": "ACME SHOP", "callbackUrl": "https://merchant.example/webhooks",
        "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                    "customerReference": "cust-42"},
        "payment": {"paymentMethod": "card"},
    }
    fetching = "The bank list is being fetched from the provider; try again in a moment."
    not_ready = ("A payout method's bank list (a provider account's, kept by Paydesk's workers) has "
                 "no stored copy yet: it is being fetched now; nothing was written. Try again after "
                 "Retry-After seconds (not kept with an Idempotency-Key: the retry runs anew).")
    retry_after = {"Retry-After": {"required": True, "schema": {"type": "string", "pattern": "^[0-9]+$"},
                                   "description": "Seconds after which the list is likely stored."}}
    return {
        "/api/v1/transactions": {"get": _transaction_list_operation(max_tx_no), "post": {
            "operationId": "createTransaction",
            "summary": "Create a payment or payout (Pending) and get its checkout URL.",
            "parameters": [IDEMPOTENCY_KEY],
            "requestBody": {"required": True, **_json(_ref("CreateTransactionRequest"), example=create_example)},
            "responses": {
                "200": _response("Created.", _ref("CreateTransactionResponse"), REPLAYED),
                "400": _response(
                    "Field validation failed ({errors}; also a body that is not a JSON object, or a bad "
                    "Idempotency-Key); or, in live mode outside a demo (DEMO_MODE), "
                    "the payment method is served by the simulator, which moves no real money ({error}).",
                    {"anyOf": [_ref("FieldErrors"), _ref("Error")]}, REPLAYED),
                "401": _shared("Unauthorized"),
                "409": _response(
                    "The reference is already used, or a request with this Idempotency-Key is still running.",
                    {"anyOf": [_ref("DuplicateReference"), in_progress]}, REPLAYED),
                **key_errors,
                "503": _response("A payout whose bank must be checked: " + not_ready, _error(fetching),
                                 retry_after),
            },
        }},
        "/api/v1/transactions/{txNo}/status": {"get": {
            "operationId": "getTransactionStatus",
            "summary": "The stored status of a transaction or refund (no provider call).",
            "parameters": [_path_parameter("txNo", max_tx_no, "SBX-CAPTURED")],
            "responses": {
                "200": _response("The transaction.", _ref("TransactionStatus")),
                "401": _shared("Unauthorized"),
                "404": _shared("NotFound"),
            },
        }},
        "/api/v1/transactions/{txNo}/cancel": _cancel_operation(max_tx_no, in_progress, key_errors),
        "/api/v1/transactions/refund": {"post": {
            "operationId": "refundTransaction",
            "summary": "Refund a Captured payment in full or in part.",
            "parameters": [IDEMPOTENCY_KEY],
            "requestBody": {"required": True, **_json(_ref("RefundRequest"),
                                                      example={"txNo": "SBX-CAPTURED", "amount": 10.00})},
            "responses": {
                "200": _response("The refund, with its status after the provider's immediate answer.",
                                 _ref("RefundResponse"), REPLAYED),
                "400": _response("Field validation failed ({errors}), or a refund rule refused it ({error}).",
                                 {"anyOf": [_ref("FieldErrors"), _ref("Error")]}, REPLAYED),
                "401": _shared("Unauthorized"),
                "409": _response("A request with this Idempotency-Key is still being processed.", in_progress),
                **key_errors,
            },
        }},
        "/api/v1/transactions/banks": {"post": {
            "operationId": "listBanks",
            "summary": "The banks of a payout method for a currency (and country). Cache for an hour.",
            "parameters": [{"name": "If-None-Match", "in": "header", "required": False,
                            "schema": {"type": "string"}, "description": "The ETag of an earlier answer."}],
            "requestBody": {"required": True, **_json(
                _ref("BankListRequest"), example={"paymentMethod": "ng-bank-payout", "currency": "NGN"})},
            "responses": {
                "200": _response("The banks.", {"type": "array", "items": _ref("Bank")}, cache_headers),
                "304": {"description": "Unchanged since the ETag in If-None-Match (no body).",
                        "headers": cache_headers},
                "400": _response("Validation Error.", _object(
                    {"error": {"const": "Validation Error"}, "message": {"type": "string"}})),
                "401": _shared("Unauthorized"),
                "413": _shared("TooLarge"),
                "500": _response("The simulator failed to give the list.", _object({
                    "error": {"const": "Internal Server Error"},
                    "message": {"const": "An error occurred while fetching the bank list. Please contact support."},
                })),
                "503": _response(not_ready, _object({"error": {"const": "Service Unavailable"},
                                                     "message": {"const": fetching}}), retry_after),
            },
        }},
        "/api/v1/payment-methods": {"get": {
            "operationId": "listPaymentMethods",
            "summary": "The token's merchant's payment methods.",
            "responses": {
                "200": _response("The methods.", {"type": "array", "items": _ref("PaymentMethod")}),
                "401": _shared("Unauthorized"),
            },
        }},
    }


def _transaction_list_operation(max_tx_no: int) -> dict:
    """GET /api/v1/transactions (app.api.listing)."""
    def query(name: str, schema: dict, description: str, **extra) -> dict:
        return {"name": name, "in": "query", "required": False, "description": description, "schema": schema,
                **extra}

    text = {"type": "string", "minLength": 1, "maxLength": MAX_FILTER_TEXT}
    words = {"type": "array", "items": {"type": "string"}}
    moment = {"type": "string", "examples": ["2026-11-30", "2026-11-30T12:00:00Z"]}
    amount = {"type": "string", "pattern": r"^(0|[1-9][0-9]{0,17})(\.[0-9]{1,6})?$"}
    tx_no = {"type": "string", "minLength": 1, "maxLength": max_tx_no}
    return {
        "operationId": "listTransactions",
        "summary": "The token's transactions, newest first, with the status response's fields.",
        "parameters": [
            query("status", words, "Any of these statuses: comma-separated or repeated "
                  f"({', '.join(STATUS_WORDS)}).", style="form", explode=True),
            query("kind", {"type": "string", "enum": list(KIND_WORDS)}, "Payment, Payout or Refund."),
            query("currency", {"type": "string", "pattern": "^[A-Z]{3}$"}, "ISO 4217 code."),
            query("paymentMethod", text, "The payment method's identifier."),
            query("amountMin", amount, "Lowest amount, inclusive, exact; needs currency."),
            query("amountMax", amount, "Highest amount, inclusive, exact; needs currency."),
            query("createdFrom", moment, "Created at or after: a date (its midnight UTC) or a UTC time."),
            query("createdTo", moment, "Created before (exclusive): a date (its midnight UTC) or a UTC time."),
            query("reference", text, "The whole merchant reference."),
            query("customerEmail", text, "The customer's whole e-mail address, any case."),
            query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_TRANSACTION_LIMIT,
                            "default": DEFAULT_TRANSACTION_LIMIT}, "Rows per page."),
            query("cursor", {"type": "string", "maxLength": MAX_CURSOR_LENGTH},
                  "nextCursor of the previous page (opaque; it keeps the direction it walked)."),
            query("startingAfter", tx_no, "The rows older than this transaction (its TransactionId)."),
            query("endingBefore", tx_no, "The rows newer than this transaction, still newest first."),
        ],
        "responses": {
            "200": _response("A page of transactions.", _object({
                "transactions": {"type": "array", "items": _ref("TransactionStatus")},
                "hasMore": {"type": "boolean", "description": "More rows lie beyond this page."},
                "nextCursor": {"type": ["string", "null"],
                               "description": "Pass it as cursor for the next page; null on the last."}})),
            "400": _shared("FieldErrors"),
            "401": _shared("Unauthorized"),
        },
    }


def _cancel_operation(max_tx_no: int, in_progress: dict, key_errors: dict) -> dict:
    """POST /transactions/{txNo}/cancel, with examples of its own answers (200, 202, 400, 404, 502)."""
    cancelled = {
        "TransactionId": "PAY-9F2C41D07A3B5E68", "Status": "Declined", "Amount": 100.00, "Currency": "EUR",
        "Reference": "order-1001", "DeclineReason": "Payment Cancelled By User",
        "CreatedAt": "2026-01-15T09:30:00Z", "ProviderTransactionId": "sim_PAY-9F2C41D07A3B5E68",
        "ProviderStatus": "CANCELLED", "ProviderMessage": "Payment cancelled",
        "SuccessUrl": None, "PendingUrl": None, "FailureUrl": None,
        "UserDefinedField1": None, "UserDefinedField2": None, "UserDefinedField3": None,
    }
    requested = {
        **cancelled, "TransactionId": "PAY-3D8A0C52E71B9F46", "Status": "Pending", "DeclineReason": None,
        "ProviderTransactionId": "cs_test_a1B2c3D4e5F6g7H8", "ProviderStatus": "open",
        "ProviderMessage": "Cancellation requested; waiting for the provider",
    }
    refusals = {
        "notCancellable": {"summary": "Not Pending or Authorized", "value": {"error": (
            "Only Pending or Authorized transactions can be cancelled. Current status: Captured")}},
        "notAPayment": {"summary": "A payout or a refund", "value": {"error": (
            "Only payments can be cancelled; transaction POU-0123456789ABCDEF is a payout")}},
        "fields": {"summary": "A body with fields", "value": {"errors": {"amount": ["Unknown field"]}}},
    }
    unreachable = "The provider could not be reached; nothing was changed. Try again."
    return {"post": {
        "operationId": "cancelTransaction",
        "summary": "Cancel a Pending or Authorized payment: it becomes Declined, Payment Cancelled By User.",
        "description": ("The provider is asked to void the payment first. The simulator (sandbox, demo) "
                        "answers inside the request: 200, Declined. One it reports as paid meanwhile is "
                        "recorded Captured and the cancel refused (400, Current status: Captured). A provider "
                        "behind a network (Paystack, Stripe) is asked by a worker instead: the cancel is "
                        "requested and answered 202 with the payment still Pending or Authorized; the outcome "
                        "(Declined, or Captured if it was paid meanwhile) follows by webhook and on GET "
                        "/transactions/{txNo}/status. A second cancel while one is requested answers 202 "
                        "again. On success the status change is in the history and a payment.declined "
                        "webhook goes to the callbackUrl. Takes no fields: send no body or {}."),
        "parameters": [_path_parameter("txNo", max_tx_no, "SBX-PENDING"), IDEMPOTENCY_KEY],
        "requestBody": {"required": False, **_json(_object({}), example={})},
        "responses": {
            "200": {"description": "The payment after the cancel, as GET /transactions/{txNo}/status answers.",
                    "headers": REPLAYED, **_json(_ref("TransactionStatus"), example=cancelled)},
            "202": {"description": ("The cancel is requested: a worker asks the provider (Paystack, Stripe) to "
                                    "void the payment. Its status body as GET /transactions/{txNo}/status "
                                    "answers, still Pending or Authorized."),
                    "headers": REPLAYED, **_json(_ref("TransactionStatus"), example=requested)},
            "400": {"description": ("The cancel is refused ({error}): not a payment, or not Pending or "
                                    "Authorized; or the body has fields ({errors})."),
                    "headers": REPLAYED,
                    **_json({"anyOf": [_ref("Error"), _ref("FieldErrors")]}, examples=refusals)},
            "401": _shared("Unauthorized"),
            "404": {"description": "No such transaction for this merchant and mode.", "headers": REPLAYED,
                    **_json(_ref("Error"), example={"error": "Transaction with TxNo PAY-0000000000000000 not found"})},
            "409": _response("A request with this Idempotency-Key is still being processed.", in_progress),
            **key_errors,
            "502": {"description": unreachable + " Not kept with the Idempotency-Key: a retry asks again.",
                    **_json(_error(unreachable), example={"error": unreachable})},
        },
    }}


def _sandbox_paths(max_tx_no: int) -> dict:
    return {
        "/api/v1/sandbox/transactions/{txNo}/outcome": {"post": {
            "operationId": "setSandboxOutcome",
            "summary": "Sandbox only: move a payment or payout as its provider would, with its webhook.",
            "parameters": [_path_parameter("txNo", max_tx_no, "SBX-PENDING")],
            "requestBody": {"required": True, **_json(_ref("SandboxOutcomeRequest"),
                                                      example={"status": "Captured"})},
            "responses": {
                "200": _response("The transaction after the move.", _ref("TransactionStatus")),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "403": _shared("SandboxOnly"),
                "404": _shared("NotFound"),
                "409": _response("Its status does not allow this move (or it is a refund).", _ref("Error")),
                "413": _shared("TooLarge"),
            },
        }},
        "/api/v1/sandbox/reset": {"post": {
            "operationId": "resetSandbox",
            "summary": "Sandbox only: restore the test transactions (SBX-...) to their starting states.",
            "responses": {
                "200": _response("Restored.", _ref("SandboxReset")),
                "401": _shared("Unauthorized"),
                "403": _shared("SandboxOnly"),
            },
        }},
    }


# Webhook log and resend

def _webhook_paths(max_tx_no: int, max_limit: int, max_webhook_id: int) -> dict:
    return {
        "/api/v1/webhooks": {"get": {
            "operationId": "listWebhooks",
            "summary": "The token's webhook events, newest first, each with its delivery attempts.",
            "parameters": [
                {"name": "txNo", "in": "query", "required": False, "description": "Only this transaction's.",
                 "schema": {"type": "string", "maxLength": max_tx_no}},
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": max_limit, "default": 50}},
            ],
            "responses": {
                "200": _response("The events.", _object(
                    {"webhooks": {"type": "array", "items": _ref("WebhookEvent")}})),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "404": _shared("NotFound"),
            },
        }},
        "/api/v1/webhooks/{webhookId}/resend": {"post": {
            "operationId": "resendWebhook",
            "summary": "Queue the event for an immediate manual attempt; a fresh retry schedule follows.",
            "parameters": [_path_parameter("webhookId", max_webhook_id, "msg_0123456789abcdef01234567")],
            "responses": {
                "202": _response("Queued.", _ref("WebhookEvent")),
                "401": _shared("Unauthorized"),
                "404": _response("No such event for this merchant and mode.", _ref("Error")),
            },
        }},
    }


# Settlements and reconciliation

_AMOUNT = {"type": "number", "description": "In the settlement's currency, signed as the provider reports it."}
_RESULTS = ["matched", "amount_differs", "unknown_to_paydesk"]


def _settlement_properties() -> dict:
    return {
        "id": {"type": "string", "pattern": "^stl_[0-9]+$"},
        "provider": {"type": "string", "enum": ["paystack", "stripe", "simulator"]},
        "providerSettlementId": {"type": "string"},
        "settledOn": {"type": "string", "format": "date"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "gross": _AMOUNT, "fees": _AMOUNT, "net": _AMOUNT,
        "status": {"type": "string", "description": "The provider's own word (paid, success, pending...)."},
        "lineCount": {"type": "integer", "minimum": 0},
        "exceptionCount": {"type": "integer", "minimum": 0,
                           "description": "Lines whose result is not matched."},
        "fetchedAt": {"type": "string", "format": "date-time"},
    }


def _settlement_schemas() -> dict:
    return {
        "Settlement": _object(_settlement_properties()),
        "SettlementLine": _object({
            "providerTransactionId": {"type": "string"},
            "reference": {"type": ["string", "null"]},
            "type": {"type": "string", "enum": ["payment", "refund", "dispute", "other"]},
            "gross": _AMOUNT, "fee": _AMOUNT, "net": _AMOUNT,
            "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "txNo": {"type": ["string", "null"], "description": "The matched Paydesk transaction."},
            "result": {"type": "string", "enum": _RESULTS},
        }),
        "SettlementWithLines": _object({**_settlement_properties(),
                                        "lines": {"type": "array", "items": _ref("SettlementLine")}}),
    }


def _settlement_paths() -> dict:
    return {
        "/api/v1/settlements": {"get": {
            "operationId": "listSettlements",
            "summary": "The token's settlements (provider payouts), newest stored first.",
            "parameters": [
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SETTLEMENT_LIMIT,
                            "default": DEFAULT_SETTLEMENT_LIMIT}},
                {"name": "cursor", "in": "query", "required": False,
                 "description": "nextCursor of the previous page (opaque).",
                 "schema": {"type": "string", "maxLength": 40}},
            ],
            "responses": {
                "200": _response("A page of settlements.", _object({
                    "settlements": {"type": "array", "items": _ref("Settlement")},
                    "nextCursor": {"type": ["string", "null"],
                                   "description": "Pass it as cursor for the next page; null on the last."}})),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
            },
        }},
        "/api/v1/settlements/{settlementId}": {"get": {
            "operationId": "getSettlement",
            "summary": "One settlement with its lines, each matched to Paydesk's transaction.",
            "parameters": [_path_parameter("settlementId", 40, "stl_42")],
            "responses": {
                "200": _response("The settlement and its lines.", _ref("SettlementWithLines")),
                "401": _shared("Unauthorized"),
                "404": _response("No such settlement for this merchant and mode.", _ref("Error")),
            },
        }},
        "/api/v1/sandbox/settlements/run": {"post": {
            "operationId": "runSandboxSettlements",
            "summary": ("Settle the sandbox's captured simulator payments of the last 31 days as the "
                        "simulator's daily settlements (fee 1.5% + 0.10 per payment)."),
            "requestBody": {"required": False, "content": {JSON: {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {"amountDiffersFor": {
                    "type": "string", "minLength": 1, "maxLength": 40,
                    "description": "A txNo settled one unit of its currency short (amount_differs)."}}}}}},
            "responses": {
                "200": _response("The settlements stored.", _object({
                    "settlements": {"type": "array", "items": _ref("Settlement")},
                    "fee": {"type": "string"}})),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "403": _shared("SandboxOnly"),
                "413": _shared("TooLarge"),
            },
        }},
    }


# Disputes

def _dispute_schemas() -> dict:
    """The Dispute body, and the evidence fields, from the one list the API reads them by."""
    text = {"type": "string", "maxLength": MAX_EVIDENCE_TEXT}
    nullable_text = {"type": ["string", "null"]}
    time = {"type": ["string", "null"], "format": "date-time"}
    evidence = {"type": "object", "additionalProperties": False,
                "properties": {name: {**text, "description": words} for name, words in EVIDENCE_FIELDS.items()}}
    dispute = {
        "disputeId": {"type": "string", "description": "Paydesk's id of the dispute (DSP-...)."},
        "txNo": {"type": "string", "description": "The disputed payment."},
        "status": {"type": "string", "enum": [s.value for s in DisputeStatus]},
        "amount": {"type": "number"},
        "currency": {"type": "string"},
        "reason": nullable_text,
        "dueBy": {**time, "description": "The deadline for evidence."},
        "provider": {"type": "string"},
        "providerDisputeId": {"type": "string"},
        "providerStatus": nullable_text,
        "evidence": evidence,
        "evidenceSubmittedAt": time,
        "evidenceSubmittedBy": nullable_text,
        "pendingAction": {"type": ["string", "null"], "enum": ["submit_evidence", "accept", None],
                          "description": "What a worker is still to take to the provider."},
        "lastError": {**nullable_text, "description": "Why the provider refused or could not take the last action."},
        "createdAt": {"type": "string", "format": "date-time"},
        "updatedAt": {"type": "string", "format": "date-time"},
    }
    dispute_file = _object({
        "fileId": {"type": "integer"},
        "kind": {"type": "string", "enum": list(FILE_KINDS)},
        "filename": {"type": "string"},
        "contentType": {"type": "string", "enum": ["application/pdf", "image/png", "image/jpeg"],
                        "description": "Told by the file's content, not its name."},
        "size": {"type": "integer", "maximum": MAX_FILE_BYTES},
        "sha256": {"type": "string"},
        "uploaded": {"type": "boolean", "description": "The provider has the file (evidence submitted)."},
        "providerFileId": nullable_text,
        "createdAt": {"type": "string", "format": "date-time"},
        "createdBy": {"type": "string"},
    })
    move = _object({"from": {"type": ["string", "null"]}, "to": {"type": "string"}, "source": {"type": "string"},
                    "note": nullable_text, "at": {"type": "string", "format": "date-time"}})
    return {
        "DisputeEvidence": evidence,
        "Dispute": _object(dispute),
        "DisputeFile": dispute_file,
        "DisputeWithHistory": _object({**dispute, "files": {"type": "array", "items": _ref("DisputeFile")},
                                       "history": {"type": "array", "items": move}}),
        "EvidenceRequest": {**evidence, "properties": {**evidence["properties"], "submit": {
            "type": "boolean", "default": False,
            "description": "true: a worker submits the evidence to the provider (202)."}}},
    }


def _dispute_paths() -> dict:
    dispute_id = _path_parameter("disputeId", MAX_DISPUTE_NO_LENGTH, "DSP-9F2C41D07A3B5E68")
    acted = {
        "200": _response("Nothing is owed to the provider (a draft, or the sandbox's simulator answered at once).",
                         _ref("Dispute")),
        "202": _response("Committed; a worker takes it to the provider. The dispute as it stands.", _ref("Dispute")),
        "400": _shared("FieldErrors"),
        "401": _shared("Unauthorized"),
        "404": _response("No such dispute for this merchant and mode.", _ref("Error")),
        "409": _response("Its status does not allow it, or an earlier action is still being sent.", _ref("Error")),
        "413": _shared("TooLarge"),
    }
    return {
        "/api/v1/disputes": {"get": {
            "operationId": "listDisputes",
            "summary": "The token's disputes, newest first.",
            "parameters": [
                {"name": "status", "in": "query", "required": False,
                 "description": "Only these statuses, comma-separated.", "schema": {"type": "string"}},
                {"name": "dueBefore", "in": "query", "required": False,
                 "description": "Only those due before this date or UTC time.", "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": MAX_DISPUTE_LIMIT,
                            "default": DEFAULT_DISPUTE_LIMIT}},
                {"name": "cursor", "in": "query", "required": False,
                 "description": "The nextCursor of the previous page.", "schema": {"type": "string"}},
            ],
            "responses": {
                "200": _response("A page of disputes; nextCursor is null on the last.", _object({
                    "disputes": {"type": "array", "items": _ref("Dispute")},
                    "nextCursor": {"type": ["string", "null"]}})),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
            },
        }},
        "/api/v1/disputes/{disputeId}": {"get": {
            "operationId": "getDispute",
            "summary": "One dispute, with the history of its status moves.",
            "parameters": [dispute_id],
            "responses": {
                "200": _response("The dispute.", _ref("DisputeWithHistory")),
                "401": _shared("Unauthorized"),
                "404": _response("No such dispute for this merchant and mode.", _ref("Error")),
            },
        }},
        "/api/v1/disputes/{disputeId}/evidence": {"post": {
            "operationId": "sendDisputeEvidence",
            "summary": "Keep evidence fields over the draft (an empty one removes it); submit: true sends them.",
            "parameters": [dispute_id],
            "requestBody": {"required": True, **_json(_ref("EvidenceRequest"), example={
                "productDescription": "Two ceramic cups, delivered by courier", "submit": True})},
            "responses": acted,
        }},
        "/api/v1/disputes/{disputeId}/files": {"post": {
            "operationId": "addDisputeFile",
            "summary": "Keep a file for the evidence (one per kind: a new one replaces the old); "
                       "a worker uploads it to the provider when the evidence is submitted.",
            "parameters": [dispute_id],
            "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": _object({
                "kind": {"type": "string", "enum": list(FILE_KINDS)},
                "file": {"type": "string", "format": "binary",
                         "description": "A PDF, PNG or JPEG (told by its content) of at most 4 MB."}})}}},
            "responses": {
                "201": _response("The file, kept (not yet uploaded to the provider).", _ref("DisputeFile")),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "404": _response("No such dispute for this merchant and mode.", _ref("Error")),
                "409": _response("The evidence is no longer a draft (submitted, or the dispute is closed).",
                                 _ref("Error")),
                "413": _shared("TooLarge"),
            },
        }},
        "/api/v1/disputes/{disputeId}/accept": {"post": {
            "operationId": "acceptDispute",
            "summary": "Accept the dispute: its amount goes to the customer and is no longer refundable.",
            "parameters": [dispute_id],
            "requestBody": {"required": False, **_json(_object({}))},
            "responses": acted,
        }},
        "/api/v1/sandbox/disputes/{disputeId}/outcome": {"post": {
            "operationId": "setSandboxDisputeOutcome",
            "summary": "Sandbox only: close a dispute as the card network would, with its webhooks.",
            "parameters": [dispute_id],
            "requestBody": {"required": True, **_json(_object(
                {"outcome": {"type": "string", "enum": ["won", "lost"]}}), example={"outcome": "won"})},
            "responses": {
                "200": _response("The dispute after the move.", _ref("Dispute")),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "403": _shared("SandboxOnly"),
                "404": _response("No such dispute for this merchant and mode.", _ref("Error")),
                "409": _response("Its status does not allow this move.", _ref("Error")),
                "413": _shared("TooLarge"),
            },
        }},
    }


# Batches

_BATCH_ID = _path_parameter("batchId", 40, "bat_9f2c41d07a3b5e68c1d2e3f4")


def _batch_schemas() -> dict:
    """A batch, its rows, and the rows a batch create takes (payout rows or refund rows)."""
    text = {"type": "string"}
    amount = {"type": "number", "description": "Read exactly, as the create's and refund's amount."}
    return {
        "PayoutBatchRow": {
            "type": "object", "additionalProperties": True,
            "description": ("One payout: the create's fields, flat. A row's unknown fields, like its "
                            "refused values, are that row's errors (the batch is still stored)."),
            "properties": {
                "paymentMethod": text, "amount": amount, "currency": text, "holder": text,
                "accountNumber": text, "bank": text, "reference": text,
                "recipientId": {"type": "string", "description": (
                    "A saved recipient (rcp_...): the row is paid to its account; leave paymentMethod, "
                    "bank, holder and accountNumber out.")},
                "email": text, "firstName": {"type": "string", "description": "Default: the holder's first names."},
                "lastName": {"type": "string", "description": "Default: the holder's last name."},
                "customerReference": {"type": "string", "description": "Default: the reference."},
                "country": text,
                "statementDescriptor": {"type": "string", "description": "Default: the merchant's name."},
                "callbackUrl": {"type": "string", "description": "Default: the merchant's callback URL."},
            }},
        "RefundBatchRow": {
            "type": "object", "additionalProperties": True,
            "properties": {"txNo": text, "amount": amount, "reason": text}},
        **{f"{word}BatchRequest": _object({
            "rows": {"type": "array", "minItems": 1, "maxItems": 5000, "items": _ref(f"{word}BatchRow")},
            "runValidRows": {"type": "boolean", "default": False,
                             "description": "Run the valid rows even when some are refused."},
        }, required=["rows"]) for word in ("Payout", "Refund")},
        "BatchRowResult": _object({
            "row": {"type": "integer", "minimum": 1},
            "state": {"type": "string", "enum": ["invalid", "valid", "skipped", "created", "failed"]},
            "errors": {"type": ["object", "null"], "additionalProperties": {
                "type": "array", "items": {"type": "string"}},
                "description": "The create's (or refund's) own messages, per field."},
            "txNo": {"type": ["string", "null"]},
            "status": {"type": "string", "description": "The transaction's status once created, else the row's state."},
            "declineReason": {"type": ["string", "null"]},
        }),
        "Batch": _object({
            "id": {"type": "string", "pattern": "^bat_[0-9a-f]+$"},
            "kind": {"type": "string", "enum": ["payout", "refund"]},
            "state": {"type": "string", "enum": ["review", "awaiting_approval", "running", "done", "cancelled"]},
            "source": {"type": "string", "enum": ["api", "dashboard"]},
            "rowCount": {"type": "integer", "minimum": 1},
            "validRows": {"type": "integer", "minimum": 0},
            "invalidRows": {"type": "integer", "minimum": 0},
            "waitingRows": {"type": "integer", "minimum": 0},
            "createdRows": {"type": "integer", "minimum": 0},
            "failedRows": {"type": "integer", "minimum": 0},
            "totals": {"type": "object", "additionalProperties": {"type": "number"},
                       "description": "The valid rows' amounts per currency."},
            "createdAt": {"type": "string", "format": "date-time"},
            "approvedAt": {"type": ["string", "null"], "format": "date-time"},
            "finishedAt": {"type": ["string", "null"], "format": "date-time"},
            "rows": {"type": "array", "items": _ref("BatchRowResult")},
        }, required=["id", "kind", "state", "source", "rowCount", "validRows", "invalidRows", "waitingRows",
                     "createdRows", "failedRows", "totals", "createdAt", "approvedAt", "finishedAt"]),
    }


def _batch_paths() -> dict:
    refused = _response("The batch is not in a state that allows it.", _ref("Error"))
    not_found = _response("No such batch of this kind for this merchant and mode.", _ref("Error"))
    paths = {}
    for kind, word, row in (("payouts", "Payout", "create"), ("refunds", "Refund", "refund")):
        paths[f"/api/v1/{kind}/batches"] = {"post": {
            "operationId": f"create{word}Batch",
            "summary": (f"Check every row as its own {row} would; store the batch. Without refused rows "
                        "(or with runValidRows) it runs at once, awaiting one approval when a currency's "
                        "total is above the approval threshold; else it stays in review."),
            "parameters": [IDEMPOTENCY_KEY],
            "requestBody": {"required": True, **_json(_ref(f"{word}BatchRequest"))},
            "responses": {
                "201": _response("The batch and its rows.", _ref("Batch"), REPLAYED),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "409": _response("A request with this Idempotency-Key is still being processed.", _ref("Error")),
                "413": _shared("TooLarge"),
                "422": _shared("KeyReused"),
            },
        }}
        paths[f"/api/v1/{kind}/batches/{{batchId}}"] = {"get": {
            "operationId": f"get{word}Batch",
            "summary": "The batch, its counts and each row's result.",
            "parameters": [_BATCH_ID],
            "responses": {"200": _response("The batch and its rows.", _ref("Batch")),
                          "401": _shared("Unauthorized"), "404": not_found},
        }}
        for action, summary in (("run", "Run a batch in review: refused rows are skipped, valid rows made."),
                                ("cancel", "Cancel a batch in review.")):
            paths[f"/api/v1/{kind}/batches/{{batchId}}/{action}"] = {"post": {
                "operationId": f"{action}{word}Batch",
                "summary": summary,
                "parameters": [_BATCH_ID],
                "responses": {"200": _response("The batch.", _ref("Batch")), "401": _shared("Unauthorized"),
                              "404": not_found, "409": refused},
            }}
    return paths


# Events

def _event_schemas() -> dict:
    time = {"type": ["string", "null"], "format": "date-time"}
    return {
        "EventDelivery": _object({
            "webhookId": {"type": "string", "description": "Sent as webhook-id; stable across retries."},
            "endpointId": {"type": ["string", "null"],
                           "description": "The webhook endpoint it goes to; null for the callbackUrl."},
            "url": {"type": "string"},
            "status": {"type": "string", "enum": list(WEBHOOK_STATUS_WORDS.values())},
            "attempts": {"type": "integer", "minimum": 0},
            "lastHttpStatus": {"type": ["integer", "null"]},
            "lastError": {"type": ["string", "null"]},
            "nextAttemptAt": time,
            "deliveredAt": time,
        }),
        "Event": _object({
            "id": {"type": "string", "description": "evt_ and 24 hex digits."},
            "type": {"type": "string", "enum": list(EVENT_TYPES)},
            "txNo": {"type": "string", "description": "The transaction it is about (a dispute's payment)."},
            "createdAt": {"type": "string", "format": "date-time"},
            "data": {"type": "object", "description": "The webhook's exact body."},
            "deliveries": {"type": "array", "items": _ref("EventDelivery"),
                           "description": "The callbackUrl's and each subscribed endpoint's, oldest first."},
        }),
    }


def _event_paths() -> dict:
    def query(name: str, schema: dict, description: str, **extra) -> dict:
        return {"name": name, "in": "query", "required": False, "description": description, "schema": schema,
                **extra}

    moment = {"type": "string", "examples": ["2026-11-30", "2026-11-30T12:00:00Z"]}
    return {
        "/api/v1/events": {"get": {
            "operationId": "listEvents",
            "summary": ("The token's events of the last EVENT_RETENTION_DAYS (30 unless configured), "
                        "newest first, each with its deliveries."),
            "parameters": [
                query("type", {"type": "array", "items": {"type": "string", "enum": list(EVENT_TYPES)}},
                      "Any of these event types: comma-separated or repeated.", style="form", explode=True),
                query("createdFrom", moment, "Created at or after: a date (its midnight UTC) or a UTC time."),
                query("createdTo", moment, "Created before (exclusive): a date or a UTC time."),
                query("txNo", {"type": "string", "minLength": 1, "maxLength": MAX_TX_NO_LENGTH},
                      "Only this transaction's events (a dispute's events name its payment)."),
                query("deliveryFailed", {"type": "string", "enum": ["true", "false"]},
                      "true: only events with a delivery not delivered whose last attempt failed."),
                query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_EVENT_LIMIT,
                                "default": DEFAULT_EVENT_LIMIT}, "Rows per page."),
                query("cursor", {"type": "string", "maxLength": 40}, "nextCursor of the previous page (opaque)."),
            ],
            "responses": {
                "200": _response("A page of events.", _object({
                    "events": {"type": "array", "items": _ref("Event")},
                    "hasMore": {"type": "boolean"},
                    "nextCursor": {"type": ["string", "null"],
                                   "description": "Pass it as cursor for the next page; null on the last."}})),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
            },
        }},
        "/api/v1/events/{eventId}": {"get": {
            "operationId": "getEvent",
            "summary": "One event with its deliveries.",
            "parameters": [_path_parameter("eventId", MAX_EVENT_ID_LENGTH, "evt_0123456789abcdef01234567")],
            "responses": {
                "200": _response("The event.", _ref("Event")),
                "401": _shared("Unauthorized"),
                "404": _response("No such event for this merchant and mode (or past retention).", _ref("Error")),
            },
        }},
    }


# Webhook endpoints

def _endpoint_schemas() -> dict:
    event_types = {"type": "array", "minItems": 1, "uniqueItems": True,
                   "items": {"type": "string", "enum": [ALL_EVENTS, *EVENT_TYPES]},
                   "description": f'The event types it takes; ["{ALL_EVENTS}"]: every one.'}
    url = {"type": "string", "minLength": 1, "maxLength": MAX_URL_LENGTH, "format": "uri",
           "pattern": "^https?://", "description": "http(s); checked by the delivery guard as a callbackUrl is."}
    description = {"type": ["string", "null"], "maxLength": MAX_DESCRIPTION_LENGTH}
    endpoint = {
        "id": {"type": "string", "description": "we_ and 24 hex digits."},
        "url": {"type": "string"},
        "enabledEvents": {"type": "array", "items": {"type": "string"}},
        "enabled": {"type": "boolean"},
        "description": {"type": ["string", "null"]},
        "createdAt": {"type": "string", "format": "date-time"},
        "updatedAt": {"type": "string", "format": "date-time"},
    }
    secret = {"type": "string", "pattern": "^whsec_", "description": "Shown in this answer only."}
    return {
        "WebhookEndpoint": _object(endpoint),
        "WebhookEndpointWithSecret": _object({**endpoint, "secret": secret}),
        "RotatedWebhookEndpoint": _object({**endpoint, "secret": secret, "previousSecretExpiresAt": {
            "type": "string", "format": "date-time",
            "description": "Until then deliveries carry a signature with the previous secret too."}}),
        "ReceiverCheck": _object({
            "id": {"type": "string", "description": "chk_ and 24 hex digits."},
            "endpointId": {"type": "string"},
            "status": {"type": "string", "enum": ["Pending", "Done"]},
            "passed": {"type": ["boolean", "null"],
                       "description": ("No send got a wrong answer: the valid one accepted, the tampered and "
                                       "stale ones refused; an accepted replay does not fail it (null until "
                                       "done).")},
            "requestedAt": {"type": "string", "format": "date-time"},
            "finishedAt": {"type": ["string", "null"], "format": "date-time"},
            "results": {"type": "array", "items": _object({
                "case": {"type": "string", "enum": ["valid", "tampered", "replay", "stale"]},
                "httpStatus": {"type": ["integer", "null"]},
                "error": {"type": ["string", "null"]},
                "accepted": {"type": "boolean", "description": "The receiver answered 2xx."},
                "asExpected": {"type": ["boolean", "null"], "description": (
                    "The answer is right: the valid one accepted, the others refused. Null for an accepted "
                    "replay, which is right only if the receiver did not act on it again: the answer cannot "
                    "tell.")},
                "advice": {"type": ["string", "null"],
                           "description": "How to fix it, or for an accepted replay what to make sure of."},
            })},
        }),
        "WebhookEndpointRequest": _object(
            {"url": url, "enabledEvents": event_types, "enabled": {"type": "boolean", "default": True},
             "description": description}, required=["url", "enabledEvents"]),
        "WebhookEndpointUpdate": _object(
            {"url": url, "enabledEvents": event_types, "enabled": {"type": "boolean"},
             "description": description}, required=[], minProperties=0),
    }


def _endpoint_paths() -> dict:
    endpoint_id = _path_parameter("endpointId", MAX_ENDPOINT_ID_LENGTH, "we_0123456789abcdef01234567")
    not_found = _response("No such endpoint for this merchant and mode.", _ref("Error"))
    example = {"url": "https://merchant.example/paydesk-events", "enabledEvents": ["refund.failed", "payout.failed"],
               "description": "Finance alerts"}
    update = {
        "operationId": "updateWebhookEndpoint",
        "summary": "Change the fields given; disabling stops the endpoint's waiting deliveries (Failed, resendable).",
        "parameters": [endpoint_id],
        "requestBody": {"required": True, **_json(_ref("WebhookEndpointUpdate"), example={"enabled": False})},
        "responses": {
            "200": _response("The endpoint.", _ref("WebhookEndpoint")),
            "400": _shared("FieldErrors"),
            "401": _shared("Unauthorized"),
            "404": not_found,
            "413": _shared("TooLarge"),
        },
    }
    return {
        "/api/v1/webhook-endpoints": {
            "post": {
                "operationId": "createWebhookEndpoint",
                "summary": "A webhook endpoint of the token's merchant and mode; its whsec_ secret is shown once.",
                "requestBody": {"required": True, **_json(_ref("WebhookEndpointRequest"), example=example)},
                "responses": {
                    "201": _response("Created, with its secret.", _ref("WebhookEndpointWithSecret")),
                    "400": _shared("FieldErrors"),
                    "401": _shared("Unauthorized"),
                    "413": _shared("TooLarge"),
                },
            },
            "get": {
                "operationId": "listWebhookEndpoints",
                "summary": "The token's webhook endpoints, newest first.",
                "parameters": [
                    {"name": "limit", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ENDPOINT_LIMIT,
                                "default": DEFAULT_ENDPOINT_LIMIT}},
                    {"name": "cursor", "in": "query", "required": False,
                     "description": "nextCursor of the previous page (opaque).",
                     "schema": {"type": "string", "maxLength": 40}},
                ],
                "responses": {
                    "200": _response("A page of endpoints.", _object({
                        "webhookEndpoints": {"type": "array", "items": _ref("WebhookEndpoint")},
                        "hasMore": {"type": "boolean"},
                        "nextCursor": {"type": ["string", "null"]}})),
                    "400": _shared("FieldErrors"),
                    "401": _shared("Unauthorized"),
                },
            },
        },
        "/api/v1/webhook-endpoints/{endpointId}": {
            "get": {
                "operationId": "getWebhookEndpoint",
                "summary": "One webhook endpoint (never its secret).",
                "parameters": [endpoint_id],
                "responses": {"200": _response("The endpoint.", _ref("WebhookEndpoint")),
                              "401": _shared("Unauthorized"), "404": not_found},
            },
            "patch": update,
            "post": {**update, "operationId": "updateWebhookEndpointByPost",
                     "summary": "The same as PATCH, for clients that cannot send PATCH."},
            "delete": {
                "operationId": "deleteWebhookEndpoint",
                "summary": "Delete the endpoint: no more deliveries go to it; its log stays.",
                "parameters": [endpoint_id],
                "responses": {
                    "200": _response("Deleted.", _object({"id": {"type": "string"}, "deleted": {"const": True}})),
                    "401": _shared("Unauthorized"),
                    "404": not_found,
                },
            },
        },
        "/api/v1/webhook-endpoints/{endpointId}/rotate-secret": {"post": {
            "operationId": "rotateWebhookEndpointSecret",
            "summary": ("A new whsec_ secret, shown once; the previous one keeps signing beside it for 24 hours "
                        "(webhook-signature then carries both signatures, space-separated)."),
            "parameters": [endpoint_id],
            "responses": {
                "200": _response("The endpoint and its new secret.", _ref("RotatedWebhookEndpoint")),
                "401": _shared("Unauthorized"),
                "404": not_found,
            },
        }},
        "/api/v1/webhook-endpoints/{endpointId}/check": {"post": {
            "operationId": "checkWebhookReceiver",
            "summary": ("Ask a worker to send the endpoint a correctly signed test event, a tampered one, a replay "
                        "and a stale one (10 minutes old), and record which the receiver accepted (2xx)."),
            "parameters": [endpoint_id],
            "responses": {
                "202": _response("Recorded; GET .../checks/{checkId} gives the result once run.",
                                 _ref("ReceiverCheck")),
                "401": _shared("Unauthorized"),
                "404": not_found,
            },
        }},
        "/api/v1/webhook-endpoints/{endpointId}/checks/{checkId}": {"get": {
            "operationId": "getWebhookReceiverCheck",
            "summary": "One receiver check: Pending until a worker has run it, then each send's outcome.",
            "parameters": [endpoint_id, _path_parameter("checkId", 40, "chk_0123456789abcdef01234567")],
            "responses": {
                "200": _response("The check.", _ref("ReceiverCheck")),
                "401": _shared("Unauthorized"),
                "404": _response("No such endpoint or check for this merchant and mode.", _ref("Error")),
            },
        }},
        "/api/v1/webhook-endpoints/{endpointId}/resend-failed": {"post": {
            "operationId": "resendFailedWebhooks",
            "summary": "Queue again, each with a fresh retry schedule, the endpoint's Failed deliveries since a time.",
            "parameters": [endpoint_id, {
                "name": "since", "in": "query", "required": True,
                "description": "Deliveries of events created at or after: a date or a UTC time.",
                "schema": {"type": "string", "examples": ["2026-11-30", "2026-11-30T12:00:00Z"]}}],
            "responses": {
                "202": _response("Queued.", _object({"resent": {"type": "integer", "minimum": 0}})),
                "400": _shared("FieldErrors"),
                "401": _shared("Unauthorized"),
                "404": not_found,
            },
        }},
    }


# Errors

def _error_schemas() -> dict:
    return {
        "Error": _error(),
        "FieldErrors": _object({"errors": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "description": ("Messages per field; names PascalCase, dotted for nesting (Billing.Email). "
                            "At most 50 fields; when more had errors, More says how many are not "
                            "shown: [\"120 more fields with errors are not shown\"]."),
        }}),
        "DuplicateReference": _object(
            {"error": {"type": "string"}, "transactionId": {"type": "string"}},
            description="The reference is already used; transactionId names the existing transaction."),
    }


def _shared_responses() -> dict:
    return {
        "Unauthorized": _response("Missing, unknown or revoked bearer token.", _object(
            {"error": {"const": "Authentication Error"}, "message": {"const": "Invalid client credentials"}})),
        "FieldErrors": _response("Field validation failed (also a body that is not a JSON object).",
                                 _ref("FieldErrors")),
        "TooLarge": _response("The body is larger than the server takes (1 MiB unless configured).",
                              _ref("FieldErrors")),
        "SandboxOnly": _response("The token is a live token.", _error("Sandbox only")),
        "NotFound": _response("No such transaction for this merchant and mode.", _ref("Error")),
        "KeyReused": _response("The Idempotency-Key was used with a different request.",
                               _error("Idempotency-Key reused with a different request")),
    }
