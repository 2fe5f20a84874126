"""The OpenAPI 3.1 document of /api/v1: every endpoint, body, code and header as the server answers."""
from __future__ import annotations

from app.payments.model import Status
from app.payments.money import MAX_AMOUNT
from app.payments.requests import MAX_MINOR_DIGITS

from .idempotency import MAX_KEY_LENGTH

JSON = "application/json"
SCHEMAS = "#/components/schemas/"
RESPONSES = "#/components/responses/"
REFUND_STATUSES = [Status.PENDING, Status.CAPTURED, Status.FAILED, Status.DECLINED]
# Transaction numbers are at most this long (the server answers 404 to longer ones).
MAX_TX_NO_LENGTH = 100


def _ref(name: str) -> dict:
    return {"$ref": SCHEMAS + name}


def _json(schema: dict, **extra) -> dict:
    return {"content": {JSON: {"schema": schema, **extra}}}


def _response(description: str, schema: dict | None = None, headers: dict | None = None) -> dict:
    response: dict = {"description": description}
    if schema is not None:
        response.update(_json(schema))
    if headers:
        response["headers"] = headers
    return response


def _shared(name: str) -> dict:
    return {"$ref": RESPONSES + name}


def _text(max_length: int, *, required: bool = True, **extra) -> dict:
    """A string field as the server reads it: optional ones also take null, required ones need a non-blank value."""
    if required:
        return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": r"\S", **extra}
    return {"type": ["string", "null"], "maxLength": max_length, **extra}


def _url(*, required: bool) -> dict:
    return _text(2048, required=required, format="uri", pattern=r"^https?://\S+$",
                 description="An http or https URL.")


def _object(properties: dict, required: list[str], **extra) -> dict:
    return {"type": "object", "additionalProperties": False, "required": required,
            "properties": properties, **extra}


def _message(const: str | None = None, description: str | None = None) -> dict:
    """An {error} body; const when the server always writes the same words."""
    error: dict = {"type": "string"}
    if const is not None:
        error["const"] = const
    body = _object({"error": error}, ["error"])
    if description:
        body["description"] = description
    return body


