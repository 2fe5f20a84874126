"""Batches: upload a payouts or refunds CSV, review each row's errors and the totals, run the
valid rows (one approval above the threshold), watch the worker make them, download the results."""
from __future__ import annotations

import hashlib
from decimal import Decimal

from flask import Response, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.auth.users import current_caller, requires
from app.payments import batches
from app.payments.approvals import ApprovalKind, LimitExceeded, check_limit
from app.payments.batches import Batch, BatchFileError, BatchKind, BatchNotFound, BatchRefused, BatchState
from app.payments.money import fits_currency, is_currency
from app.store import approvals as approval_store
from app.store.merchants import merchant_by_id
from app.web import deps

from . import dashboard, once
from .formatting import money
from .htmx import page_or_fragment, wants_fragment

# The upload form's file is at most this large (a 5,000-row payouts file is about 700 kB).
UPLOAD_LIMIT = 4 * 1024 * 1024
PERMISSION_OF = {BatchKind.PAYOUT: "create_payout", BatchKind.REFUND: "refund"}
MAX_SHOWN_ROWS = 1000


@dashboard.app_template_global("row_amount")
def row_amount(body: dict):
    """A batch row's amount as the dashboard writes amounts, or as it was given when it is not one
    (the row's errors say why)."""
    amount, currency = body.get("amount"), body.get("currency")
    if isinstance(amount, (int, Decimal)) and not isinstance(amount, bool) and isinstance(currency, str) \
            and is_currency(currency) and fits_currency(Decimal(amount), currency):
        return money(Decimal(amount), currency)
    return " ".join(str(part) for part in (amount, currency) if part not in (None, ""))


@dashboard.url_value_preprocessor
def _upload_limit(endpoint: str | None, _values: dict | None) -> None:
    """The upload takes bodies up to UPLOAD_LIMIT; set before the form is read."""
    if endpoint == "dashboard.upload_batch":
        request.max_content_length = UPLOAD_LIMIT


def _kinds() -> list[BatchKind]:
    """The kinds of batch the signed-in user's role may make."""
    return [kind for kind in BatchKind if current_user.can(PERMISSION_OF[kind])]


def _batch_or_404(public_id: str) -> Batch:
    try:
        found = batches.get_batch(deps(), current_caller(), public_id[:40])
    except BatchNotFound:
        abort(404)
    if not current_user.can(PERMISSION_OF[found.kind]):
        abort(403)
    return found


def _list_page(status: int = 200, error: str | None = None):
    with deps().uow(write=False) as uow:
        recent = uow.batches.list(current_caller())
    return render_template("dashboard/batches.html", recent=[b for b in recent if b.kind in _kinds()],
                           kinds=_kinds(), error=error, upload_key=once.new_key()), status


@dashboard.get("/batches")
@requires("batches")
def batches_page():
    """The upload form, the templates and the latest batches."""
    return _list_page()


@dashboard.get("/batches/template/<any(payout, refund):kind>.csv")
@requires("batches")
def batch_template(kind: str):
    """A CSV to start from: the header and one example row."""
    return Response(batches.TEMPLATES[kind], mimetype="text/csv", headers={
        "Content-Disposition": f"attachment; filename={kind}s-template.csv"})


@dashboard.post("/batches")
@requires("batches")
def upload_batch():
    """Check every row of the uploaded file and show the review (nothing is created yet)."""
    kind = BatchKind(request.form.get("kind")) if request.form.get("kind") in ("payout", "refund") else None
    if kind is None or kind not in _kinds():
        return _list_page(422, "Choose payouts or refunds.")
    upload = request.files.get("file")
    if upload is None or not upload.filename:
        return _list_page(422, "Choose a CSV file to upload.")
    caller = current_caller()
    defaults = None
    if kind is BatchKind.PAYOUT:
        with deps().uow(write=False) as uow:
            merchant = merchant_by_id(uow.conn, current_user.merchant_id)
        defaults = batches.PayoutDefaults(merchant.name[:22], merchant.default_callback_url)
    data = upload.read()
    key = request.form.get("upload_key", "")
    # A second submit of this form with the same file is the first batch; a fixed file is a new one.
    key = (f"{key}:{hashlib.sha256(data).hexdigest()[:32]}"
           if 0 < len(key) <= once.MAX_KEY_LENGTH and key.isascii() and key.isprintable() else None)
    try:
        rows = batches.read_csv(data, kind)
        batch = batches.create_batch(deps(), caller, kind, rows, source="dashboard",
                                     file_name=(upload.filename or "")[:200], request_key=key,
                                     defaults=defaults)
    except BatchFileError as error:
        return _list_page(422, str(error))
    return redirect(url_for("dashboard.batch", public_id=batch.public_id), 303)


