"""The request log as a test reads it: the app's queue written first, then searched."""
from __future__ import annotations

from app.api.request_log import flush_request_log
from app.payments.model import Caller, Mode
from app.store import request_log as log_rows


def logged(app, merchant, mode=Mode.SANDBOX, **filters) -> list:
    """The merchant's logged requests in the mode matching the filters (LogFilter's), newest first."""
    flush_request_log(app)
    with app.extensions["paydesk"].uow(write=False) as uow:
        return log_rows.search(uow.conn, Caller(merchant.merchant_id, mode, "test"),
                               log_rows.LogFilter(**filters))
