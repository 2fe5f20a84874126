"""Transactions: the searchable list, its CSV export, one transaction's page."""
from __future__ import annotations

from dataclasses import replace
from datetime import date

from flask import abort, redirect, render_template, request, url_for
from flask_login import current_user, login_required

from app.payments.bodies import status_body
from app.auth.users import current_caller
from app.payments.model import (
    CANCELLABLE_STATUSES,
    MAX_TX_NO_LENGTH,
    Kind,
    Status,
    Transaction,
    cancel_outstanding,
)
from app.payments.money import format_amount
from app.payments.notes import MAX_NOTE_LENGTH
from app.store import listing, settlements
from app.store.refund_totals import refund_arithmetic
from app.payments.formats import storable_text
from app.util import could_be_key
from app.webhooks import log
from app.web import deps

from . import dashboard
from .csv_export import csv_download, local_cell, utc_cell
from .formatting import day_input_hint, display, parse_day
from .htmx import page_or_fragment
from .modes import InOtherMode, keep_search_on_switch, other_mode
from .navigation import landing_endpoint
from .payouts import bank_name
from .timeline import build_timeline
from .webhooks import with_attempts

MAX_SEARCH_LENGTH = 100
FILTER_ARGS = ("q", "status", "kind", "from", "to")
CSV_COLUMNS = ("Created (UTC)", "TxNo", "Kind", "Status", "Amount", "Currency", "Reference",
               "Decline reason", "Payment method")
# After them, what reconciling needs: a refund's original, the customer, the provider's id, and a
# payment's refunded and still refundable amounts (empty for refunds and payouts).
CSV_RECONCILING_COLUMNS = ("Original TxNo", "Customer name", "Customer e-mail", "Customer reference",
                           "Provider transaction ID", "Refunded", "Remaining refundable")
CANCEL_PERMISSION = "cancel"
NOTE_PERMISSION = "add_note"


@dashboard.get("/")
@login_required
def home():
    """The dashboard opens on the user's landing page (navigation.landing_endpoint)."""
    return redirect(url_for(landing_endpoint(current_user)))


def read_filter(args) -> tuple[listing.TransactionFilter, list[str]]:
    """The list filter from the query string, and what could not be understood in it."""
    problems = []
    status = kind = None
    if args.get("status"):
        try:
            status = Status(args["status"])
        except ValueError:
            problems.append(f"Unknown status {args['status'][:20]!r}")
    if args.get("kind"):
        try:
            kind = Kind(args["kind"])
        except ValueError:
            problems.append(f"Unknown kind {args['kind'][:20]!r}")
    date_from, date_to = read_day_range(args, problems)
    search = args.get("q", "")[:MAX_SEARCH_LENGTH]
    if not storable_text(search):
        problems.append("Search text must not contain control characters")
        search = ""
    flt = listing.TransactionFilter(search=search, status=status, kind=kind, date_from=date_from,
                                    date_to=date_to, time_zone=display().zone)
    return flt, problems


def read_day_range(args, problems: list[str]) -> tuple[date | None, date | None]:
    """The `from` and `to` days of a list's query string, calendar days of the reader's time zone
    typed in their locale's pattern (or YYYY-MM-DD); a date that cannot be read is left out and
    said in `problems`."""
    days = {}
    for name in ("from", "to"):
        text = args.get(name, "")
        if text:
            try:
                days[name] = parse_day(text)
            except ValueError:
                problems.append(f"Dates are written {day_input_hint()} ({name} was {text[:20]!r})")
    return days.get("from"), days.get("to")


def filter_args(args) -> dict:
    """The filter's query-string values that are set, for links that keep the filter."""
    return {name: args[name] for name in FILTER_ARGS if args.get(name)}


