"""The API request log: every authenticated /api/v1 request, with its token's label, method, path,
status, duration, request id, Idempotency-Key, the transactions it touched and its bodies masked
(app.api.masking), kept REQUEST_LOG_RETENTION_DAYS (the worker prunes it).

A request's thread only notes what it sent and got (bytes and a few values) in this process's
queue; a writer thread masks the bodies and writes the queue every REQUEST_LOG_FLUSH_MS
milliseconds (or once REQUEST_LOG_BATCH rows wait) in one unit of work: a create or refund pays
no statement and no masking for its log row. REQUEST_LOG_FLUSH_MS=0 writes each row on the
request's thread instead, in a unit of its own (docs/benchmarks.md measures both). A process
that dies loses at most its unwritten queue; a database that is away loses the batch (logged); a
database that crashes may lose the batches it committed in its last moments (the writer's commit
does not wait for the disk's flush).
"""
from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque

from flask import Flask, Request, Response, current_app, g, request
from werkzeug.exceptions import HTTPException

from app.errors import request_id
from app.store import request_log as log_rows
from app.util import utcnow
from app.web import deps

from .masking import kept_tx_no, mask_path, mask_query, mask_text, masked_body, storable

log = logging.getLogger(__name__)

_WRITER_KEY = "paydesk.request_log"
# Rows waiting past this many are dropped (and counted in the log): the log never holds up
# requests, nor grows without end while the database is away.
MAX_WAITING = 20_000
# The response fields that name a transaction the request made or read.
_TX_FIELDS = ("transactionId", "TransactionId", "refundTxNo", "originalTxNo", "txNo")
_JSON_TYPES = ("application/json",)
# The most of a query string the log reads to mask (the row keeps a path and query of 500).
MAX_QUERY_READ = 2000


# Where started() leaves the request's start in its WSGI environ.
_STARTED = "paydesk.request_log.started"


def started() -> None:
    """Note when the request began (its duration is measured from here)."""
    request.environ[_STARTED] = time.perf_counter()


def note(response: Response) -> Response:
    """Queue the request for the log when a token's caller made it (after_request).

    Each read of Flask's `request`, `g` or `current_app` goes through a context-local proxy
    (1 to 2 us each, measured); the request object is taken once, from the WSGI environ where
    werkzeug keeps it (`werkzeug.request`), and read directly."""
    caller = g.get("caller")
    if caller is None:
        return response
    log_writer = writer(current_app)
    if not log_writer.enabled:
        return response
    environ = request.environ
    asked = environ["werkzeug.request"]
    began = environ.get(_STARTED) or time.perf_counter()
    grant = caller.grant
    noted = {
        "merchant_id": caller.merchant_id,
        "mode": caller.mode.value,
        "token_id": grant.token_id if grant is not None else None,
        "token_label": (grant.label if grant is not None else caller.actor)[:100],
        "method": asked.method[:10],
        "path": asked.path[:500],
        "query": environ.get("QUERY_STRING") or None,
        "status": response.status_code,
        "duration_ms": round((time.perf_counter() - began) * 1000),
        "request_id": request_id(asked),
        "idempotency_key": (asked.headers.get("Idempotency-Key") or None),
        "at": utcnow(),
        "path_tx_no": (asked.view_args or {}).get("tx_no"),
        "request_raw": _request_bytes(asked),  # (read before: the views read the bodies they take)
        "response_raw": None if response.is_streamed or response.direct_passthrough else response.get_data(),
    }
    log_writer.put(noted)
    return response


def _request_bytes(asked: Request) -> bytes | None:
    """The body as sent, for JSON and bodyless requests; a note of the type and size for others
    (a dispute file's upload is not kept). A request that declares no body (no Content-Length,
    not chunked: RFC 9112, 6.3), most GETs, has none to read: werkzeug's stream is not built for
    it (measured: a third of noting a status read)."""
    if not asked.content_length and "HTTP_TRANSFER_ENCODING" not in asked.environ:
        return None
    if asked.mimetype in _JSON_TYPES or not asked.mimetype:
        try:
            return asked.get_data(cache=True) or None
        except HTTPException:  # too large to read: refused with 413 already
            return b"[body too large, not kept]"
    return f"[{asked.mimetype[:60]} body, {asked.content_length or 0} bytes, not kept]".encode()


