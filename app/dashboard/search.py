"""The top bar's search on every page: the first transactions the list's search finds, as options."""
from __future__ import annotations

from flask import make_response, redirect, render_template, request, url_for
from flask_login import login_required

from app.auth.users import current_caller
from app.store import listing
from app.web import deps

from . import dashboard
from .htmx import wants_fragment
from .transactions import read_filter

# Enough to pick from with the arrow keys; the last option opens the whole list.
QUICK_RESULTS = 8


@dashboard.get("/search")
@login_required
def quick_search():
    """The transactions list's search (the same filter, `q`), its first rows as the top bar's
    options; without htmx, the transactions list with the search."""
    if not wants_fragment():
        return redirect(url_for("dashboard.transactions", **({"q": request.args["q"]}
                                                            if request.args.get("q") else {})))
    flt, problems = read_filter({"q": request.args.get("q", "")})
    rows = []
    if flt.search.strip() and not problems:
        with deps().uow(write=False) as uow:
            rows = listing.list_transactions(uow.conn, current_caller(), flt, limit=QUICK_RESULTS).rows
    response = make_response(render_template("dashboard/_quick_results.html", rows=rows,
                                              term=flt.search.strip(), problems=problems))
    response.vary.add("HX-Request")
    return response
