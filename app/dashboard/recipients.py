"""Saved recipients: the list (searched by holder), saving one, archiving one, and paying one again
(amount, reference, statement text, then review and confirm, as a new payout is made)."""
from __future__ import annotations

import secrets

from flask import abort, flash, make_response, render_template, request, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from wtforms import SelectField, StringField

from app.auth.users import current_caller, requires
from app.payments import bank_lists, recipients
from app.payments.approvals import ApprovalKind, LimitExceeded
from app.payments.model import (
    BankListNotReady,
    BankListRefused,
    DuplicateReference,
    FieldErrors,
    SimulatedLiveMoney,
    TransactionNotFound,
)
from app.payments.create import check_create
from app.payments.provider import ProviderUnavailable
from app.payments.recipients import Recipient, RecipientArchived, RecipientDetails, RecipientNotFound
from app.store.merchants import merchant_by_id
from app.util import utcnow
from app.web import deps

from . import dashboard, once
from .approvals import money_controls, threshold_text
from .formatting import money
from .forms import blank_to_none, form_amount
from .htmx import load_page, page_or_fragment
from .payouts import FIELD_OF_ERROR, Destination, destination_of, in_form_words, spread_errors

# Which input of the save form each of the service's field errors belongs to.
SAVE_FIELD_OF_ERROR = {**FIELD_OF_ERROR, "Label": "label"}
# ... and of the pay form: the destination's are the recipient's, shown above the form.
PAY_FIELD_OF_ERROR = {"Amount": "amount", "Reference": "reference",
                      "StatementDescriptor": "statement_descriptor", "CallbackUrl": "callback_url"}
# What the create service and the approval rules refuse a payout with (the pay form shows them).
REFUSALS = (FieldErrors, DuplicateReference, LimitExceeded, SimulatedLiveMoney, BankListNotReady)


class RecipientForm(FlaskForm):
    """A recipient to save: a payout's destination and the customer its payouts are for."""

    class Meta:
        csrf = False  # CSRFProtect checks every POST already

    method = SelectField("Payout method")
    currency = SelectField("Currency")
    country = SelectField("Country", description="Optional; narrows the bank list")
    holder = StringField("Account holder", render_kw={"autocomplete": "off"})
    account_number = StringField("Account number", render_kw={"autocomplete": "off", "spellcheck": "false"})
    label = StringField("Nickname", description="Optional; what your team calls them, e.g. 'Lagos office rent'")
    first_name = StringField("First name", render_kw={"autocomplete": "off"})
    last_name = StringField("Last name", render_kw={"autocomplete": "off"})
    email = StringField("E-mail", render_kw={"type": "email", "autocomplete": "off"})
    customer_reference = StringField("Customer reference",
                                     description="Optional; the recipient's id (rcp_...) when left empty")


class PayRecipientForm(FlaskForm):
    """A payout to a saved recipient: all the recipient does not already say."""

    class Meta:
        csrf = False

    amount = StringField("Amount", render_kw={"inputmode": "decimal", "autocomplete": "off"})
    reference = StringField("Reference", description="Your unique reference for this payout")
    statement_descriptor = StringField("Statement text", description="At most 22 characters")
    callback_url = StringField("Callback URL", description="Where status webhooks are sent")


@dashboard.get("/recipients")
@requires("create_payout")
def recipients_list():
    """The merchant's recipients of this mode by holder (archived ones with ?archived=1); htmx
    searches get the results alone."""
    search = (request.args.get("q") or "").strip()[:100]
    archived = request.args.get("archived") == "1"
    found = recipients.list_recipients(deps(), current_caller(), search, archived=archived)
    return page_or_fragment("dashboard/recipients.html", "dashboard/_recipient_results.html",
                            recipients=found, search=search, archived=archived,
                            bank_names=_bank_names(found))


def _bank_names(found: list[Recipient]) -> dict[tuple, str]:
    """The display names of the recipients' banks, by (method, currency, country, code): one bank
    list read per method, currency and country."""
    names, lists = {}, {}
    for recipient in found:
        if not recipient.bank:
            continue
        key = (recipient.payment_method, recipient.currency, recipient.country)
        if key not in lists:
            try:
                lists[key] = {b.code: b.name for b in bank_lists.list_banks(deps(), current_caller(), *key)}
            except (BankListRefused, BankListNotReady, ProviderUnavailable):
                lists[key] = {}  # the page shows the code alone
        if recipient.bank in lists[key]:
            names[(*key, recipient.bank)] = lists[key][recipient.bank]
    return names


@dashboard.get("/recipients/new")
@requires("create_payout")
def new_recipient():
    """The form that saves a recipient, with the bank list of the first (or chosen) payout method."""
    form = RecipientForm(formdata=None)
    destination = destination_of(request.args)
    destination.fill_choices(form)
    return _save_page(form, destination)


