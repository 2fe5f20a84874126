"""The audit log: every money action and credential change, with who, what, how much, when, where from."""
from __future__ import annotations

import json

from flask import current_app, render_template, request
from flask_login import login_required

from app.auth.users import current_caller
from app.store.audit import PAGE_SIZE, audit_entries
from app.util import whole_number

from . import dashboard


@dashboard.get("/audit")
@login_required
def audit():
    """Newest first, a page at a time by id (keyset)."""
    older_than = whole_number(request.args.get("before", ""), 18)
    with current_app.extensions["paydesk"].uow(write=False) as uow:
        entries = audit_entries(uow.conn, current_caller(), older_than_id=older_than,
                                limit=PAGE_SIZE + 1)
    more = len(entries) > PAGE_SIZE
    entries = entries[:PAGE_SIZE]
    return render_template("dashboard/audit.html", entries=entries, details=[_detail(e) for e in entries],
                           older=entries[-1].id if more else None, paged=older_than is not None)


def _detail(entry) -> list[tuple[str, str]]:
    if not entry.detail:
        return []
    try:
        detail = json.loads(entry.detail)
    except ValueError:
        return [("detail", entry.detail)]
    if not isinstance(detail, dict):
        return [("detail", str(detail))]
    return [(str(k), "" if v is None else str(v)) for k, v in detail.items()]
