"""The security headers of every response, set in this one place for every page and API answer."""
from __future__ import annotations

from flask import Flask, Response

# Strict-Transport-Security once cookies are HTTPS-only (SESSION_COOKIE_SECURE): a year, subdomains too.
STRICT_TRANSPORT_SECURITY = "max-age=31536000; includeSubDomains"


def content_security_policy(*, form_action: str = "'self'") -> str:
    """The policy of every HTML page: everything it loads comes from this site, htmx runs with eval
    and inline styles off, and no other site may frame it. `form_action`: where its forms may
    send the browser, redirects after the POST included (browsers hold the whole chain to it)."""
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'; "
            "object-src 'none'")


CONTENT_SECURITY_POLICY = content_security_policy()


def init_headers(app: Flask) -> None:
    """Set the security headers on every response: nosniff on all, the page policy on HTML
    (a view may set its own, built by content_security_policy), HSTS with secure cookies."""
    strict_transport = app.config["SESSION_COOKIE_SECURE"]

    @app.after_request
    def security_headers(response: Response) -> Response:
        headers = response.headers
        headers.setdefault("X-Content-Type-Options", "nosniff")
        if response.mimetype == "text/html":
            headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            headers.setdefault("Referrer-Policy", "same-origin")
        if strict_transport:
            headers.setdefault("Strict-Transport-Security", STRICT_TRANSPORT_SECURITY)
        return response