def _batch_page(batch: Batch, mark: str, status: int = 200):
    rows = batches.rows_of(deps(), batch)
    if batch.state is BatchState.REVIEW:
        rows = [row for row in rows if row.errors] + [row for row in rows if not row.errors]
    return page_or_fragment("dashboard/batch.html", "dashboard/_batch_progress.html", status, batch=batch,
                            mark=mark,
                            rows=rows[:MAX_SHOWN_ROWS], more=max(0, len(rows) - MAX_SHOWN_ROWS),
                            row_status=batches.row_status, row_reason=batches.row_reason,
                            batch_states=batches.RowState)


@dashboard.get("/batches/<public_id>")
@requires("batches")
def batch(public_id: str):
    """A batch: in review its rows' errors and totals and what to do; then its progress (htmx
    polls it while it runs, or awaits approval) and results. A poll that saw what is there now
    (its `seen` mark) is answered 204: nothing is redrawn, the rows of up to 1,000 not read."""
    found = _batch_or_404(public_id)
    mark = batches.progress_mark(deps(), found)
    if wants_fragment() and request.args.get("seen") == mark:
        return Response(status=204)
    return _batch_page(found, mark=mark)


@dashboard.post("/batches/<public_id>/run")
@requires("batches")
def run_batch(public_id: str):
    """Run the valid rows: at once, or after one approval when a total is above the threshold."""
    found = _batch_or_404(public_id)
    caller = current_caller()
    kind = ApprovalKind.REFUND if found.kind is BatchKind.REFUND else ApprovalKind.PAYOUT
    try:
        with deps().uow(write=False) as uow:
            for currency, total in found.totals.items():
                check_limit(approval_store.limits_of_user(uow.conn, caller, current_user.id, currency),
                            kind, total)
        ran = batches.run(deps(), caller, public_id)
    except (LimitExceeded, BatchRefused) as error:
        flash(str(error), "error")
        return redirect(url_for("dashboard.batch", public_id=public_id), 303)
    if ran.state is BatchState.AWAITING_APPROVAL:
        flash(f"The batch's {ran.count(batches.RowState.VALID)} rows await another user's approval.", "info")
    else:
        flash(f"Running the batch's {ran.count(batches.RowState.VALID)} valid rows.", "success")
    return redirect(url_for("dashboard.batch", public_id=public_id), 303)


@dashboard.post("/batches/<public_id>/cancel")
@requires("batches")
def cancel_batch(public_id: str):
    """Cancel a batch in review: nothing of it is created."""
    _batch_or_404(public_id)
    try:
        batches.cancel(deps(), current_caller(), public_id)
    except BatchRefused as error:
        flash(str(error), "error")
    else:
        flash("The batch is cancelled: none of its rows will be created.", "success")
    return redirect(url_for("dashboard.batch", public_id=public_id), 303)


@dashboard.get("/batches/<public_id>/results.csv")
@requires("batches")
def batch_results(public_id: str):
    """The results file: row, txNo, status, decline reason."""
    found = _batch_or_404(public_id)
    rows = batches.rows_of(deps(), found)
    return Response(batches.results_csv(rows), mimetype="text/csv", headers={
        "Content-Disposition": f"attachment; filename={found.public_id}-results.csv"})
