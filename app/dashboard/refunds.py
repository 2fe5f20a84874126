"""The refund panel of a payment: review, confirm, and the result swapped in place."""
from __future__ import annotations

from decimal import Decimal

from flask import current_app, flash, redirect, request, url_for

from app.auth.users import current_caller, requires
from app.payments import approvals, refunds
from app.payments.approvals import ApprovalKind, LimitExceeded
from app.payments.model import FieldErrors, RefundRejected, Status, Transaction, check_refund
from app.payments.money import format_amount
from app.payments.refundable import refund_state
from app.payments.schemas import parse_refund

from . import dashboard, once
from .approvals import money_controls, threshold_text
from .formatting import money
from .forms import RefundForm, blank_to_none, form_amount
from .htmx import page_or_fragment, wants_fragment
from .transactions import detail_context, refund_panel_state

# Which panel inputs each service field error belongs to.
FIELD_OF_ERROR = {"Amount": "amount", "Reason": "reason", "Description": "description"}


def _request_body(tx_no: str, form: RefundForm, arithmetic) -> dict:
    """The refund request exactly as the API would get it; "full" takes the remaining amount."""
    amount = arithmetic.remaining if request.form.get("full") else form_amount(form.amount.data)
    return {"txNo": tx_no, "amount": amount, "reason": blank_to_none(form.reason.data),
            "description": blank_to_none(form.description.data)}


def _posted_refund(tx_no: str):
    """The transaction's page context, its refund arithmetic, and the posted refund request
    (None when the transaction is not a payment and has no arithmetic)."""
    context = detail_context(tx_no)
    arithmetic = context["arithmetic"]
    body = _request_body(tx_no, RefundForm(), arithmetic) if arithmetic is not None else None
    return context, arithmetic, body


def _inputs(body: dict, currency: str) -> dict:
    """The inputs to show again: the amount written with the currency's digits when it is an
    amount of the currency, otherwise exactly as typed."""
    amount = body["amount"]
    if isinstance(amount, Decimal):
        try:
            amount = format_amount(amount, currency)
        except ValueError:  # more digits than the currency has, or beyond any amount
            amount = (request.form.get("amount") or "").strip()
    return {"amount": amount or "", "reason": body["reason"] or "",
            "description": body["description"] or ""}


def _panel(context: dict, status: int = 200, oob: bool = False, **state):
    """The panel alone for htmx (with `oob`, also the status, refunds and history it changed);
    the whole transaction page otherwise."""
    return page_or_fragment("dashboard/transaction.html", "dashboard/_refund_panel.html", status,
                            panel=refund_panel_state(context, **state), oob=oob, **context)


def _errors_state(error: FieldErrors | RefundRejected) -> dict:
    if isinstance(error, FieldErrors):
        by_field, general = {}, []
        for name, messages in error.errors.items():
            if name in FIELD_OF_ERROR:
                by_field[FIELD_OF_ERROR[name]] = messages
            else:
                general.extend(messages)
        return {"errors": by_field, "error": " ".join(general) or None}
    return {"error": str(error)}


@dashboard.post("/transactions/<tx_no>/refund/review")
@requires("refund")
def review_refund(tx_no: str):
    """Step 1: check the refund with the service's own rules, then ask for confirmation."""
    context, arithmetic, body = _posted_refund(tx_no)
    if body is None:
        return _panel(context, 422, error="Only payments can be refunded")
    inputs = _inputs(body, arithmetic.currency)
    if request.form.get("step") == "edit":
        return _panel(context, inputs=inputs)
    try:
        refund_request = parse_refund(body)
        check_refund(refund_state(context["tx"], arithmetic), tx_no, refund_request.amount)
        four_eyes = money_controls(ApprovalKind.REFUND, refund_request.amount, arithmetic.currency)
    except (FieldErrors, RefundRejected) as error:
        return _panel(context, 422, inputs=inputs, **_errors_state(error))
    except LimitExceeded as error:
        return _panel(context, 422, inputs=inputs, errors={"amount": [str(error)]})
    # The confirmation carries a one-time key: a second submit of the same form
    # (double click, resent POST without JavaScript) gets the first refund (or request) back.
    return _panel(context, step="confirm", inputs=inputs, request_key=once.new_key(),
                  confirm_amount=str(money(refund_request.amount, arithmetic.currency)),
                  needs_approval=four_eyes,
                  threshold=threshold_text(arithmetic.currency) if four_eyes else None)


@dashboard.post("/transactions/<tx_no>/refund")
@requires("refund")
def refund(tx_no: str):
    """Step 2: refund through the same service as the API; show the result and what remains."""
    context, arithmetic, body = _posted_refund(tx_no)
    if body is None:
        return _panel(context, 422, error="Only payments can be refunded")
    deps = current_app.extensions["paydesk"]
    key = request.form.get("request_key", "")
    try:
        refund_request = parse_refund(body)
        if money_controls(ApprovalKind.REFUND, refund_request.amount, arithmetic.currency):
            awaiting = approvals.request_refund(deps, current_caller(), refund_request,
                                                key if _usable_key(key) else once.new_key())
            return _answer(tx_no, _awaiting_notice(awaiting))
        created = _refund_once(deps, current_caller(), body, key)
    except (FieldErrors, RefundRejected) as error:
        return _panel(context, 422, inputs=_inputs(body, arithmetic.currency), **_errors_state(error))
    except LimitExceeded as error:
        return _panel(context, 422, inputs=_inputs(body, arithmetic.currency),
                      errors={"amount": [str(error)]})
    return _answer(tx_no, _outcome_notice(created))


def _answer(tx_no: str, notice: dict):
    """The panel with the notice and what changed (htmx), or the page again with it flashed."""
    if not wants_fragment():
        flash(notice["text"], notice["kind"])
        return redirect(url_for("dashboard.transaction", tx_no=tx_no, _anchor="refund"), 303)
    return _panel(detail_context(tx_no), oob=True, notice=notice)


def _refund_once(deps, caller, body: dict, key: str) -> Transaction:
    """Refund through the service under the form's one-time key: a second submit gets the first refund."""
    refund_request = parse_refund(body)
    try:
        return once.run_once(deps, caller, "refund", key, body,
                             lambda on_created: refunds.refund(deps, caller, refund_request, on_created))
    except once.FormReused:
        raise RefundRejected("This refund form was already used for another amount; "
                             "review the refund again.") from None


def _usable_key(key: str) -> bool:
    """The confirmation's one-time key as the form sent it, if it could be one of ours."""
    return 0 < len(key) <= once.MAX_KEY_LENGTH and key.isascii() and key.isprintable()


def _awaiting_notice(awaiting) -> dict:
    return {"kind": "info", "text": f"The refund of {money(awaiting.amount, awaiting.currency)} awaits "
                                    "another user's approval; its amount is held on this payment "
                                    "until it is approved, rejected or expires."}


def _outcome_notice(created) -> dict:
    amount = money(created.amount, created.currency)
    if created.status is Status.CAPTURED:
        return {"kind": "success", "text": f"Refund {created.tx_no} of {amount} is Captured."}
    if created.status is Status.PENDING:
        return {"kind": "info", "text": f"Refund {created.tx_no} of {amount} is Pending: the provider "
                                        "will confirm it shortly."}
    reason = f": {created.provider_message}" if created.provider_message else ""
    return {"kind": "error", "text": f"Refund {created.tx_no} of {amount} was {created.status.value} "
                                     f"by the provider{reason}. Its amount is free to refund again."}
