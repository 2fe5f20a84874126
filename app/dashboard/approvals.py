"""Approvals (four eyes): requests awaiting a second user, their approval and rejection, the
admin's settings (approval thresholds per currency, each user's refund and payout limits), and
the check the refund panel and payout form make before moving money."""
from __future__ import annotations

import secrets
from decimal import Decimal

from flask import abort, flash, redirect, render_template, request, url_for
from flask_login import current_user

from app.auth.users import current_caller, local_path, requires
from app.payments import approvals
from app.payments.approvals import (
    ApprovalKind,
    ApprovalRefused,
    ApprovalRequest,
    UserLimits,
    check_limit,
    needs_approval,
)
from app.payments.model import DECLINE_STATUSES, FieldErrors, Mode, PaymentError, Status
from app.payments.formats import storable_text
from app.payments.money import fits_currency, format_amount
from app.store import approvals as approval_store
from app.store import users as staff
from app.util import whole_number
from app.web import deps

from . import dashboard
from .formatting import money
from .forms import blank_to_none, form_amount
from .modes import other_mode
from .settings import ROW_ID

# Settings' amounts are at most this many digits before the point (the columns are 64-bit).
MAX_SETTING_DIGITS = 12


def money_controls(kind: ApprovalKind, amount: Decimal, currency: str) -> bool:
    """The signed-in user's limit refuses the amount (LimitExceeded), or it may go ahead: True
    when it is above the merchant's threshold and needs a second user's approval."""
    caller = current_caller()
    with deps().uow(write=False) as uow:
        limits = approval_store.limits_of_user(uow.conn, caller, current_user.id, currency)
        threshold = approval_store.threshold_of(uow.conn, caller, currency)
    check_limit(limits, kind, amount)
    return needs_approval(threshold, amount)


def threshold_text(currency: str) -> str:
    """The merchant's approval threshold in a currency, as the pages write it."""
    with deps().uow(write=False) as uow:
        threshold = approval_store.threshold_of(uow.conn, current_caller(), currency)
    return str(money(threshold, currency)) if threshold is not None else ""


def may_decide(row: ApprovalRequest) -> dict:
    """What the signed-in user may do with a request: approve (not their own), reject (or withdraw)."""
    allowed = row.state.value == "awaiting" and current_user.can(row.kind.permission)
    return {"approve": allowed and row.requested_by != current_user.email, "reject": allowed}


@dashboard.app_context_processor
def approval_decisions() -> dict:
    """may_decide() for the approval tables of the list and the transaction page; new_form_key()
    for forms whose second submit must not make a second request."""
    return {"may_decide": may_decide, "new_form_key": lambda: secrets.token_urlsafe(16)}


def waiting_for_me() -> dict[Mode, int]:
    """Requests the signed-in user could approve, awaiting in each mode (their own left out)."""
    kinds = [kind for kind in ApprovalKind if current_user.can(kind.permission)]
    with deps().uow(write=False) as uow:
        return approval_store.awaiting_counts(uow.conn, current_user.merchant_id, kinds,
                                              current_user.email)


@dashboard.get("/approvals")
@requires("approve")
def approvals_list():
    """Requests awaiting approval (oldest first), then the latest decided ones; when none awaits
    here but some await the user in the other mode, the page says so with the link there."""
    caller = current_caller()
    with deps().uow(write=False) as uow:
        awaiting = uow.approvals.list(caller, awaiting=True)
        decided = uow.approvals.list(caller, awaiting=False, limit=50)
    elsewhere = None
    if not awaiting:
        other = other_mode(caller.mode)
        count = waiting_for_me()[other]
        if count:
            elsewhere = {"mode": other.value, "count": count,
                         "url": url_for("dashboard.approvals_list", mode=other.value)}
    return render_template("dashboard/approvals.html", awaiting=awaiting, decided=decided,
                           may_decide=may_decide, elsewhere=elsewhere)


def _request_or_404(approval_id: int) -> ApprovalRequest:
    with deps().uow(write=False) as uow:
        found = uow.approvals.get(current_caller(), approval_id)
    if found is None:
        abort(404)
    if not current_user.can(found.kind.permission):
        abort(403)
    return found


def _back():
    """Where a decision returns to: the page it was made on (a local path), or the list."""
    return redirect(local_path(request.form.get("back")) or url_for("dashboard.approvals_list"), 303)


@dashboard.post(f"/approvals/<{ROW_ID}:approval_id>/approve")
@requires("approve")
def approve_request(approval_id: int):
    """Approve another user's request: its refund or payout goes to the provider now, once."""
    found = _request_or_404(approval_id)
    try:
        check_limit(_own_limits(found.currency), found.kind, found.amount)
        made = approvals.approve(deps(), current_caller(), approval_id)
    except PaymentError as error:  # refused: already decided, above a limit, the payout's checks
        flash(_message(error), "error")
        return _back()
    if found.kind.is_batch:
        flash(f"Approved: batch {found.body.get('batch')} is running; a worker makes its "
              f"{found.body.get('rows')} rows.", "success")
        return _back()
    later = " (the provider confirms it shortly)" if made.status is Status.PENDING else ""
    flash(f"Approved: {found.kind.value} {made.tx_no} of {money(made.amount, made.currency)} is "
          f"{made.status.value}{later}.", "error" if made.status in DECLINE_STATUSES else "success")
    return _back()


