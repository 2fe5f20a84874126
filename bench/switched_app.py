"""Paydesk whose request log is turned on and off while it runs: `python -m bench.request_log
--one-server` serves every variant from one server, so the variants share its processes.

Three servers started side by side each have a speed of their own (memory layout, hash seeds),
which falls on every round of their variant: in a run of 2026-12-05 a server that noted each
request and dropped it, work of about 6 us, took 0.889 of the log off's creates a second (that
run's order also put the log off first or last in every round, bench.run.round_orders). One
server switched between rounds removes that difference; the run's A/A variant ("off again")
measures what is left.

REQUEST_LOG_SWITCH names a file: "0" in it turns the log off, anything else on. Each worker
reads it every SWITCH_POLL seconds on a thread of its own; the request's path is Paydesk's, unchanged.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from flask import Flask

from app import create_app as create_paydesk
from app.api.request_log import writer

SWITCH_POLL = 0.1


def create_app() -> Flask:
    app = create_paydesk()
    log_writer = writer(app)
    switch = Path(os.environ["REQUEST_LOG_SWITCH"])

    def follow() -> None:
        while True:
            try:
                log_writer.enabled = switch.read_text().strip() != "0"
            except OSError:  # being rewritten: read again at the next poll
                pass
            time.sleep(SWITCH_POLL)

    threading.Thread(target=follow, name="request-log-switch", daemon=True).start()
    return app