def _save_page(form: RecipientForm, destination: Destination, status: int = 200, errors=None):
    bank_errors, summary = spread_errors(form, errors or {}, SAVE_FIELD_OF_ERROR)
    return render_template("dashboard/recipient_new.html", form=form, destination=destination,
                           bank_errors=bank_errors, error_summary=summary,
                           selected_bank=request.form.get("bank")), status


@dashboard.post("/recipients")
@requires("create_payout")
def save_recipient():
    """Save the recipient after the create's own checks of a payout's destination; an account
    saved already leads to the recipient saved first."""
    form = RecipientForm()
    destination = destination_of(request.form)
    if destination.method is None:
        abort(404)
    destination.fill_choices(form)
    details = RecipientDetails(
        payment_method=destination.method.method_id, currency=blank_to_none(request.form.get("currency")),
        country=blank_to_none(request.form.get("country")), bank=blank_to_none(request.form.get("bank")),
        holder=blank_to_none(form.holder.data), account_number=blank_to_none(form.account_number.data),
        label=blank_to_none(form.label.data), first_name=blank_to_none(form.first_name.data),
        last_name=blank_to_none(form.last_name.data), email=blank_to_none(form.email.data),
        customer_reference=blank_to_none(form.customer_reference.data))
    try:
        saved = recipients.save(deps(), current_caller(), details)
    except FieldErrors as error:
        return _save_page(form, destination, 422, error.errors)
    except (SimulatedLiveMoney, BankListNotReady) as error:
        return _save_page(form, destination, 422, {"": [str(error)]})
    return _saved_page(saved)


@dashboard.post("/transactions/<tx_no>/save-recipient")
@requires("create_payout")
def save_payout_recipient(tx_no: str):
    """Save a payout's destination as a recipient, from the payout's page (its account number
    never goes to the browser and back)."""
    try:
        saved = recipients.save_from_payout(deps(), current_caller(), tx_no)
    except TransactionNotFound:
        abort(404)
    except (FieldErrors, SimulatedLiveMoney, BankListNotReady) as error:
        problems = error.errors.values() if isinstance(error, FieldErrors) else [[str(error)]]
        flash("This payout's destination cannot be saved: "
              + " ".join(in_form_words(message) for messages in problems for message in messages), "error")
        return load_page(url_for("dashboard.transaction", tx_no=tx_no))
    return _saved_page(saved)


def _saved_page(saved: recipients.Saved):
    """The list at the recipient saved (or found saved already), with what happened."""
    recipient = saved.recipient
    if saved.created:
        flash(f"Recipient {recipient.holder} saved (account {recipient.masked_account_number}).", "success")
    else:
        flash(f"This account is saved already, as {_name(recipient)}.", "info")
    return load_page(url_for("dashboard.recipients_list", _anchor=recipient.public_id))


def _name(recipient: Recipient) -> str:
    return f"{recipient.holder} ({recipient.label})" if recipient.label else recipient.holder


@dashboard.post("/recipients/<public_id>/archive")
@requires("create_payout")
def archive_recipient(public_id: str):
    """Archive the recipient: it is paid no more; its payouts keep their own copy of its details."""
    try:
        archived = recipients.archive(deps(), current_caller(), public_id)
    except RecipientNotFound:
        abort(404)
    flash(f"Recipient {_name(archived)} archived; the payouts made to them are kept as they were.", "success")
    return load_page(url_for("dashboard.recipients_list"))


def _live_recipient(public_id: str) -> Recipient:
    """The caller's recipient to pay: 404 when there is none, 410 (a page saying so) when archived."""
    try:
        recipient = recipients.get(deps(), current_caller(), public_id)
    except RecipientNotFound:
        abort(404)
    if recipient.archived:
        abort(_archived_page(recipient))
    return recipient


def _archived_page(recipient: Recipient):
    return make_response(render_template(
        "dashboard/error.html", title="Recipient archived",
        message=f"{_name(recipient)} was archived and cannot be paid. Save the account again to pay it."), 410)


def suggested_reference() -> str:
    """A reference the merchant has surely not used yet: PO-<UTC date>-<random>."""
    return f"PO-{utcnow():%Y%m%d}-{secrets.token_hex(3).upper()}"


@dashboard.get("/recipients/<public_id>/pay")
@requires("create_payout")
def pay_recipient(public_id: str):
    """The short payout form of a recipient: amount (in the recipient's currency), a new reference,
    the statement text and callback URL the payout form would start with."""
    recipient = _live_recipient(public_id)
    with deps().uow(write=False) as uow:
        merchant = merchant_by_id(uow.conn, current_user.merchant_id)
    form = PayRecipientForm(formdata=None)
    form.reference.data = suggested_reference()
    form.statement_descriptor.data = merchant.name[:recipients.STATEMENT_LENGTH]
    form.callback_url.data = merchant.default_callback_url or ""
    return _pay_page(recipient, form=form, focus="amount")


def _pay_page(recipient: Recipient, status: int = 200, **context):
    """The pay page, or for htmx its form or review part (#recipient-pay) alone."""
    context = {"error_summary": [], "review": None, "focus": None, "bank": _bank_label(recipient), **context}
    return page_or_fragment("dashboard/recipient_pay.html", "dashboard/_recipient_pay.html", status,
                            recipient=recipient, **context)


