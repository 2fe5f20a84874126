"""The /api/v1 endpoints: authenticate, parse, call the services, translate errors."""
from __future__ import annotations

import json
from dataclasses import replace
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation
from itertools import islice

from flask import current_app, g, request
from werkzeug.exceptions import MethodNotAllowed, NotFound

from app.auth.api_tokens import MEMORY_KEY, TokenMemory
from app.payments import bank_lists, cancel, create, dispute_service, lookup, refunds, sandbox, settlement
from app.payments.model import (
    MAX_TX_NO_LENGTH,
    BankListNotReady,
    BankListRefused,
    CancelRejected,
    DuplicateReference,
    FieldErrors,
    InvalidMove,
    Mode,
    RefundRejected,
    SimulatedLiveMoney,
    Status,
    TransactionNotFound,
    cancel_outstanding,
)
from app.payments.provider import ProviderUnavailable
from app.payments.tokens import NetworkRefused, ScopeMissing, TokenLimitExceeded
from app.auth.scopes import needed_scopes
from app.payments.schemas import NOT_AN_OBJECT, parse_create, parse_refund, require_object, shown_field_name
from app.util import MAX_JSON_DEPTH, could_be_key, json_too_deep, utcnow

from app.payments.bodies import create_body, method_body, refund_body, status_body
from app.web import deps, is_api_path, json_response

from . import api, request_log
from .idempotency import MAX_KEY_LENGTH, answer_once
from .openapi import openapi_document
from .schemas import Bank, SandboxReset, read_bank_list, read_sandbox_outcome

AUTH_ERROR = {"error": "Authentication Error", "message": "Invalid client credentials"}
TOO_DEEP = f"Request body must not nest arrays and objects more than {MAX_JSON_DEPTH} deep"
# At most this many fields' errors in one answer; the rest are counted under MORE_FIELD_ERRORS.
MAX_SHOWN_FIELD_ERRORS = 50
MORE_FIELD_ERRORS = "More"
BANKS_FAILURE = {
    "error": "Internal Server Error",
    "message": "An error occurred while fetching the bank list. Please contact support.",
}
# Seconds after which a bank list with no stored copy is likely there: a worker fetches a list
# asked for within its next round (half a second) and the provider answers in about a second.
BANK_LIST_RETRY_AFTER = 5


class BadJson(Exception):
    """The body is not JSON (or not parseable exactly)."""


def _reject_constant(name: str):
    raise BadJson(f"{name} is not a valid JSON number")


# Reading decimal text into a Decimal never rounds; with InvalidOperation trapped, text it
# cannot hold raises instead of becoming NaN (whatever the thread's context says).
_EXACT_TEXT = Context(traps=[InvalidOperation])


def _json_number(text: str) -> Decimal:
    """A JSON number (the parser has checked its grammar) as the exact Decimal it writes.

    Decimal's exponents stop near ±10**18. A number past them is read as a stand-in that keeps
    all that validation asks of it: its sign, zero or not, and either above every bound
    (exponent +) or finer than every minor unit (exponent -). It is refused, never stored.
    """
    try:
        return Decimal(text, _EXACT_TEXT)
    except InvalidOperation:
        mantissa, _e, exponent = text.lower().partition("e")
        sign = "-" if mantissa.startswith("-") else ""
        if not mantissa.strip("-0."):
            return Decimal(f"{sign}0")
        return Decimal(f"{sign}1e{MIN_EMIN if exponent.startswith('-') else MAX_EMAX}")


def _json_integer(text: str) -> int | Decimal:
    """A JSON integer as int; as Decimal when it is too long for int() (4300 digits by default)."""
    try:
        return int(text)
    except ValueError:
        return _json_number(text)


def read_json():
    """The request body parsed exactly: numbers as int or Decimal, NaN and Infinity refused, and
    nothing nested deeper than MAX_JSON_DEPTH read at all."""
    raw = request.get_data(cache=True)
    if json_too_deep(raw):
        raise FieldErrors.one("Body", TOO_DEEP)
    try:
        return json.loads(raw, parse_float=_json_number, parse_int=_json_integer,
                          parse_constant=_reject_constant)
    except (ValueError, BadJson, RecursionError):
        raise FieldErrors.one("Body", "Request body must be valid JSON") from None


@api.before_request
def authenticate():
    """Every endpoint needs a bearer token; it fixes the merchant and mode of everything after."""
    request_log.started()
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    caller = None
    if scheme.lower() == "bearer" and token.strip():
        memory = current_app.extensions.setdefault(MEMORY_KEY, TokenMemory())
        caller = memory.caller(deps().uow, token.strip(), current_app.config["TOKEN_CACHE_SECONDS"])
    grant = caller.grant if caller is not None else None
    if caller is None or (grant is not None and grant.expired(utcnow())):
        return json_response(AUTH_ERROR, 401)
    address = request.remote_addr  # the client's, through PROXY_FIX_HOPS trusted proxies
    g.caller = replace(caller, ip=address)
    if grant is not None:
        if not grant.allows_address(address):
            return json_response({"error": str(NetworkRefused(address))}, 403)
        needed = needed_scopes(request.endpoint)
        if needed is None:  # an endpoint missing from app.auth.scopes: refused until it is added
            return json_response({"error": "This endpoint is not open to API tokens"}, 403)
        if needed and grant.scopes.isdisjoint(needed):
            return json_response({"error": str(ScopeMissing(needed))}, 403)
    return None