def _schemas() -> dict:
    amount = {
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": int(MAX_AMOUNT),
        "description": (f"A JSON number, read exactly (never through binary floating point), with at most "
                        f"as many decimals as the currency has (EUR 2, JPY 0, KWD 3; never more than "
                        f"{MAX_MINOR_DIGITS}). Responses write it with exactly the currency's decimals."),
    }
    currency = {"type": "string", "pattern": "^[A-Z]{3}$",
                "description": "An ISO 4217 currency code the payment method supports."}
    tx_no = {"type": "string", "description": "Transaction number (PAY-..., POU-..., RFD-..., SBX-...)."}
    timestamp = {"type": "string", "format": "date-time", "description": "ISO 8601, UTC, with Z."}
    nullable = {"type": ["string", "null"]}
    return {
        "Amount": amount,
        "Currency": currency,
        "Billing": _object(
            {
                "firstName": _text(100),
                "lastName": _text(100),
                "email": _text(254, format="email"),
                "customerReference": _text(100, description="The merchant's own customer identifier."),
                "country": _text(2, required=False, pattern="^[A-Z]{2}$",
                                 description="ISO 3166-1 alpha-2; must be a country of the method."),
            },
            ["firstName", "lastName", "email", "customerReference"],
        ),
        "Payment": _object(
            {
                "paymentMethod": _text(64, description="An id from GET /payment-methods."),
                "bank": _text(20, required=False, description=(
                    "Payouts of methods with a bank list: a code from POST /transactions/banks.")),
                "holder": _text(140, required=False, description="Payouts: the account holder."),
                "accountNumber": _text(64, required=False, description=(
                    "Payouts: the destination account, checked by the method's rule (IBAN, NUBAN, MSISDN).")),
            },
            ["paymentMethod"],
        ),
        "CreateTransactionRequest": _object(
            {
                "amount": _ref("Amount"),
                "currency": _ref("Currency"),
                "reference": _text(100, description="Unique per merchant and mode."),
                "statementDescriptor": _text(22),
                "callbackUrl": _url(required=True),
                "billing": _ref("Billing"),
                "payment": _ref("Payment"),
                "transactionAction": {"enum": ["PAYMENT", None], "description": (
                    "PAYMENT for payout methods (required there); card methods take none.")},
                "successUrl": _url(required=False),
                "pendingUrl": _url(required=False),
                "failureUrl": _url(required=False),
                "userDefinedField1": _text(255, required=False),
                "userDefinedField2": _text(255, required=False),
                "userDefinedField3": _text(255, required=False),
            },
            ["amount", "currency", "reference", "statementDescriptor", "callbackUrl", "billing", "payment"],
        ),
        "CreateTransactionResponse": _object(
            {
                "transactionId": tx_no,
                "reference": {"type": "string"},
                "currency": _ref("Currency"),
                "amount": _ref("Amount"),
                "status": {"type": "string", "enum": ["PENDING"]},
                "message": {"type": "string"},
                "checkoutUrl": {"type": "string", "format": "uri",
                                "description": "Hosted checkout page of the transaction."},
            },
            ["transactionId", "reference", "currency", "amount", "status", "message", "checkoutUrl"],
        ),
        "TransactionStatus": _object(
            {
                "TransactionId": tx_no,
                "Status": {"type": "string", "enum": [s.value for s in Status],
                           "description": "The authoritative state; base business logic on it."},
                "Amount": _ref("Amount"),
                "Currency": _ref("Currency"),
                "Reference": {"type": "string"},
                "DeclineReason": {**nullable, "description": "Set when Status is Declined or Failed."},
                "CreatedAt": timestamp,
                "ProviderTransactionId": nullable,
                "ProviderStatus": {**nullable, "description": "Informational."},
                "ProviderMessage": {**nullable, "description": "Informational."},
                "SuccessUrl": nullable,
                "PendingUrl": nullable,
                "FailureUrl": nullable,
                "UserDefinedField1": nullable,
                "UserDefinedField2": nullable,
                "UserDefinedField3": nullable,
            },
            ["TransactionId", "Status", "Amount", "Currency", "Reference", "DeclineReason", "CreatedAt",
             "ProviderTransactionId", "ProviderStatus", "ProviderMessage", "SuccessUrl", "PendingUrl",
             "FailureUrl", "UserDefinedField1", "UserDefinedField2", "UserDefinedField3"],
        ),
        "RefundRequest": _object(
            {
                "txNo": _text(MAX_TX_NO_LENGTH, description="The captured payment to refund."),
                "amount": _ref("Amount"),
                "reason": _text(255, required=False, description="Stored in UserDefinedField1 of the refund."),
                "description": _text(1000, required=False,
                                     description="Stored in UserDefinedField2 of the refund."),
            },
            ["txNo", "amount"],
        ),
        "RefundResponse": _object(
            {
                "refundTxNo": tx_no,
                "originalTxNo": tx_no,
                "amount": _ref("Amount"),
                "currency": _ref("Currency"),
                "status": {"type": "string", "enum": [s.value for s in REFUND_STATUSES],
                           "description": "After the provider's immediate answer; Pending ones finish later."},
                "message": {"type": "string"},
                "providerRefundId": nullable,
                "createdAt": timestamp,
            },
            ["refundTxNo", "originalTxNo", "amount", "currency", "status", "message", "providerRefundId",
             "createdAt"],
        ),
        "BankListRequest": _object(
            {
                "paymentMethod": {"type": "string", "minLength": 1, "maxLength": 100},
                "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "country": {"type": ["string", "null"], "maxLength": 100, "description": (
                    "ISO 3166-1 alpha-2, alpha-3 or English name, any case.")},
            },
            ["paymentMethod", "currency"],
        ),
        "Bank": _object(
            {"code": {"type": "string", "description": "Send it in payment.bank of a payout."},
             "name": {"type": "string"}},
            ["code", "name"],
        ),
        "PaymentMethod": _object(
            {
                "id": {"type": "string"},
                "name": {"type": "string"},
                "kind": {"type": "string", "enum": ["card", "payout"]},
                "currencies": {"type": "array", "items": _ref("Currency")},
                "countries": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{2}$"},
                              "description": "Alpha-2 codes; empty means any country."},
                "bankList": {"type": "boolean"},
                "partialRefunds": {"type": "boolean"},
            },
            ["id", "name", "kind", "currencies", "countries", "bankList", "partialRefunds"],
        ),
        "SandboxOutcomeRequest": _object(
            {
                "status": {"type": "string", "enum": _sandbox_outcomes()},
                "declineReason": _text(100, required=False, description=(
                    "For Declined and Failed; defaults to Declined By Bank and Provider Error.")),
            },
            ["status"],
        ),
        "SandboxReset": _object(
            {"status": {"const": "ok"}, "message": {"type": "string"}}, ["status", "message"]),
        "FieldErrors": _object(
            {"errors": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "description": "Messages per field; names PascalCase, dotted for nesting (Billing.Email).",
            }},
            ["errors"],
        ),
        "Error": _message(),
        "DuplicateReference": _object(
            {"error": {"type": "string"}, "transactionId": tx_no}, ["error", "transactionId"],
            description="The reference is already used; transactionId names the existing transaction."),
        "BankListError": _object({"error": {"type": "string"}, "message": {"type": "string"}},
                                 ["error", "message"]),
    }


