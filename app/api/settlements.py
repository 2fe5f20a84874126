"""The /api/v1/settlements endpoints: the token's stored settlements, and one with its matched lines."""
from __future__ import annotations


from flask import g, request

from app.payments.formats import iso_utc
from app.payments.model import FieldErrors, Mode
from app.payments.money import from_minor
from app.payments.reconcile import SANDBOX_FEE
from app.providers.sandbox_settlements import settle_sandbox
from app.store import settlements as store
from app.web import deps, json_response

from . import api
from .limits import DEFAULT_SETTLEMENT_LIMIT, MAX_SETTLEMENT_LIMIT
from .paging import Cursor, page_limit
from .routes import read_json

# The listing's cursors (app.api.paging).
CURSOR = Cursor("stl:", "Cursor is not one this API gave; start again without it")


def settlement_body(summary: store.SettlementSummary) -> dict:
    """A settlement as the API shows it: amounts in its currency, as the provider reported them."""
    def amount(minor: int):
        return from_minor(minor, summary.currency)

    return {
        "id": summary.public_id,
        "provider": summary.provider,
        "providerSettlementId": summary.provider_settlement_id,
        "settledOn": summary.settled_on.isoformat(),
        "currency": summary.currency,
        "gross": amount(summary.gross_minor),
        "fees": amount(summary.fees_minor),
        "net": amount(summary.net_minor),
        "status": summary.status,
        "lineCount": summary.line_count,
        "exceptionCount": summary.exception_count,
        "fetchedAt": iso_utc(summary.fetched_at),
    }


def line_body(line: store.StoredLine) -> dict:
    """A settlement line and what reconciliation found for it."""
    return {
        "providerTransactionId": line.provider_transaction_id,
        "reference": line.reference,
        "type": line.type.value,
        "gross": from_minor(line.gross_minor, line.currency),
        "fee": from_minor(line.fee_minor, line.currency),
        "net": from_minor(line.net_minor, line.currency),
        "currency": line.currency,
        "txNo": line.tx_no,
        "result": line.outcome.value,
    }


@api.get("/settlements")
def list_settlements():
    """The token's settlements, newest stored first; `cursor` continues where nextCursor left off."""
    limit, before_id = page_limit(DEFAULT_SETTLEMENT_LIMIT, MAX_SETTLEMENT_LIMIT), CURSOR.position()
    with deps().uow(write=False) as uow:
        found = store.list_settlements(uow.conn, g.caller, before_id=before_id, limit=limit + 1)
    shown = found[:limit]
    next_cursor = CURSOR.encode(shown[-1].id) if len(found) > limit else None
    return json_response({"settlements": [settlement_body(s) for s in shown], "nextCursor": next_cursor})


@api.get("/settlements/<settlement_id>")
def get_settlement(settlement_id: str):
    """One of the token's settlements with its lines; 404 for another merchant's or mode's."""
    row_id = store.parse_public_id(settlement_id)
    with deps().uow(write=False) as uow:
        summary = store.get_settlement(uow.conn, g.caller, row_id) if row_id is not None else None
        lines = store.lines_of(uow.conn, summary.id) if summary else []
    if summary is None:
        return json_response({"error": f"Settlement {settlement_id[:40]} not found"}, 404)
    return json_response({**settlement_body(summary), "lines": [line_body(line) for line in lines]})


@api.post("/sandbox/settlements/run")
def run_sandbox_settlements():
    """Settle the sandbox's Captured payments as the simulator's daily settlements would (sandbox only).

    Body (optional): {"amountDiffersFor": "<txNo>"} settles that payment 1.00 short, to show an
    amount_differs exception.
    """
    if g.caller.mode is not Mode.SANDBOX:
        return json_response({"error": "Sandbox only"}, 403)
    differ = _read_run_body()
    stored = settle_sandbox(deps(), g.caller, amount_differs_for=differ)
    with deps().uow(write=False) as uow:
        found = [store.get_settlement(uow.conn, g.caller, settlement_id) for settlement_id in stored]
    return json_response({"settlements": [settlement_body(s) for s in found if s is not None],
                          "fee": SANDBOX_FEE.words})


def _read_run_body() -> str | None:
    """The run request's amountDiffersFor, when given; FieldErrors for anything else in the body."""
    if not request.get_data(cache=True).strip():
        return None
    body = read_json()
    if not isinstance(body, dict):
        raise FieldErrors.one("Body", "Request body must be a JSON object")
    unknown = sorted(set(body) - {"amountDiffersFor"})
    if unknown:
        raise FieldErrors({key[:1].upper() + key[1:60]: ["Unknown field"] for key in unknown})
    differ = body.get("amountDiffersFor")
    if differ is not None and (not isinstance(differ, str) or not 0 < len(differ) <= 40):
        raise FieldErrors.one("AmountDiffersFor", "AmountDiffersFor must be a txNo")
    return differ
