"""The /api/v1/payouts/batches and /api/v1/refunds/batches endpoints: a batch of rows checked at
once, run (or kept in review when a row is refused), and read with its rows' results."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from flask import Response, current_app, g, request

from app.payments import batches
from app.payments import idempotency as once
from app.payments.batches import (
    Batch,
    BatchFileError,
    BatchKind,
    BatchNotFound,
    BatchRefused,
    BatchRow,
    BatchState,
    RowState,
)
from app.payments.formats import iso_utc
from app.payments.idempotency import WAIT_FOR_FIRST, request_hash
from app.payments.model import FieldErrors
from app.payments.money import format_amount
from app.store import idempotency as key_records
from app.store.merchants import merchant_by_id
from app.web import deps, json_response

from . import api
from .routes import idempotency_key, read_json

# A JSON batch of MAX_ROWS rows is larger than the 1 MiB other bodies may be.
BATCH_BODY_LIMIT = 8 * 1024 * 1024
MAX_BATCH_ID_LENGTH = 40
KINDS = {"payouts": BatchKind.PAYOUT, "refunds": BatchKind.REFUND}


@api.url_value_preprocessor
def _batch_body_limit(endpoint: str | None, _values: dict | None) -> None:
    """The batch create takes bodies up to BATCH_BODY_LIMIT; set before the body is read."""
    if endpoint == "api.create_batch":
        request.max_content_length = BATCH_BODY_LIMIT


@api.errorhandler(BatchNotFound)
def batch_not_found(error: BatchNotFound):
    return json_response({"error": str(error)}, 404)


@api.errorhandler(BatchRefused)
def batch_refused(error: BatchRefused):
    return json_response({"error": str(error)}, 409)


@api.errorhandler(BatchFileError)
def batch_file_error(error: BatchFileError):
    return json_response({"errors": {"Rows": [str(error)]}}, 400)


def _row_body(row: BatchRow) -> dict:
    return {"row": row.number, "state": row.state.value, "errors": row.errors, "txNo": row.tx_no,
            "status": batches.row_status(row), "declineReason": batches.row_reason(row)}


def batch_body(batch: Batch, rows: list[BatchRow] | None) -> dict:
    """A batch as the API shows it: counts, totals per currency and (on reads) its rows."""
    body = {
        "id": batch.public_id,
        "kind": batch.kind.value,
        "state": batch.state.value,
        "source": batch.source,
        "rowCount": batch.row_count,
        "validRows": batch.valid_rows,
        "invalidRows": batch.invalid_rows,
        "waitingRows": batch.count(RowState.VALID) if batch.state is not BatchState.CANCELLED else 0,
        "createdRows": batch.count(RowState.CREATED),
        "failedRows": batch.count(RowState.FAILED),
        "totals": {currency: Decimal(format_amount(amount, currency))
                   for currency, amount in batch.totals.items()},
        "createdAt": iso_utc(batch.created_at),
        "approvedAt": iso_utc(batch.approved_at) if batch.approved_at else None,
        "finishedAt": iso_utc(batch.finished_at) if batch.finished_at else None,
    }
    if rows is not None:
        body["rows"] = [_row_body(row) for row in rows]
    return body


def _kind(kind: str) -> BatchKind:
    return KINDS[kind]


def _batch_id(text: str) -> str:
    if not (0 < len(text) <= MAX_BATCH_ID_LENGTH and text.isascii() and text.isprintable()):
        raise BatchNotFound(text[:MAX_BATCH_ID_LENGTH])
    return text


def _of_kind(batch: Batch, kind: BatchKind) -> Batch:
    """A batch read under the other kind's path answers as an unknown one."""
    if batch.kind is not kind:
        raise BatchNotFound(batch.public_id)
    return batch


