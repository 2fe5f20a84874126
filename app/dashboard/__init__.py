"""The merchant dashboard: transactions, refunds, payouts, webhook logs, settings, audit log."""
from __future__ import annotations

from flask import Flask, render_template, request
from flask_login import current_user
from flask_wtf.csrf import CSRFError

from app.auth.users import current_mode
from app.payments.schemas import max_length

from . import formatting
from .modes import InOtherMode, ModeBlueprint, switch_links
from .navigation import MAIN_NAV, WEBHOOK_TABS, nav_items, with_counts

# Every route of it answers at /path (live) and /test/path (sandbox): see modes.py.
dashboard = ModeBlueprint("dashboard", __name__)

def init_dashboard(app: Flask) -> None:
    """Register the dashboard blueprint, its template filters and its response headers."""
    formatting.register(app)
    app.add_template_global(max_length, "max_length")
    app.register_blueprint(dashboard)


@dashboard.after_app_request
def private_pages(response):
    """Dashboard and sign-in answers (pages, fragments, exports) are kept by no shared cache; their
    security headers are every page's (app/headers.py)."""
    if request.blueprint in ("dashboard", "auth"):
        response.headers.setdefault("Cache-Control", "private, no-cache")
    return response


@dashboard.app_context_processor
def mode_context() -> dict:
    """The page's mode, for the switch (its links) and the sandbox banner of every page."""
    if request.blueprint in ("dashboard", "auth") and current_user.is_authenticated:
        return {"mode": current_mode().value, "mode_links": switch_links()}
    return {"mode": None, "mode_links": []}


@dashboard.app_context_processor
def navigation_context() -> dict:
    """The main navigation and the webhook log tabs, with the current page's item marked."""
    if not current_user.is_authenticated:
        return {"main_nav": list, "webhook_tabs": []}
    return {"main_nav": main_nav, "webhook_tabs": nav_items(WEBHOOK_TABS, request.endpoint)}


def main_nav() -> list:
    """The main navigation of a whole page (base.html calls it, so fragments never count), the
    Approvals item with the requests waiting for an approver, Disputes with those awaiting an
    answer."""
    main = nav_items(MAIN_NAV, request.endpoint)
    if request.blueprint != "dashboard":
        return main
    if current_user.can("approve"):
        main = with_counts(main, "dashboard.approvals_list", approvals.waiting_for_me(), "waiting for you",
                           current_mode())
    if current_user.can("answer_disputes"):
        main = with_counts(main, "dashboard.disputes", disputes.needing_response(), "needing a response",
                           current_mode())
    return main


@dashboard.errorhandler(403)
def forbidden(_error):
    """The role does not allow this action."""
    return render_template("dashboard/error.html", title="Not allowed",
                           message="Your role does not allow this action."), 403


@dashboard.errorhandler(404)
def not_found(error):
    """Unknown, or belonging to another merchant: the same answer either way. The merchant's own
    transaction of the other mode is named, with the link to it there."""
    if isinstance(error, InOtherMode):
        return render_template("dashboard/error.html", title="Not found",
                               message=f"There is no such transaction in {current_mode().value} mode.",
                               elsewhere=error), 404
    return render_template("dashboard/error.html", title="Not found",
                           message="There is nothing here in this mode. Check the number, or "
                                   "switch between live and sandbox."), 404


@dashboard.errorhandler(CSRFError)
def csrf_failed(_error):
    """A form or htmx request without a valid CSRF token is refused."""
    return render_template("dashboard/error.html", title="Form expired",
                           message="This form has expired or did not come from Paydesk. "
                                   "Reload the page and try again."), 400


from . import (  # noqa: E402,F401
    account, accounts_admin, approvals, audit, batches, cancel, customers, developers, disputes, notes,
    overview, payouts, providers, recipients, reconciliation, refunds, search, settings, transactions,
    webhook_endpoints, webhooks, wrapping,
)
