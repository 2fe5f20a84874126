"""The simulator's hosted checkout page: the customer approves or declines a Pending payment."""
from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, request

from app.payments import services
from app.payments.model import (
    COMMON_DECLINE_REASONS,
    MAX_TX_NO_LENGTH,
    Caller,
    InvalidMove,
    Mode,
    Status,
)
from app.payments.money import format_amount
from app.store.merchants import merchant_by_id
from app.util import could_be_key
from app.web import deps as app_deps

checkout = Blueprint("checkout", __name__, url_prefix="/checkout")


def _find(tx_no: str):
    deps = app_deps()
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        abort(404)
    with deps.uow(write=False) as uow:
        tx = uow.transactions.find_for_checkout(tx_no)
        merchant = merchant_by_id(uow.conn, tx.merchant_id) if tx else None
    if tx is None:
        abort(404)
    return deps, tx, merchant


@checkout.get("/<tx_no>")
def page(tx_no: str):
    """Show what the customer is paying, with approve and decline in the simulator."""
    _deps, tx, merchant = _find(tx_no)
    return render_template(
        "checkout/page.html",
        tx=tx,
        merchant_name=merchant.name,
        amount=format_amount(tx.amount, tx.currency),
        reasons=COMMON_DECLINE_REASONS,
        sandbox=tx.mode is Mode.SANDBOX,
    )


@checkout.post("/<tx_no>")
def decide(tx_no: str):
    """Approve (Captured) or decline (with a reason), then go to the merchant's redirect URL."""
    deps, tx, _merchant = _find(tx_no)
    approve = request.form.get("decision") == "approve"
    reason = request.form.get("declineReason") or "Payment Cancelled By User"
    if reason not in COMMON_DECLINE_REASONS:
        abort(400)
    caller = Caller(tx.merchant_id, tx.mode, "checkout", request.remote_addr)
    status = Status.CAPTURED if approve else Status.DECLINED
    try:
        tx = services.move_by_provider(deps, caller, tx.tx_no, status,
                                       None if approve else reason, source="checkout")
    except InvalidMove:
        pass  # already decided (expired, or a second click): show where it stands
    target = tx.success_url if tx.status is Status.CAPTURED else tx.failure_url
    if target:
        return redirect(target, 303)
    return render_template("checkout/done.html", tx=tx, amount=format_amount(tx.amount, tx.currency))