@dashboard.get("/transactions")
@login_required
def transactions():
    """Payments, payouts and refunds, newest first; search and filters narrow them as you type."""
    flt, problems = read_filter(request.args)
    older = listing.Cursor.decode(request.args.get("older"))
    newer = listing.Cursor.decode(request.args.get("newer"))
    with deps().uow(write=False) as uow:
        page = listing.list_transactions(uow.conn, current_caller(), flt, older_than=older,
                                         newer_than=None if older else newer,
                                         limit=listing.PAGE_SIZE)
    return page_or_fragment(
        "dashboard/transactions.html", "dashboard/_transactions_results.html",
        page=page, args=filter_args(request.args), problems=problems, flt=flt,
        statuses=list(Status), kinds=list(Kind), paged=bool(older or newer),
    )


@dashboard.get("/transactions/export.csv")
@login_required
def export_transactions():
    """Every transaction the filters select, as CSV, streamed in keyset batches (no size limit).

    The first nine columns are as they always were (UTC times, plain amounts with a '.', for
    machines); reconciling columns follow, and with `local_time=1` the creation time in the
    reader's time zone last."""
    flt, problems = read_filter(request.args)
    if problems:
        abort(400)
    caller = current_caller()
    zone = display().zone if request.args.get("local_time") == "1" else None
    header = CSV_COLUMNS + CSV_RECONCILING_COLUMNS + ((f"Created ({zone})",) if zone else ())

    def plain(amount, currency: str) -> str:
        return "" if amount is None else format_amount(amount, currency)

    rows = (
        (utc_cell(e.row.created_at), e.row.tx_no, e.row.kind.value, e.row.status.value,
         format_amount(e.row.amount, e.row.currency), e.row.currency, e.row.reference,
         e.row.decline_reason or "", e.row.payment_method,
         e.row.original_tx_no or "", e.row.customer_name or "", e.row.customer_email or "",
         e.customer_reference or "", e.provider_transaction_id or "",
         plain(e.refunded, e.row.currency), plain(e.remaining_refundable, e.row.currency),
         *((local_cell(e.row.created_at, zone),) if zone else ()))
        for e in listing.export_transactions(deps().uow, caller, flt)
    )
    filename = f"paydesk-{caller.mode.value}-transactions-{deps().clock():%Y%m%d-%H%M%S}.csv"
    return csv_download(filename, header, rows)


def _transaction_or_404(uow, caller, tx_no: str) -> Transaction:
    """The caller's transaction with this number; 404 when there is none (or the text could not
    be a number of ours, which is not even looked up). When the caller's merchant has it in the
    other mode, the 404 links to it there."""
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        abort(404)
    tx = uow.transactions.get(caller, tx_no)
    if tx is None:
        elsewhere = replace(caller, mode=other_mode(caller.mode))
        if uow.transactions.get(elsewhere, tx_no) is not None:
            raise InOtherMode(elsewhere.mode, url_for("dashboard.transaction", tx_no=tx_no,
                                                      mode=elsewhere.mode.value))
        abort(404)
    return tx


def detail_context(tx_no: str) -> dict:
    """Everything the transaction page and its fragments show."""
    caller = current_caller()
    with deps().uow(write=False) as uow:
        tx = _transaction_or_404(uow, caller, tx_no)
        refunds = uow.transactions.refunds_of(caller, tx.id) if tx.kind is Kind.PAYMENT else []
        arithmetic = refund_arithmetic(uow, caller, tx) if tx.kind is Kind.PAYMENT else None
        deliveries = with_attempts(uow.conn, log.list_deliveries(uow.conn, caller, tx_no=tx.tx_no,
                                                                 limit=100))
        method = uow.methods.of_transaction(tx)
        approvals = uow.approvals.of_payment(caller, tx.id) if tx.kind is Kind.PAYMENT else []
        disputes = uow.disputes.of_payment(tx.id) if tx.kind is Kind.PAYMENT else []
        notes = uow.notes.of_transaction(caller, tx)
        fees = settlements.fees_of(uow.conn, tx.id)  # the provider's, once a settlement carried it
        timeline = build_timeline(uow.conn, caller, tx, refunds, approvals, notes)
    return {
        "tx": tx, "fields": status_body(tx), "refunds": refunds, "arithmetic": arithmetic,
        "timeline": timeline, "deliveries": deliveries, "method": method,
        "bank_name": bank_name(tx) if tx.payment_details else None,
        "cancel_panel": cancel_panel_state(tx),
        "approvals": approvals, "disputes": disputes,
        "notes": notes, "notes_panel": notes_panel_state(), "fees": fees,
    }