api.after_request(request_log.note)


@api.errorhandler(ScopeMissing)
@api.errorhandler(TokenLimitExceeded)
def token_refused(error):
    """Beyond the token's scopes or its daily limit: 403 naming what it lacks or what is left."""
    return json_response({"error": str(error)}, 403)


@api.errorhandler(FieldErrors)
def field_errors(error: FieldErrors):
    return json_response({"errors": shown_field_errors(error.errors)}, 400)


def shown_field_errors(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """The first MAX_SHOWN_FIELD_ERRORS fields' errors, and under "More" how many fields were
    left out: a body of 100,000 unknown keys is answered in a few hundred bytes, not megabytes."""
    if len(errors) <= MAX_SHOWN_FIELD_ERRORS:
        return errors
    shown = dict(islice(errors.items(), MAX_SHOWN_FIELD_ERRORS))
    left_out = len(errors) - MAX_SHOWN_FIELD_ERRORS
    fields = "1 more field with errors is" if left_out == 1 else f"{left_out} more fields with errors are"
    shown.setdefault(MORE_FIELD_ERRORS, []).append(f"{fields} not shown")
    return shown


@api.errorhandler(RefundRejected)
def refund_rejected(error: RefundRejected):
    return json_response({"error": str(error)}, 400)


@api.errorhandler(BankListNotReady)
def bank_list_not_ready(error: BankListNotReady):
    """A payout's bank list has no stored copy yet: nothing was written; the list is now due."""
    return _not_ready({"error": str(error)})


def _not_ready(body: dict):
    """503 with Retry-After: Paydesk is fetching what the request needs beside it (not kept with
    an Idempotency-Key: the retry runs anew)."""
    return json_response(body, 503, {"Retry-After": str(BANK_LIST_RETRY_AFTER)})


@api.errorhandler(SimulatedLiveMoney)
def simulated_live_money(error: SimulatedLiveMoney):
    return json_response({"error": str(error)}, 400)


@api.errorhandler(CancelRejected)
def cancel_rejected(error: CancelRejected):
    return json_response({"error": str(error)}, 400)


@api.errorhandler(TransactionNotFound)
def not_found(error: TransactionNotFound):
    return json_response({"error": str(error)}, 404)


@api.errorhandler(DuplicateReference)
def duplicate_reference(error: DuplicateReference):
    return json_response({"error": str(error), "transactionId": error.existing_tx_no}, 409)


@api.errorhandler(InvalidMove)
def invalid_move(error: InvalidMove):
    return json_response({"error": str(error)}, 409)


@api.errorhandler(404)
def unknown_path(_error):
    return json_response({"error": "Not found"}, 404)


@api.errorhandler(405)
def wrong_method(_error):
    return json_response({"error": "Method not allowed"}, 405)


@api.before_app_request
def api_routing_error():
    """An /api/v1 URL no route matches: JSON too (blueprint handlers never see routing errors)."""
    error = request.routing_exception
    if is_api_path(request.path):
        if isinstance(error, MethodNotAllowed):
            return wrong_method(error)
        if isinstance(error, NotFound):
            return unknown_path(error)
    return None


@api.errorhandler(413)
def too_large(_error):
    return json_response({"errors": {"Body": ["Request body is too large"]}}, 413)


def idempotency_key() -> str | None:
    """The Idempotency-Key header, checked; None when absent."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not could_be_key(key, MAX_KEY_LENGTH):
        raise FieldErrors.one("Idempotency-Key",
                              f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters")
    return key


def create_once(parse, operate, shape, refusals):
    """Parse the body, run the creating service once per Idempotency-Key, shape its answer.

    Refusals (4xx) are kept with the key like a success, so a retry replays them too.
    """
    body = read_json()

    def answer(tx):
        return json_response(shape(tx))

    def attempt(on_created):
        return operate(deps(), g.caller, parse(body), on_created)

    key = idempotency_key()
    if key is None:
        return answer(attempt(None))  # a refusal goes to the blueprint's handler
    return answer_once(key, body, attempt, answer, refusals)


@api.post("/transactions")
def create_transaction():
    """Create a payment or payout; 200 with the create response."""
    checkout_url = current_app.config["CHECKOUT_URL"]
    return create_once(parse_create, create.create_transaction,
                       lambda tx: create_body(tx, checkout_url),
                       (FieldErrors, DuplicateReference, SimulatedLiveMoney))


@api.get("/transactions/<path:tx_no>/status")
def transaction_status(tx_no: str):
    """The stored status of a transaction (a refund's too), read without calling the provider."""
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        raise TransactionNotFound(tx_no[:MAX_TX_NO_LENGTH])
    return json_response(status_body(lookup.stored_status(deps(), g.caller, tx_no)))


@api.post("/transactions/refund")
def refund_transaction():
    """Refund a Captured payment in full or in part; 200 with the refund response."""
    return create_once(parse_refund, refunds.refund, refund_body, (FieldErrors, RefundRejected))


@api.post("/transactions/<path:tx_no>/cancel")
def cancel_transaction(tx_no: str):
    """Cancel a Pending or Authorized payment: 200 with its status body, now Declined; 202 with it
    still Pending or Authorized when a worker is to ask the provider to void it."""
    _no_fields(read_json() if request.get_data(cache=True) else {})
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        raise TransactionNotFound(tx_no[:MAX_TX_NO_LENGTH])

    def attempt(on_moved):
        # The key is linked to the payment in the unit that declines it (or requests its
        # cancel): a key whose first run died after that commit is answered from the payment,
        # as for create and refund.
        return cancel.cancel_transaction(deps(), g.caller, tx_no, on_moved=on_moved)

    def answer(tx):
        return json_response(status_body(tx), 202 if cancel_outstanding(tx) else 200)

    # A refusal goes to the blueprint's handler; ProviderUnavailable to the app's (502, and not
    # kept with the key: a retry asks the provider again).
    key = idempotency_key()
    if key is None:
        return answer(attempt(None))
    return answer_once(key, None, attempt, answer, (CancelRejected, TransactionNotFound))


def _no_fields(body) -> None:
    """A cancel takes no fields: no body, or an empty JSON object."""
    if require_object(body):
        raise FieldErrors({shown_field_name(k): ["Unknown field"] for k in sorted(body)})


@api.post("/transactions/banks")
def banks():
    """The banks of a payout method for a currency (and country), cacheable for an hour."""
    try:
        asked = read_bank_list(read_json())
    except FieldErrors:  # not JSON: the bank list answers as for any body that is not an object
        asked = NOT_AN_OBJECT
    if isinstance(asked, str):
        return _bank_validation(asked)
    method, currency, country = asked.payment_method, asked.currency, asked.country
    try:
        found = bank_lists.list_banks(deps(), g.caller, method, currency, country or None)
    except BankListRefused as error:
        return _bank_validation(str(error))
    except BankListNotReady as error:  # the interface's {error, message} shape, as every answer here
        return _not_ready({"error": "Service Unavailable", "message": str(error)})
    except ProviderUnavailable:  # the provider's failure, answered as the interface shows
        current_app.logger.exception("bank list failed for %s", method)
        return json_response(BANKS_FAILURE, 500)
    response = json_response([Bank(code=b.code, name=b.name) for b in found])
    response.headers["Cache-Control"] = "private, max-age=3600"
    response.add_etag()
    # Werkzeug's make_conditional only serves GET/HEAD; this list is read by POST.
    etag, _weak = response.get_etag()
    if request.if_none_match.contains(etag):
        response.status_code = 304
        response.set_data(b"")
    return response


def _bank_validation(message: str):
    return json_response({"error": "Validation Error", "message": message}, 400)


@api.get("/payment-methods")
def payment_methods():
    """The token's merchant's payment methods."""
    with deps().uow(write=False) as uow:
        methods = uow.methods.list(g.caller)
    return json_response([method_body(m) for m in methods])


def _sandbox_only():
    if g.caller.mode is not Mode.SANDBOX:
        return json_response({"error": "Sandbox only"}, 403)
    return None




@api.post("/sandbox/transactions/<path:tx_no>/outcome")
def sandbox_outcome(tx_no: str):
    """Move a sandbox payment or payout as its provider would, with its webhook; a Chargeback
    also opens a dispute of the whole payment (answer it, or close it with
    /sandbox/disputes/{id}/outcome)."""
    refused = _sandbox_only()
    if refused:
        return refused
    asked = read_sandbox_outcome(read_json())
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        raise TransactionNotFound(tx_no[:MAX_TX_NO_LENGTH])
    tx = settlement.move_by_provider(deps(), g.caller, tx_no, Status(asked.status), asked.decline_reason,
                                  source="sandbox")
    if tx.status is Status.CHARGEBACK:
        dispute_service.open_in_sandbox(deps(), tx)
    return json_response(status_body(tx))


@api.post("/sandbox/reset")
def sandbox_reset():
    """Restore the sandbox test transactions to their starting states."""
    refused = _sandbox_only()
    if refused:
        return refused
    sandbox.reset_sandbox(deps(), g.caller)
    return json_response(SandboxReset(status="ok", message="Sandbox test transactions restored"))


@api.get("/openapi.json")
def openapi():
    """The OpenAPI 3.1 description of this API."""
    return json_response(openapi_document(current_app.config["BASE_URL"]))
