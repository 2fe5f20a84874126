"""GET /api/v1/transactions: the token's transactions, filtered, newest first, a page at a time.

Paging is by keyset on (created, id), the order of the listing's indexes: `cursor` (a page's
nextCursor, which keeps the direction it was walking), or `startingAfter` / `endingBefore` naming
a transaction by its TransactionId, as Stripe's lists do.
"""
from __future__ import annotations

import base64
import binascii

from flask import g, request

from app.payments.bodies import status_body
from app.payments.model import MAX_TX_NO_LENGTH, FieldErrors, Kind, Status
from app.payments.money import is_currency
from app.store import listing
from app.util import could_be_key
from app.web import deps, json_response

from . import api, query
from .limits import DEFAULT_TRANSACTION_LIMIT, MAX_TRANSACTION_LIMIT
from .paging import page_limit

# The kinds as the API writes them (the webhook's transactionType).
KIND_WORDS = {kind.value.title(): kind for kind in Kind}
STATUS_WORDS = {status.value: status for status in Status}
# The filters' longest sensible values: longer text matches nothing and is refused.
MAX_FILTER_TEXT = 254
# A cursor: the direction (o: older, n: newer) and the listing position, base64url.
OLDER, NEWER = "o", "n"
CURSOR_REFUSAL = "Cursor is not one this API gave; start again without it"
MAX_CURSOR_LENGTH = 64
POSITIONS = ("cursor", "startingAfter", "endingBefore")


@api.get("/transactions")
def list_transactions():
    """The token's transactions, newest first, with the status response's fields; filters and
    paging in the query string (see the OpenAPI document)."""
    flt = _filter()
    limit = page_limit(DEFAULT_TRANSACTION_LIMIT, MAX_TRANSACTION_LIMIT)
    with deps().uow(write=False) as uow:
        direction, position = _position(uow.conn)
        if direction == NEWER:
            page = listing.list_statuses(uow.conn, g.caller, flt, newer_than=position, limit=limit)
            following = page.newer
        else:
            page = listing.list_statuses(uow.conn, g.caller, flt, older_than=position, limit=limit)
            following = page.older
    return json_response({
        "transactions": [status_body(row.status) for row in page.rows],
        "hasMore": following is not None,
        "nextCursor": _encode(direction, following) if following is not None else None,
    })


def _filter() -> listing.TransactionFilter:
    """The filters of the query string; FieldErrors names every one that cannot be read."""
    gathered = query.Gathered()
    read, errors = gathered.read, gathered.errors
    # Read in the documented order, so the errors come in it too.
    statuses = tuple(read(query.words, "status", STATUS_WORDS) or ())
    kinds = read(query.words, "kind", KIND_WORDS) or []
    if len(kinds) > 1:
        errors["Kind"] = [f"Kind must be one of {', '.join(KIND_WORDS)}"]
    currency = read(_currency)
    payment_method = read(_text, "paymentMethod")
    amounts = {}
    if "Currency" not in errors:  # an amount is read in the currency, once it is known
        amounts = {name: read(query.minor_amount, name, currency) for name in ("amountMin", "amountMax")}
    found = listing.TransactionFilter(
        statuses=statuses,
        kind=kinds[0] if len(kinds) == 1 else None,
        currency=currency,
        payment_method=payment_method,
        amount_min_minor=amounts.get("amountMin"),
        amount_max_minor=amounts.get("amountMax"),
        created_from=read(query.moment, "createdFrom"),
        created_to=read(query.moment, "createdTo"),
        reference=read(_text, "reference"),
        customer_email=read(_text, "customerEmail"),
    )
    gathered.raise_any()
    return found


def _currency() -> str | None:
    currency = _text("currency")
    if currency is not None and not is_currency(currency):
        raise FieldErrors.one("Currency", f"Currency {currency} is not an ISO 4217 currency code")
    return currency


def _text(name: str) -> str | None:
    given = request.args.get(name)
    if given is None:
        return None
    field = name[:1].upper() + name[1:]
    if not given.strip() or len(given) > MAX_FILTER_TEXT or not given.isprintable():
        raise FieldErrors.one(field, f"{field} must be 1 to {MAX_FILTER_TEXT} printable characters")
    return given


def _position(conn) -> tuple[str, listing.Cursor | None]:
    """Where the page starts: the direction and the position to start after."""
    given = [name for name in POSITIONS if name in request.args]
    if len(given) > 1:
        raise FieldErrors.one("Cursor", "Give one of cursor, startingAfter and endingBefore, not several")
    if not given:
        return OLDER, None
    name = given[0]
    text = request.args[name]
    if name == "cursor":
        return _decode(text)
    field = name[:1].upper() + name[1:]
    found = listing.position_of(conn, g.caller, text) if could_be_key(text, MAX_TX_NO_LENGTH) else None
    if found is None:
        raise FieldErrors.one(field, f"{field} names no transaction of this token: {text[:MAX_TX_NO_LENGTH]}")
    return (OLDER if name == "startingAfter" else NEWER), found


def _encode(direction: str, position: listing.Cursor) -> str:
    return base64.urlsafe_b64encode(f"{direction}{position.encode()}".encode()).decode().rstrip("=")


def _decode(text: str) -> tuple[str, listing.Cursor]:
    try:
        decoded = base64.urlsafe_b64decode(text.encode("ascii") + b"=" * (-len(text) % 4)).decode("ascii")
    except (UnicodeError, ValueError, binascii.Error):
        decoded = ""
    position = listing.Cursor.decode(decoded[1:]) if len(text) <= MAX_CURSOR_LENGTH else None
    if decoded[:1] not in (OLDER, NEWER) or position is None:
        raise FieldErrors.one("Cursor", CURSOR_REFUSAL)
    return decoded[:1], position
