"""The merchant dashboard: transactions, refunds, payouts, webhook logs, settings, audit log."""
from __future__ import annotations

from flask import Blueprint, Flask, render_template, request
from flask_login import current_user
from flask_wtf.csrf import CSRFError

from app.auth.users import current_mode

from . import formatting
from .navigation import MAIN_NAV, WEBHOOK_TABS, nav_items

dashboard = Blueprint("dashboard", __name__)

# Everything the pages load comes from this site; htmx runs with eval and inline styles off.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)


def init_dashboard(app: Flask) -> None:
    """Register the dashboard blueprint, its template filters and its response headers."""
    formatting.register(app)
    app.register_blueprint(dashboard)


@dashboard.after_app_request
def security_headers(response):
    """Dashboard and sign-in pages: strict CSP, no framing, no sniffing, no caching by others."""
    if request.blueprint in ("dashboard", "auth"):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("Cache-Control", "private, no-cache")
    return response


@dashboard.app_context_processor
def mode_context() -> dict:
    """The signed-in user's mode, for the switch and the sandbox banner of every page."""
    if request.blueprint in ("dashboard", "auth") and current_user.is_authenticated:
        return {"mode": current_mode().value}
    return {"mode": None}


@dashboard.app_context_processor
def navigation_context() -> dict:
    """The main navigation and the webhook log tabs, with the current page's item marked."""
    if not current_user.is_authenticated:
        return {"main_nav": [], "webhook_tabs": []}
    return {"main_nav": nav_items(MAIN_NAV, request.endpoint),
            "webhook_tabs": nav_items(WEBHOOK_TABS, request.endpoint)}


@dashboard.errorhandler(403)
def forbidden(_error):
    """The role does not allow this action."""
    return render_template("dashboard/error.html", title="Not allowed",
                           message="Your role does not allow this action."), 403


@dashboard.errorhandler(404)
def not_found(_error):
    """Unknown, or belonging to another merchant or mode: the same answer either way."""
    return render_template("dashboard/error.html", title="Not found",
                           message="There is nothing here in this mode. Check the number, or "
                                   "switch between live and sandbox."), 404


@dashboard.errorhandler(CSRFError)
def csrf_failed(_error):
    """A form or htmx request without a valid CSRF token is refused."""
    return render_template("dashboard/error.html", title="Form expired",
                           message="This form has expired or did not come from Paydesk. "
                                   "Reload the page and try again."), 400


from . import audit, cancel, payouts, providers, refunds, settings, transactions, webhooks  # noqa: E402,F401
from . import account, accounts_admin  # noqa: E402,F401