def _sandbox_outcomes() -> list[str]:
    # Imported here: routes imports this module at load time.
    from .routes import SANDBOX_OUTCOMES

    return [s.value for s in sorted(SANDBOX_OUTCOMES)]


def _shared_responses() -> dict:
    auth_error = _object(
        {"error": {"const": "Authentication Error"}, "message": {"const": "Invalid client credentials"}},
        ["error", "message"])
    return {
        "Unauthorized": _response("Missing, unknown or revoked bearer token.", auth_error),
        "FieldErrors": _response("Field validation failed (also a body that is not a JSON object).",
                                 _ref("FieldErrors")),
        "TooLarge": _response("The body is larger than 1 MiB.", _ref("FieldErrors")),
        "SandboxOnly": _response("The token is a live token.", _message("Sandbox only")),
        "NotFound": _response("No such transaction for this merchant and mode.", _ref("Error")),
        "KeyReused": _response("The Idempotency-Key was used with a different request.",
                               _message("Idempotency-Key reused with a different request")),
    }


def _replayed_header() -> dict:
    return {"Idempotent-Replayed": {
        "description": "Present (true) when this is the stored answer to an earlier request with the same key.",
        "schema": {"type": "string", "enum": ["true"]},
    }}


def _idempotency_key() -> dict:
    return {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": ("Same key and same body within 24 hours: the first answer is replayed byte for byte. "
                        "Keys are scoped per merchant and mode."),
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    }


def _tx_no_parameter(example: str) -> dict:
    return {"name": "txNo", "in": "path", "required": True, "example": example,
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_TX_NO_LENGTH}}


def _idempotent_post(operation: dict) -> dict:
    """Responses every Idempotency-Key request may get, added to the operation's own."""
    operation["parameters"] = [_idempotency_key()]
    operation["responses"].update({
        "413": _shared("TooLarge"),
        "422": _shared("KeyReused"),
    })
    return operation


