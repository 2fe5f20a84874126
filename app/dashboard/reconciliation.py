"""Reconciliation: the providers' settlements with their totals and exceptions, one settlement's
lines and what each matched, its CSV export, and the payments no settlement carries (finance, admin)."""
from __future__ import annotations

from flask import abort, current_app, render_template, request

from app.auth.users import current_caller, requires
from app.payments.money import format_amount, from_minor
from app.payments.reconcile import Outcome
from app.store import settlements as store
from app.web import deps

from . import dashboard
from .csv_export import csv_download

PERMISSION = "reconcile"
PAGE_SIZE = 50
MISSING_SHOWN = 100
CSV_COLUMNS = ("Provider transaction id", "Reference", "Type", "Direction", "Gross", "Fee", "Net", "Currency",
               "TxNo", "Result", "Paydesk amount", "Paydesk currency")


@dashboard.get("/reconciliation")
@requires(PERMISSION)
def reconciliation():
    """Settlements, newest stored first, with totals and exception counts; the payments missing from them."""
    before = request.args.get("before", "")
    before_id = int(before) if before.isdigit() and len(before) <= 18 else None
    caller = current_caller()
    with deps().uow(write=False) as uow:
        found = store.list_settlements(uow.conn, caller, before_id=before_id, limit=PAGE_SIZE + 1)
        missing = store.missing_from_settlement(uow.conn, deps().clock(), current_app.config["SETTLEMENT_DELAY"],
                                                caller, limit=MISSING_SHOWN)
    return render_template("dashboard/reconciliation.html", settlements=found[:PAGE_SIZE],
                           older=found[PAGE_SIZE - 1].id if len(found) > PAGE_SIZE else None,
                           missing=missing, missing_shown=MISSING_SHOWN,
                           delay_days=current_app.config["SETTLEMENT_DELAY"].days, paged=before_id is not None)


def _settlement_or_404(uow, settlement_id: str) -> store.SettlementSummary:
    """The caller's settlement by its public id; 404 for another merchant's or mode's, as for none."""
    row_id = store.parse_public_id(settlement_id)
    summary = store.get_settlement(uow.conn, current_caller(), row_id) if row_id is not None else None
    if summary is None:
        abort(404)
    return summary


@dashboard.get("/reconciliation/<settlement_id>")
@requires(PERMISSION)
def settlement(settlement_id: str):
    """One settlement: its totals and each line with the Paydesk transaction it matched."""
    with deps().uow(write=False) as uow:
        summary = _settlement_or_404(uow, settlement_id)
        lines = store.lines_of(uow.conn, summary.id)
    return render_template("dashboard/settlement.html", settlement=summary, lines=lines, outcomes=Outcome)


@dashboard.get("/reconciliation/<settlement_id>/export.csv")
@requires(PERMISSION)
def export_settlement(settlement_id: str):
    """The settlement's lines as CSV: amounts without their sign, the direction in its own column."""
    with deps().uow(write=False) as uow:
        summary = _settlement_or_404(uow, settlement_id)
        lines = store.lines_of(uow.conn, summary.id)

    def amount(minor: int, currency: str) -> str:
        return format_amount(from_minor(abs(minor), currency), currency)

    rows = ((line.provider_transaction_id, line.reference or "", line.type.value,
             "debit" if line.net_minor < 0 else "credit", amount(line.gross_minor, line.currency),
             amount(line.fee_minor, line.currency), amount(line.net_minor, line.currency), line.currency,
             line.tx_no or "", line.outcome.value,
             "" if line.paydesk_amount_minor is None else amount(line.paydesk_amount_minor, line.paydesk_currency),
             line.paydesk_currency or "") for line in lines)
    filename = (f"paydesk-{current_caller().mode.value}-settlement-{summary.provider}-"
                f"{summary.provider_settlement_id}.csv")
    return csv_download("".join(c if c.isalnum() or c in "-_." else "_" for c in filename), CSV_COLUMNS, rows)