@dashboard.post(f"/approvals/<{ROW_ID}:approval_id>/reject")
@requires("approve")
def reject_request(approval_id: int):
    """Reject (or, for its requester, withdraw) a request; a refund's held amount is free again."""
    _request_or_404(approval_id)
    note = (request.form.get("note") or "").strip()[:500] or None
    if note is not None and not storable_text(note):
        note = None  # text no database can store is no note
    try:
        rejected = approvals.reject(deps(), current_caller(), approval_id, note)
    except ApprovalRefused as error:
        flash(str(error), "error")
        return _back()
    flash(f"Rejected: the {rejected.kind.value} of {money(rejected.amount, rejected.currency)} will not "
          "be made.", "success")
    return _back()


def _own_limits(currency: str) -> UserLimits:
    with deps().uow(write=False) as uow:
        return approval_store.limits_of_user(uow.conn, current_caller(), current_user.id, currency)


def _message(error: Exception) -> str:
    if isinstance(error, FieldErrors):
        return " ".join(message for messages in error.errors.values() for message in messages)
    return str(error)


# -- settings (admin) ---------------------------------------------------------------------------

def _currencies() -> list[str]:
    """The currencies of the merchant's methods in this mode: what thresholds and limits are for."""
    with deps().uow(write=False) as uow:
        methods = uow.methods.list(current_caller())
    return sorted({currency for method in methods for currency in method.currencies})


def _setting_amount(name: str, currency: str, label: str) -> Decimal | None:
    """An amount typed in a settings form: blank is None, otherwise a positive amount of the currency."""
    text = blank_to_none(request.form.get(name))
    if text is None:
        return None
    amount = form_amount(text)
    if not isinstance(amount, Decimal) or amount <= 0 or not fits_currency(amount, currency) or \
            amount.adjusted() >= MAX_SETTING_DIGITS:
        raise ValueError(f"{label} must be an amount above 0 in {currency}, like "
                         f"{format_amount(Decimal(100), currency)}")
    return amount


def _settings_page(status: int = 200, errors: dict | None = None):
    caller = current_caller()
    with deps().uow(write=False) as uow:
        thresholds = approval_store.thresholds_of(uow.conn, caller)
        limits = approval_store.limits_of_merchant(uow.conn, caller)
        members = staff.users_of(uow.conn, caller)
    return render_template("dashboard/approval_settings.html", thresholds=thresholds, limits=limits,
                           members=members, currencies=_currencies(), errors=errors or {},
                           form=request.form if status != 200 else {}), status


@dashboard.get("/settings/approvals")
@requires("manage_settings")
def approval_settings():
    """Thresholds above which a dashboard refund or payout needs a second user; users' limits."""
    return _settings_page()


@dashboard.post("/settings/approvals/thresholds")
@requires("manage_settings")
def set_approval_threshold():
    """Set or (blank) remove the approval threshold of a currency; audited."""
    currency = request.form.get("currency", "")
    if currency not in _currencies():
        return _settings_page(422, {"threshold": "Choose one of your currencies"})
    try:
        amount = _setting_amount("amount", currency, "The threshold")
    except ValueError as error:
        return _settings_page(422, {"threshold": str(error)})
    caller = current_caller()
    with deps().uow() as uow:
        previous = approval_store.set_threshold(uow.conn, caller, currency, amount, deps().clock())
        uow.audit(caller, "approval.threshold", currency, amount, currency if amount else None,
                  {"from": _text(previous, currency, "none"), "to": _text(amount, currency, "none")},
                  both_modes=True)
        uow.commit()
    flash(f"Dashboard refunds and payouts above {money(amount, currency)} now need a second user's approval."
          if amount is not None else f"{currency} refunds and payouts no longer need approval.", "success")
    return redirect(url_for("dashboard.approval_settings", _anchor="thresholds"), 303)


@dashboard.post("/settings/approvals/limits")
@requires("manage_settings")
def set_user_limits():
    """Set (blank: no limit) a user's largest refund and payout in a currency; audited."""
    caller = current_caller()
    currency = request.form.get("currency", "")
    user_id = whole_number(request.form.get("user_id", ""), 18)
    if user_id is None:
        abort(404)
    with deps().uow(write=False) as uow:
        member = staff.user_of(uow.conn, caller, user_id)
    if member is None:
        abort(404)
    if currency not in _currencies():
        return _settings_page(422, {"limits": "Choose one of your currencies"})
    try:
        limits = UserLimits(currency, _setting_amount("max_refund", currency, "The refund limit"),
                            _setting_amount("max_payout", currency, "The payout limit"))
    except ValueError as error:
        return _settings_page(422, {"limits": str(error)})
    with deps().uow() as uow:
        approval_store.set_limits(uow.conn, caller, user_id, limits, deps().clock())
        uow.audit(caller, "user.limits", member.email, None, None,
                  {"currency": currency, "maxRefund": _text(limits.max_refund, currency),
                   "maxPayout": _text(limits.max_payout, currency)}, both_modes=True)
        uow.commit()
    flash(f"{member.email}'s {currency} limits: refunds {_text(limits.max_refund, currency)}, "
          f"payouts {_text(limits.max_payout, currency)}.", "success")
    return redirect(url_for("dashboard.approval_settings", _anchor="limits"), 303)


def _text(amount: Decimal | None, currency: str, unset: str = "no limit") -> str:
    return str(money(amount, currency)) if amount is not None else unset
