"""The two answers of a view: the full page, or for htmx the fragment that page includes."""
from __future__ import annotations

from flask import make_response, redirect, render_template, request


def wants_fragment() -> bool:
    """An htmx swap asks for the fragment; history restores and ordinary loads get the page."""
    return request.headers.get("HX-Request") == "true" and \
        request.headers.get("HX-History-Restore-Request") != "true"


def page_or_fragment(page_template: str, fragment_template: str, status: int = 200, **context):
    """Render the page or its fragment with the same context; caches keep the two apart."""
    template = fragment_template if wants_fragment() else page_template
    response = make_response(render_template(template, **context), status)
    response.vary.add("HX-Request")
    return response


def load_page(url: str):
    """Go to the page at url: htmx loads it whole (HX-Redirect), a form without JavaScript gets a 303."""
    if wants_fragment():
        response = make_response("", 204)
        response.headers["HX-Redirect"] = url
        return response
    return redirect(url, 303)