def _bank_label(recipient: Recipient) -> str | None:
    if not recipient.bank:
        return None
    name = _bank_names([recipient]).get((recipient.payment_method, recipient.currency, recipient.country,
                                         recipient.bank))
    return f"{name} ({recipient.bank})" if name else recipient.bank


def _posted_payout(public_id: str) -> tuple[Recipient, PayRecipientForm, recipients.RecipientPayout | None,
                                              dict | None]:
    """The recipient, the posted form, and the payout it makes (or the field errors it has)."""
    recipient = _live_recipient(public_id)
    form = PayRecipientForm()
    try:
        payout = recipients.payout_to(deps(), current_caller(), public_id, form_amount(form.amount.data),
                                      recipient.currency, blank_to_none(form.reference.data),
                                      blank_to_none(form.statement_descriptor.data) or "",
                                      blank_to_none(form.callback_url.data) or "")
    except RecipientArchived:
        abort(_archived_page(recipient))
    except FieldErrors as error:
        return recipient, form, None, error.errors
    return recipient, form, payout, None


@dashboard.post("/recipients/<public_id>/pay/review")
@requires("create_payout")
def review_recipient_payout(public_id: str):
    """Step 1: check the payout with the create's own checks and the approval rules, then show it
    to confirm; with step=edit, the form again as it was filled in."""
    recipient, form, payout, errors = _posted_payout(public_id)
    if request.form.get("step") == "edit":
        return _pay_page(recipient, form=form, focus="amount")
    if errors:
        return _pay_with_errors(recipient, form, errors)
    try:
        check_create(deps(), current_caller(), payout.request)
        four_eyes = money_controls(ApprovalKind.PAYOUT, payout.request.amount, payout.request.currency)
    except REFUSALS as error:
        return _pay_refused(recipient, form, error)
    # The confirmation carries a one-time key, as the payout form's does: a second submit gets
    # the first payout (or approval request) back instead of sending the money twice.
    return _pay_page(recipient, form=form, review=_summary(payout), request_key=once.new_key(),
                     needs_approval=four_eyes,
                     threshold=threshold_text(payout.request.currency) if four_eyes else None)


def _summary(payout: recipients.RecipientPayout) -> dict:
    """What the review shows of a checked payout to a recipient (the account masked)."""
    created = payout.request
    return {"amount": money(created.amount, created.currency), "reference": created.reference,
            "statement_descriptor": created.statement_descriptor, "callback_url": created.callback_url}


@dashboard.post("/recipients/<public_id>/pay")
@requires("create_payout")
def create_recipient_payout(public_id: str):
    """Step 2: make the reviewed payout through the create service (once per review), or above
    the threshold leave it for a second user; then show its page."""
    recipient, form, payout, errors = _posted_payout(public_id)
    if errors:
        return _pay_with_errors(recipient, form, errors)
    caller = current_caller()
    try:
        if money_controls(ApprovalKind.PAYOUT, payout.request.amount, payout.request.currency):
            awaiting = recipients.request_approval(deps(), caller, payout,
                                                   once.usable_key(request.form.get("request_key", "")))
            flash(f"The payout of {money(awaiting.amount, awaiting.currency)} to {recipient.holder} awaits "
                  "another user's approval.", "info")
            return load_page(url_for("dashboard.approvals_list", _anchor=f"approval-{awaiting.id}"))
        made = once.run_once(deps(), caller, "payout", request.form.get("request_key", ""), payout.body,
                             lambda on_created: recipients.pay(deps(), caller, payout, on_created))
    except once.FormReused:
        return _pay_with_errors(recipient, form, {"": [
            "This confirmation was already used for another payout; review the payout again."]})
    except REFUSALS as error:
        return _pay_refused(recipient, form, error)
    flash(f"Payout {made.tx_no} to {recipient.holder} created: {made.status.value}.", "success")
    return load_page(url_for("dashboard.transaction", tx_no=made.tx_no))


def _pay_refused(recipient: Recipient, form: PayRecipientForm, error: Exception):
    """The form again with the service's refusal, in the words of the field it names."""
    if isinstance(error, FieldErrors):
        return _pay_with_errors(recipient, form, error.errors)
    if isinstance(error, DuplicateReference):
        return _pay_with_errors(recipient, form, {"Reference": [str(error)]})
    if isinstance(error, LimitExceeded):
        return _pay_with_errors(recipient, form, {"Amount": [str(error)]})
    return _pay_with_errors(recipient, form, {"": [str(error)]})  # SimulatedLiveMoney, BankListNotReady


def _pay_with_errors(recipient: Recipient, form: PayRecipientForm, errors: dict[str, list[str]]):
    _no_bank_errors, summary = spread_errors(form, errors, PAY_FIELD_OF_ERROR)  # PAY_ names no bank
    return _pay_page(recipient, 422, form=form, error_summary=summary)