def shaped(noted: dict) -> dict:
    """A noted request as its row: bodies masked, the transactions it touched found."""
    row = {name: noted[name] for name in ("merchant_id", "mode", "token_id", "token_label", "method",
                                            "status", "duration_ms", "request_id", "at")}
    query = noted["query"]
    shown_query = "?" + mask_query(query[:MAX_QUERY_READ]) if query else ""
    row["path"] = (mask_path(noted["path"]) + shown_query)[:500]
    key = noted["idempotency_key"]
    row["idempotency_key"] = storable(mask_text(key)[:255]) if key else None
    row["request_body"], sent = masked_body(noted["request_raw"])
    row["response_body"], answered = masked_body(noted["response_raw"])
    # An API request touches at most two (a refund: its payment and itself); kept in txNo order.
    row["tx_no"], row["other_tx_no"] = (touched_tx_nos(noted["path_tx_no"], sent, answered) + [None, None])[:2]
    return row


def touched_tx_nos(path_tx_no: str | None, *bodies) -> list[str]:
    """The transaction numbers in the path, in the request's txNo and in the answer's fields
    (each body as masked_body read it)."""
    found = {path_tx_no} if kept_tx_no(path_tx_no) else set()
    for body in bodies:
        if body.__class__ is dict:
            for name in _TX_FIELDS:
                tx_no = body.get(name)
                if tx_no is not None and kept_tx_no(tx_no):
                    found.add(tx_no)
    return sorted(found)


class RequestLogWriter:
    """This process's queue of noted requests and the thread that writes it."""

    def __init__(self, uow_factory, flush_seconds: float, batch: int, enabled: bool = True):
        self.uow_factory = uow_factory
        self.enabled = enabled
        self.flush_seconds = flush_seconds
        self.batch = batch
        self._waiting: deque = deque()
        self._wake = threading.Event()
        self._lock = threading.Lock()  # one write of the queue at a time
        self._thread: threading.Thread | None = None
        self.dropped = 0

    def put(self, noted: dict) -> None:
        """Queue a noted request (written at once when the writer has no thread: FLUSH_MS 0)."""
        if self.flush_seconds <= 0:
            self._write([noted])
            return
        if len(self._waiting) >= MAX_WAITING:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("request log: %d rows dropped, the writer is behind", self.dropped)
            return
        self._waiting.append(noted)
        if self._thread is None or not self._thread.is_alive():
            self._start()
        if len(self._waiting) >= self.batch:
            self._wake.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="request-log", daemon=True)
            self._thread.start()
            atexit.register(self.flush)

    def _run(self) -> None:
        while True:
            self._wake.wait(self.flush_seconds)
            self._wake.clear()
            self.flush()

    def flush(self) -> None:
        """Write everything queued now (the writer thread; tests; the process's exit), in batches
        of at most `batch`. What is queued meanwhile waits for the next flush: under load a flush
        every REQUEST_LOG_FLUSH_MS writes the requests of that while together, where draining the
        queue until empty wrote them a few at a time, each batch paying its own statements
        (measured: 9 rows a batch, 57 batches a second per process)."""
        with self._lock:
            waiting = len(self._waiting)
            while waiting > 0:
                taken = [self._waiting.popleft() for _ in range(min(self.batch, waiting))]
                waiting -= len(taken)
                self._write(taken)

    def _write(self, noted: list[dict]) -> None:
        try:
            rows = [shaped(one) for one in noted]
            with self.uow_factory() as uow:
                # A database crash may lose the last batch, as a process's crash loses its queue:
                # the commit need not wait for the WAL's flush, which the creates and refunds
                # beside it wait on. Told now, as the COPY goes to the driver past SQLAlchemy.
                uow.relax_durability()
                uow.before_statement()
                log_rows.write_batch(uow.conn, rows)
                uow.commit()
        except Exception:  # noqa: BLE001 - the database away: the log loses this batch, not the requests
            log.exception("request log: %d rows not written", len(noted))


def writer(app: Flask) -> RequestLogWriter:
    """The app's request log writer in this process, made on first use."""
    found = app.extensions.get(_WRITER_KEY)
    if found is None:
        found = app.extensions.setdefault(_WRITER_KEY, RequestLogWriter(
            deps(app).uow, app.config["REQUEST_LOG_FLUSH_MS"] / 1000, app.config["REQUEST_LOG_BATCH"],
            app.config["REQUEST_LOG_ENABLED"]))
    return found


def flush_request_log(app: Flask) -> None:
    """Write the app's queued requests now (tests, and before a page reads the log in them)."""
    found = app.extensions.get(_WRITER_KEY)
    if found is not None:
        found.flush()