def _create(kind: BatchKind, body: object, key: str | None) -> Batch:
    if not isinstance(body, dict):
        raise FieldErrors.one("Body", "Request body must be a JSON object")
    unknown = [name for name in body if name not in ("rows", "runValidRows")]
    if unknown:
        raise FieldErrors({name[:64]: ["Unknown field"] for name in unknown})
    run_valid = body.get("runValidRows", False)
    if not isinstance(run_valid, bool):
        raise FieldErrors.one("RunValidRows", "RunValidRows must be true or false")
    rows = batches.read_json_rows(body.get("rows"), kind)
    defaults = None
    if kind is BatchKind.PAYOUT:
        with deps().uow(write=False) as uow:
            merchant = merchant_by_id(uow.conn, g.caller.merchant_id)
        defaults = batches.PayoutDefaults(merchant.name[:22], merchant.default_callback_url)
    batch = batches.create_batch(deps(), g.caller, kind, rows, source="api", request_key=key,
                                 defaults=defaults)
    if batch.state is BatchState.REVIEW and batch.count(RowState.VALID) and \
            (run_valid or batch.invalid_rows == 0):
        batch = batches.run(deps(), g.caller, batch.public_id)
    return batch


@api.post("/payouts/batches", defaults={"kind": "payouts"})
@api.post("/refunds/batches", defaults={"kind": "refunds"})
def create_batch(kind: str):
    """Check every row and store the batch; with no refused row (or runValidRows) it runs at once
    (awaiting approval above the threshold). 201 with the batch and its rows."""
    batch_kind = _kind(kind)
    body = read_json()
    key = idempotency_key()

    def answer(batch: Batch):
        return json_response(batch_body(batch, batches.rows_of(deps(), batch)), 201)

    if key is None:
        return answer(_create(batch_kind, body, None))
    first = None

    def keep(outcome):
        nonlocal first
        if isinstance(outcome, Batch):
            first = answer(outcome)
        elif isinstance(outcome, (FieldErrors, BatchFileError)):
            first = current_app.handle_user_exception(outcome)
        else:
            return None
        return once.Answer(first.status_code, first.get_data(as_text=True))

    try:
        outcome = once.run_once(
            deps(), g.caller, key, request_hash(request.method, request.path, body),
            lambda _link: _create(batch_kind, body, key), keep, records=key_records,
            abandoned_after=timedelta(seconds=current_app.config["IDEMPOTENCY_ABANDONED_AFTER"]),
            wait_for_first=WAIT_FOR_FIRST)
    except (FieldErrors, BatchFileError):
        return first
    except once.KeyReused:
        return json_response({"error": "Idempotency-Key reused with a different request"}, 422)
    except once.StillRunning:
        return json_response({"error": "A request with this Idempotency-Key is still being processed"}, 409)
    if isinstance(outcome, once.Answer):
        return Response(outcome.body, status=outcome.status, mimetype="application/json",
                        headers={"Idempotent-Replayed": "true"})
    return first


@api.get("/payouts/batches/<batch_id>", defaults={"kind": "payouts"})
@api.get("/refunds/batches/<batch_id>", defaults={"kind": "refunds"})
def get_batch(kind: str, batch_id: str):
    """The batch, its counts and each row's result (txNo, status, decline reason or messages)."""
    batch = _of_kind(batches.get_batch(deps(), g.caller, _batch_id(batch_id)), _kind(kind))
    return json_response(batch_body(batch, batches.rows_of(deps(), batch)))


@api.post("/payouts/batches/<batch_id>/run", defaults={"kind": "payouts"})
@api.post("/refunds/batches/<batch_id>/run", defaults={"kind": "refunds"})
def run_batch(kind: str, batch_id: str):
    """Run a batch in review: its refused rows are skipped, its valid rows made (after one
    approval above the threshold). 200 with the batch; 409 when it is not in review."""
    batch = _of_kind(batches.get_batch(deps(), g.caller, _batch_id(batch_id)), _kind(kind))
    batch = batches.run(deps(), g.caller, batch.public_id)
    return json_response(batch_body(batch, None))


@api.post("/payouts/batches/<batch_id>/cancel", defaults={"kind": "payouts"})
@api.post("/refunds/batches/<batch_id>/cancel", defaults={"kind": "refunds"})
def cancel_batch(kind: str, batch_id: str):
    """Cancel a batch in review; 409 once it runs."""
    batch = _of_kind(batches.get_batch(deps(), g.caller, _batch_id(batch_id)), _kind(kind))
    batch = batches.cancel(deps(), g.caller, batch.public_id)
    return json_response(batch_body(batch, None))
