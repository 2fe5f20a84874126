"""Cancelling a Pending or Authorized payment from its page: a confirm step, then the API's own service."""
from __future__ import annotations

from flask import current_app, flash, request, url_for

from app.auth.users import current_caller, requires
from app.payments import cancel
from app.payments.model import CancelRejected, cancel_outstanding, check_cancel
from app.payments.provider import UNREACHABLE, ProviderUnavailable
from app.web import deps

from . import dashboard
from .htmx import load_page, page_or_fragment
from .transactions import (
    CANCEL_PERMISSION,
    cancel_panel_state,
    detail_context,
    refund_panel_state,
)

# The flash of a cancel a worker takes to a provider behind a network (the API answers it 202).
REQUESTED = "Cancellation requested; the provider is being asked"


@dashboard.post("/transactions/<tx_no>/cancel")
@requires(CANCEL_PERMISSION)
def cancel_payment(tx_no: str):
    """Without step=confirm: ask for confirmation. With it: cancel, and show the page again with the
    outcome (Declined; through a provider behind a network, the cancel requested)."""
    context = detail_context(tx_no)
    if request.form.get("step") != "confirm":
        return _review(context)
    try:
        cancelled = cancel.cancel_transaction(deps(), current_caller(), tx_no)
    except CancelRejected as error:
        flash(str(error), "error")
    except ProviderUnavailable as error:
        current_app.logger.warning("cancel of %s: provider unreachable: %s", tx_no, error)
        flash(UNREACHABLE, "error")
    else:
        if cancel_outstanding(cancelled):
            flash(REQUESTED, "success")
        else:
            flash(f"Payment {cancelled.tx_no} is cancelled: {cancelled.status.value}, "
                  f"{cancelled.decline_reason}.", "success")
    return _show_page_again(tx_no)


def _review(context: dict):
    """The confirm step, or the reason the payment cannot be cancelled; nothing is changed."""
    try:
        check_cancel(context["tx"])
    except CancelRejected as error:
        return _panel(context, 422, error=str(error))
    return _panel(context, step="confirm")


def _panel(context: dict, status: int = 200, **state):
    """The cancel panel alone for htmx; the whole transaction page otherwise."""
    context = {**context, "cancel_panel": cancel_panel_state(context["tx"], **state)}
    return page_or_fragment("dashboard/transaction.html", "dashboard/_cancel_panel.html", status,
                            panel=refund_panel_state(context), **context)


def _show_page_again(tx_no: str):
    """The transaction page, read afresh with the flash message on it.

    A cancel, or a refusal after the provider was asked, can change the status, the decline
    reason, the history, the webhooks and the refund panel at once: htmx loads the whole page.
    """
    return load_page(url_for("dashboard.transaction", tx_no=tx_no))
