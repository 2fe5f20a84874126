"""Developers (admin): the API request log of the mode, searched by path, status, token and
txNo, and one request with its masked bodies."""
from __future__ import annotations

from flask import abort, render_template, request

from app.auth.users import current_caller, requires
from app.payments.formats import storable_text
from app.store import credentials
from app.store import request_log as log_rows
from app.util import could_be_key, whole_number
from app.web import deps

from . import dashboard
from .settings import ROW_ID


def _filter() -> tuple[log_rows.LogFilter, dict]:
    """The search of the URL, and what it repeats in the form; what names nothing is ignored."""
    args = {name: request.args.get(name, "")[:200] for name in ("path", "status", "token", "tx", "before")}
    args = {name: value if storable_text(value) else "" for name, value in args.items()}
    status = whole_number(args["status"], 3)
    token = whole_number(args["token"], 19)
    before = whole_number(args["before"], 19)
    found = log_rows.LogFilter(
        path=args["path"].strip(),
        status=status if status is not None and 100 <= status <= 599 else None,
        token_id=token if token is not None and token < 2**63 else None,
        tx_no=args["tx"].strip() if could_be_key(args["tx"].strip(), 40) else "",
        before_id=before if before is not None and before < 2**63 else None,
    )
    return found, args


@dashboard.get("/developers")
@requires("manage_settings")
def developers():
    """The mode's API requests, newest first, as the filters ask."""
    caller = current_caller()
    found, args = _filter()
    with deps().uow(write=False) as uow:
        rows = log_rows.search(uow.conn, caller, found)
        tokens = credentials.api_tokens_of(uow.conn, caller)
    more = len(rows) == log_rows.MAX_SHOWN
    return render_template("dashboard/developers.html", rows=rows, args=args, tokens=tokens,
                           more=more, next_before=rows[-1].id if more else None)


@dashboard.get(f"/developers/requests/<{ROW_ID}:log_id>")
@requires("manage_settings")
def developer_request(log_id: int):
    """One logged API request with its masked bodies."""
    with deps().uow(write=False) as uow:
        row = log_rows.one(uow.conn, current_caller(), log_id)
        touched = log_rows.transactions_of(row) if row else []
    if row is None:
        abort(404)
    return render_template("dashboard/developer_request.html", row=row, touched=touched)