@dashboard.get("/transactions/<tx_no>")
@login_required
def transaction(tx_no: str):
    """One transaction: its status fields, history, refunds, webhooks, the refund and cancel panels."""
    context = detail_context(tx_no)
    keep_search_on_switch(q=context["tx"].reference)
    return render_template("dashboard/transaction.html", panel=refund_panel_state(context),
                           **context)


@dashboard.get("/transactions/<tx_no>/refunds")
@login_required
def transaction_refunds(tx_no: str):
    """The payment's refunds and status, which the page asks for every few seconds while a
    refund is Pending (htmx polling, see _refunds.html); it stops once none is."""
    caller = current_caller()
    with deps().uow(write=False) as uow:
        tx = _transaction_or_404(uow, caller, tx_no)
        if tx.kind is not Kind.PAYMENT:
            abort(404)
        refunds = uow.transactions.refunds_of(caller, tx.id)
    return render_template("dashboard/_refunds_update.html", tx=tx, refunds=refunds)


@dashboard.get("/transactions/<tx_no>/progress")
@login_required
def transaction_progress(tx_no: str):
    """What a Pending transaction's page asks for every few seconds (htmx polling, see
    _status.html): nothing (204) while it is Pending; once it is not, the parts of the page its
    new status changes, and the polling stops."""
    with deps().uow(write=False) as uow:
        tx = _transaction_or_404(uow, current_caller(), tx_no)
    if tx.status is Status.PENDING:
        return "", 204
    context = detail_context(tx_no)
    tx = context["tx"]
    announce = f"{tx.kind.value.title()} {tx.tx_no} is now {tx.status.value}" + \
        (f": {tx.decline_reason}." if tx.decline_reason else ".")
    return render_template("dashboard/_progress_update.html", panel=refund_panel_state(context),
                           announce=announce, **context)


def refund_panel_state(context: dict, **extra) -> dict:
    """What the refund panel shows: its step, the amount to prefill, notices and errors."""
    arithmetic = context["arithmetic"]
    state = {"step": "form", "errors": {}, "error": None, "notice": None, "inputs": {}}
    if arithmetic is not None:
        state["inputs"] = {"amount": format_amount(arithmetic.remaining, arithmetic.currency)
                           if arithmetic.remaining > 0 else ""}
    state.update(extra)
    return state


def cancel_panel_state(tx: Transaction, **extra) -> dict:
    """What the cancel panel shows: whether it offers the cancel (a Pending or Authorized payment,
    to a role that may cancel, with no cancel already waiting for its provider), whether a
    requested cancel waits for the provider, its step, and why a cancel was refused."""
    may_cancel = current_user.can(CANCEL_PERMISSION)  # the side column's layout depends on it alone
    requested = may_cancel and cancel_outstanding(tx)
    offered = may_cancel and tx.kind is Kind.PAYMENT and tx.status in CANCELLABLE_STATUSES and not requested
    return {"offered": offered, "requested": requested, "step": "offer", "error": None, **extra}


def notes_panel_state(**extra) -> dict:
    """What the notes panel shows besides the notes: whether it offers the form (to a role that
    may add notes), the text to show again with its error, and whether a note was just added
    (focus then goes to it)."""
    return {"offered": current_user.can(NOTE_PERMISSION), "text": "", "error": None, "added": False,
            "max_length": MAX_NOTE_LENGTH, **extra}