def _paths() -> dict:
    unauthorized = {"401": _shared("Unauthorized")}
    in_progress = _message(description="A request with this Idempotency-Key is still being processed.")
    cache_headers = {
        "Cache-Control": {"schema": {"type": "string", "const": "private, max-age=3600"}},
        "ETag": {"schema": {"type": "string"}, "description": "Send it back in If-None-Match."},
    }
    create_example = {
        "amount": 100.00, "currency": "EUR", "reference": "order-1001",
        "statementDescriptor": "ACME SHOP", "callbackUrl": "https://merchant.example/webhooks",
        "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                    "customerReference": "cust-42"},
        "payment": {"paymentMethod": "card"},
    }
    return {
        "/api/v1/transactions": {"post": _idempotent_post({
            "operationId": "createTransaction",
            "summary": "Create a payment or payout (Pending) and get its checkout URL.",
            "requestBody": {"required": True, **_json(_ref("CreateTransactionRequest"),
                                                      example=create_example)},
            "responses": {
                "200": _response("Created.", _ref("CreateTransactionResponse"), _replayed_header()),
                "400": _response("Field validation failed (also a body that is not a JSON object).",
                                 _ref("FieldErrors"), _replayed_header()),
                **unauthorized,
                "409": _response(
                    "The reference is already used, or a request with this Idempotency-Key is still running.",
                    {"anyOf": [_ref("DuplicateReference"), in_progress]}, _replayed_header()),
            },
        })},
        "/api/v1/transactions/{txNo}/status": {"get": {
            "operationId": "getTransactionStatus",
            "summary": "The stored status of a transaction or refund (no provider call).",
            "parameters": [_tx_no_parameter("SBX-CAPTURED")],
            "responses": {
                "200": _response("The transaction.", _ref("TransactionStatus")),
                **unauthorized,
                "404": _shared("NotFound"),
            },
        }},
        "/api/v1/transactions/refund": {"post": _idempotent_post({
            "operationId": "refundTransaction",
            "summary": "Refund a Captured payment in full or in part.",
            "requestBody": {"required": True, **_json(_ref("RefundRequest"),
                                                      example={"txNo": "SBX-CAPTURED", "amount": 10.00})},
            "responses": {
                "200": _response("The refund, with its status after the provider's immediate answer.",
                                 _ref("RefundResponse"), _replayed_header()),
                "400": _response(
                    "Field validation failed ({errors}), or a refund rule refused it ({error}).",
                    {"anyOf": [_ref("FieldErrors"), _ref("Error")]}, _replayed_header()),
                **unauthorized,
                "409": _response("A request with this Idempotency-Key is still being processed.", in_progress),
            },
        })},
        "/api/v1/transactions/banks": {"post": {
            "operationId": "listBanks",
            "summary": "The banks of a payout method for a currency (and country). Cache for an hour.",
            "parameters": [{"name": "If-None-Match", "in": "header", "required": False,
                            "schema": {"type": "string"}, "description": "An ETag of an earlier answer."}],
            "requestBody": {"required": True, **_json(
                _ref("BankListRequest"), example={"paymentMethod": "ng-bank-payout", "currency": "NGN"})},
            "responses": {
                "200": _response("The banks.", {"type": "array", "items": _ref("Bank")}, cache_headers),
                "304": {"description": "The list is unchanged since the ETag in If-None-Match.",
                        "headers": cache_headers},
                "400": _response("Validation Error.", _object(
                    {"error": {"const": "Validation Error"}, "message": {"type": "string"}},
                    ["error", "message"])),
                "401": _shared("Unauthorized"),
                "413": _shared("TooLarge"),
                "500": _response("The provider failed to give the list.", _object(
                    {"error": {"const": "Internal Server Error"},
                     "message": {"const": "An error occurred while fetching the bank list. "
                                          "Please contact support."}},
                    ["error", "message"])),
            },
        }},
        "/api/v1/payment-methods": {"get": {
            "operationId": "listPaymentMethods",
            "summary": "The token's merchant's payment methods.",
            "responses": {
                "200": _response("The methods.", {"type": "array", "items": _ref("PaymentMethod")}),
                **unauthorized,
            },
        }},
        "/api/v1/sandbox/transactions/{txNo}/outcome": {"post": {
            "operationId": "setSandboxOutcome",
            "summary": "Sandbox only: move a payment or payout as its provider would, with its webhook.",
            "parameters": [_tx_no_parameter("SBX-PENDING")],
            "requestBody": {"required": True, **_json(_ref("SandboxOutcomeRequest"),
                                                      example={"status": "Captured"})},
            "responses": {
                "200": _response("The transaction after the move.", _ref("TransactionStatus")),
                "400": _shared("FieldErrors"),
                **unauthorized,
                "403": _shared("SandboxOnly"),
                "404": _shared("NotFound"),
                "409": _response("The transaction's status does not allow this move (or it is a refund).",
                                 _ref("Error")),
                "413": _shared("TooLarge"),
            },
        }},
        "/api/v1/sandbox/reset": {"post": {
            "operationId": "resetSandbox",
            "summary": "Sandbox only: restore the test transactions (SBX-...) to their starting states.",
            "responses": {
                "200": _response("Restored.", _ref("SandboxReset")),
                **unauthorized,
                "403": _shared("SandboxOnly"),
            },
        }},
        "/api/v1/openapi.json": {"get": {
            "operationId": "getOpenApiDocument",
            "summary": "This document.",
            "responses": {
                "200": _response("The OpenAPI 3.1 document.", {"type": "object"}),
                **unauthorized,
            },
        }},
    }


def openapi_document(base_url: str) -> dict:
    """The document served at /api/v1/openapi.json."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Paydesk API",
            "version": "1",
            "description": ("Payments, payouts and refunds in front of external payment providers. "
                            "Amounts are JSON numbers, read exactly; timestamps are ISO 8601 UTC."),
        },
        "servers": [{"url": base_url}],
        "security": [{"bearerAuth": []}],
        "paths": _paths(),
        "components": {
            "securitySchemes": {"bearerAuth": {
                "type": "http", "scheme": "bearer",
                "description": "A live or sandbox API token; it fixes the merchant and mode of every call.",
            }},
            "schemas": _schemas(),
            "responses": _shared_responses(),
        },
    }
