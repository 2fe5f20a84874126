"""A customer's page: every transaction of a customerReference (or of an e-mail), the totals per
currency, the refunds and the declines with what to tell the customer."""
from __future__ import annotations

from flask import abort, render_template, request, url_for
from flask_login import login_required

from app.auth.users import current_caller
from app.payments.formats import storable_text
from app.store import customers, listing
from app.web import deps

from . import dashboard

MAX_REFERENCE_LENGTH = 100  # transactions.customer_reference
MAX_EMAIL_LENGTH = 254


def read_key(args) -> customers.CustomerKey | None:
    """The customer the query string names (`reference`, else `email`); None when it names none
    that could be stored."""
    reference = args.get("reference", "").strip()
    email = args.get("email", "").strip()
    if reference and len(reference) <= MAX_REFERENCE_LENGTH and storable_text(reference):
        return customers.CustomerKey(reference=reference)
    if email and len(email) <= MAX_EMAIL_LENGTH and storable_text(email):
        return customers.CustomerKey(email=email)
    return None


@dashboard.app_template_global("customer_url")
def customer_url(reference: str | None, email: str | None = None) -> str | None:
    """The customer page of a transaction's customer: by its reference, else by its e-mail; None
    for a transaction without either (refunds, payouts without billing)."""
    if reference:
        return url_for("dashboard.customer", reference=reference)
    if email:
        return url_for("dashboard.customer", email=email)
    return None


@dashboard.get("/customer")
@login_required
def customer():
    """One customer's transactions newest first (keyset pages), totals, refunds and declines."""
    key = read_key(request.args)
    if key is None:
        abort(404)
    older = listing.Cursor.decode(request.args.get("older"))
    newer = listing.Cursor.decode(request.args.get("newer"))
    caller = current_caller()
    with deps().uow(write=False) as uow:
        page = customers.customer_page(uow.conn, caller, key, older_than=older, newer_than=newer)
        totals = customers.customer_totals(uow.conn, caller, key)
        declines = customers.customer_declines(uow.conn, caller, key)
        refunds = customers.customer_refunds(uow.conn, caller, key)
    named = next((row for row in [*page.rows, *declines] if row.customer_name or row.customer_email), None)
    args = {"reference": key.reference} if key.reference else {"email": key.email}
    return render_template("dashboard/customer.html", key=key, args=args, page=page, totals=totals,
                           declines=declines, refunds=refunds, named=named,
                           paged=bool(older or newer))
