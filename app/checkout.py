"""The checkout URL of every payment: the simulator's own page, or a redirect to the provider's.

A payment served by a real provider (Paystack, Stripe) is paid on the provider's hosted page:
its checkout URL sends the customer there (after a "connecting" page that reloads itself while
a worker opens the payment at the provider), and the provider sends the customer back to
/checkout/<txNo>/return, where a worker asks the provider where the payment stands while the
page reloads itself, and then sends the customer on to the merchant's SuccessUrl, PendingUrl or
FailureUrl. No request of this blueprint calls a provider. The simulator's approve
and decline buttons never move a payment a real provider serves, nor a live one outside a demo
(DEMO_MODE): the simulator moves no real money, so a payer's click must not capture it.
"""
from __future__ import annotations

from flask import Blueprint, Response, abort, make_response, redirect, render_template, request, url_for

from app.headers import content_security_policy
from app.payments import settlement
from app.payments.model import (
    COMMON_DECLINE_REASONS,
    MAX_TX_NO_LENGTH,
    Caller,
    InvalidMove,
    Mode,
    SimulatedLiveMoney,
    Status,
    simulator_may_decide,
)
from app.payments.money import format_amount
from app.store.merchants import merchant_by_id
from app.util import could_be_key
from app.web import deps as app_deps

checkout = Blueprint("checkout", __name__, url_prefix="/checkout")

# The payer's decision is answered with a redirect to the merchant's SuccessUrl or FailureUrl, and
# on through whatever redirects the merchant's site makes: browsers hold that whole chain to the
# page's form-action, so its forms may end anywhere on the web (never at javascript: or data:).
DECISION_PAGE_POLICY = content_security_policy(form_action="'self' https: http:")
# How often a waiting page (connecting to the provider, confirming with it) reloads itself.
RELOAD_SECONDS = 1
# A decline without a chosen reason, and the one the page offers first: the payer went back. Not the
# list's first (Transaction Expired), which is the expiry job's word, not a payer's or a bank's.
DEFAULT_DECLINE_REASON = "Payment Cancelled By User"


def _find(tx_no: str):
    """The payment, its merchant, and whether a real provider serves it (404 if there is none)."""
    deps = app_deps()
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        abort(404)
    with deps.uow(write=False) as uow:
        tx = uow.transactions.find_for_checkout(tx_no)
        merchant = merchant_by_id(uow.conn, tx.merchant_id) if tx else None
        method = uow.methods.of_transaction(tx) if tx else None
    if tx is None:
        abort(404)
    at_provider = method is not None and method.provider_account_id is not None
    if tx.status is Status.PENDING and not _decidable(deps, tx, method, at_provider):
        abort(Response(render_template(
            "checkout/done.html", tx=tx, amount=format_amount(tx.amount, tx.currency),
            message="This payment can no longer be completed. Please ask the merchant for a new one."),
            410))
    return deps, tx, merchant, at_provider


def _decidable(deps, tx, method, at_provider: bool) -> bool:
    """Whether anyone can still decide the Pending payment: its provider while its account is
    connected (a disconnected one would never tell Paydesk of a payment made there), or the
    simulator in sandbox and in a demo (in live mode it moves no real money, so the payer must
    not decide it here)."""
    if at_provider:
        return method.active
    return simulator_may_decide(tx.mode, method, demo=deps.demo_mode)


@checkout.get("/<tx_no>")
def page(tx_no: str):
    """Show what the customer is paying: the provider's page, or approve and decline in the simulator."""
    _deps, tx, merchant, at_provider = _find(tx_no)
    if at_provider:
        if tx.status is not Status.PENDING:
            return _done(tx)
        if tx.provider_redirect_url:
            return redirect(tx.provider_redirect_url, 303)
        # A worker is opening it at the provider: this page reloads itself until it can send on.
        return _waiting(tx, "Connecting you to the payment page…", url_for("checkout.page", tx_no=tx.tx_no))
    response = make_response(render_template(
        "checkout/page.html",
        tx=tx,
        merchant_name=merchant.name,
        amount=format_amount(tx.amount, tx.currency),
        reasons=COMMON_DECLINE_REASONS,
        default_reason=DEFAULT_DECLINE_REASON,
        sandbox=tx.mode is Mode.SANDBOX,
    ))
    response.headers["Content-Security-Policy"] = DECISION_PAGE_POLICY
    return response


@checkout.post("/<tx_no>")
def decide(tx_no: str):
    """Approve (Captured) or decline (with a reason), then go to the merchant's redirect URL."""
    deps, tx, _merchant, at_provider = _find(tx_no)
    if at_provider:
        abort(404)  # paid at the provider: nothing here can move it
    approve = request.form.get("decision") == "approve"
    reason = request.form.get("declineReason") or DEFAULT_DECLINE_REASON
    if reason not in COMMON_DECLINE_REASONS:
        abort(400)
    caller = Caller(tx.merchant_id, tx.mode, "checkout", request.remote_addr)
    status = Status.CAPTURED if approve else Status.DECLINED
    try:
        tx = settlement.move_by_provider(deps, caller, tx.tx_no, status,
                                         None if approve else reason, source="checkout")
    except (InvalidMove, SimulatedLiveMoney):
        pass  # already decided (expired, a second click, made in a demo): show where it stands
    return _send_on(tx)


@checkout.get("/<tx_no>/return")
def back_from_provider(tx_no: str):
    """The customer is back from the provider's page: a worker asks it where the payment stands
    while this page reloads itself; once it has answered, the customer is sent on.

    `asked` (in the reloads) is the payment's updated_at when the question was handed over: a
    later one means the provider answered, even if the payment is still Pending there.
    """
    deps, tx, _merchant, at_provider = _find(tx_no)
    if not at_provider:
        abort(404)
    if tx.status is not Status.PENDING:
        return _send_on(tx)
    asked = request.args.get("asked", type=float)
    if asked is None:
        settlement.ask_provider_now(deps, tx)
        asked = tx.updated_at.timestamp()
    elif tx.updated_at.timestamp() > asked:
        return _send_on(tx)  # answered: still Pending at the provider
    return _waiting(tx, "Confirming your payment with the provider…",
                    url_for("checkout.back_from_provider", tx_no=tx.tx_no, asked=repr(asked)))


def _send_on(tx):
    """To the merchant's URL for where the payment stands, or Paydesk's own page without one."""
    if tx.status is Status.CAPTURED or tx.status is Status.AUTHORIZED:
        target = tx.success_url
    elif tx.status is Status.PENDING:
        target = tx.pending_url
    else:
        target = tx.failure_url
    if target:
        return redirect(target, 303)
    return _done(tx)


def _waiting(tx, message: str, reload_url: str):
    """A short page that reloads itself (every RELOAD_SECONDS) while a worker talks to the provider."""
    return render_template("checkout/done.html", tx=tx, amount=format_amount(tx.amount, tx.currency),
                           message=message, reload_url=reload_url, reload_seconds=RELOAD_SECONDS)


def _done(tx, status: int = 200):
    return render_template("checkout/done.html", tx=tx,
                           amount=format_amount(tx.amount, tx.currency)), status
