"""Notes on a transaction: staff add them on its page (htmx), newest first; each is audited."""
from __future__ import annotations

from flask import abort, flash, redirect, request, url_for

from app.auth.users import current_caller, requires
from app.payments.model import MAX_TX_NO_LENGTH, TransactionNotFound
from app.payments.notes import MAX_NOTE_LENGTH, NoteRefused, add_note
from app.util import could_be_key
from app.web import deps

from . import dashboard
from .htmx import page_or_fragment, wants_fragment
from .transactions import NOTE_PERMISSION, detail_context, notes_panel_state, refund_panel_state

NOTE_ADDED = "Note added."


@dashboard.post("/transactions/<tx_no>/notes")
@requires(NOTE_PERMISSION)
def add_transaction_note(tx_no: str):
    """Add the signed-in user's note; htmx gets the notes panel back, a plain form the page."""
    if not could_be_key(tx_no, MAX_TX_NO_LENGTH):
        abort(404)
    text = request.form.get("body", "")
    try:
        add_note(deps(), current_caller(), tx_no, text)
    except TransactionNotFound:
        abort(404)
    except NoteRefused as refused:
        return _panel(tx_no, 422, text=text[:MAX_NOTE_LENGTH * 2], error=str(refused))
    if not wants_fragment():
        flash(NOTE_ADDED, "success")
        return redirect(url_for("dashboard.transaction", tx_no=tx_no, _anchor="notes"), 303)
    return _panel(tx_no, added=True)


def _panel(tx_no: str, status: int = 200, **state):
    context = {**detail_context(tx_no), "notes_panel": notes_panel_state(**state)}
    return page_or_fragment("dashboard/transaction.html", "dashboard/_notes_update.html", status,
                            panel=refund_panel_state(context), notice=NOTE_ADDED if state.get("added") else "",
                            **context)
