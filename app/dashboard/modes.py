"""Live or sandbox, read from the page's URL: `/transactions` is live, `/test/transactions` sandbox.

Every dashboard rule is registered twice under one endpoint, so a link copied from one user's
sandbox page opens the same sandbox page for a colleague, and `url_for` builds the URL of the
mode the request is in without being told.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from flask import Blueprint, current_app, g, request, url_for
from werkzeug.exceptions import NotFound

from app.auth.users import current_mode
from app.payments.model import Mode

# The path prefix of each mode's pages (sandbox pages start /test/, as in the big payment dashboards).
PREFIXES = {Mode.LIVE: "", Mode.SANDBOX: "/test"}
MODE_LABELS = {Mode.LIVE: "Live", Mode.SANDBOX: "Sandbox"}


class ModeBlueprint(Blueprint):
    """A blueprint whose every route answers at `/path` (live) and `/test/path` (sandbox), with
    the mode put into `g.mode` before the view runs and into every `url_for` of its endpoints."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.url_value_preprocessor(_mode_from_url)
        self.url_defaults(_mode_into_urls)

    def add_url_rule(self, rule: str, endpoint: str | None = None, view_func=None,
                     provide_automatic_options: bool | None = None, **options) -> None:
        """Register the rule once per mode, the live one first (url_for's choice without a mode)."""
        defaults = options.pop("defaults", None) or {}
        for mode, prefix in PREFIXES.items():
            super().add_url_rule(prefix + rule, endpoint, view_func, provide_automatic_options,
                                 defaults={**defaults, "mode": mode.value}, **options)


def _mode_from_url(_endpoint: str | None, values: dict | None) -> None:
    """The matched rule's mode goes to `g.mode`; views never receive it as an argument."""
    if values is not None and "mode" in values:
        g.mode = Mode(values.pop("mode"))


def _mode_into_urls(_endpoint: str, values: dict) -> None:
    """A dashboard URL built without a mode is one of the mode the request is in."""
    if "mode" not in values and "mode" in g:
        values["mode"] = g.mode.value


def other_mode(mode: Mode) -> Mode:
    """Sandbox for live, live for sandbox."""
    return Mode.SANDBOX if mode is Mode.LIVE else Mode.LIVE


# The characters a carried query string leaves as they are (werkzeug's choice for url_for's).
QUERY_SAFE = "!$'()*,/:;?@"
# Query-string values that say where in one mode's list the page is (keyset cursors naming its
# rows, page numbers): never carried over; the other mode's list opens at its start.
MODE_BOUND_ARGS = frozenset({"older", "newer", "page"})


def switch_url(mode: Mode) -> str:
    """Where the switch to `mode` goes: this page in that mode, with its query string (the
    search, the filters, the Overview's range), when it is a page of its own (a list, a form);
    else the nearest page above it, because what a URL names (a transaction, an account)
    belongs to one mode. A view may name the query that page gets (`keep_search_on_switch`:
    a transaction's page searches the other mode's list for its reference)."""
    rule = request.url_rule
    path = rule.rule.removeprefix(PREFIXES[current_mode()]) if rule is not None else "/"
    pages = _pages_without_arguments()
    query = {name: kept for name, values in request.args.to_dict(flat=False).items()
             if name not in MODE_BOUND_ARGS and (kept := [value for value in values if value])}
    if path not in pages:
        query = dict(g.get("switch_search") or {})
    while path not in pages and path != "/":
        path = path.rsplit("/", 1)[0] or "/"
    page = url_for(pages.get(path, "dashboard.home"), mode=mode.value)
    # Appended, not given to url_for: a query naming "mode" or one of url_for's own words
    # (_external, _scheme, _anchor, _method) would otherwise build the link instead of riding on it.
    return f"{page}?{urlencode(query, doseq=True, safe=QUERY_SAFE)}" if query else page


def keep_search_on_switch(**query: str) -> None:
    """The query string the live/sandbox switch gives the page it lands on when this page has
    no twin in the other mode (a transaction's page: its list, searched for its reference)."""
    g.switch_search = query


def _pages_without_arguments() -> dict[str, str]:
    """Live path -> endpoint of the dashboard's GET pages that need no argument in the path."""
    return {rule.rule: rule.endpoint for rule in current_app.url_map.iter_rules()
            if rule.endpoint.startswith("dashboard.") and "GET" in (rule.methods or ())
            and rule.arguments == {"mode"} and (rule.defaults or {}).get("mode") == Mode.LIVE.value}


@dataclass(frozen=True)
class ModeLink:
    """One link of the live/sandbox switch, as base.html writes it."""

    mode: str
    label: str
    url: str
    current: bool  # the mode the page shows
    keeps_query: bool  # the twin of this page: dashboard.js carries a search typed since over


def switch_links() -> list[ModeLink]:
    """The live/sandbox switch of every page."""
    rule = request.url_rule
    twin = rule is not None and rule.endpoint in _pages_without_arguments().values()
    return [ModeLink(mode.value, MODE_LABELS[mode], switch_url(mode), mode is current_mode(), twin)
            for mode in PREFIXES]


class InOtherMode(NotFound):
    """Not in this mode, but the signed-in user's merchant has it in the other: the 404 page
    offers the link there (only ever for the user's own merchant, so nothing is revealed)."""

    def __init__(self, mode: Mode, url: str):
        super().__init__()
        self.mode = mode
        self.url = url
