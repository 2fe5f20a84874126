"""The Idempotency-Key contract: one effect per key, the first response replayed byte for byte."""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import timedelta

from flask import Response

from app.payments.model import Caller, Transaction
from app.payments.services import Deps, OnCreated
from app.store import idempotency as records
from app.util import dumps
from app.web import json_response


REPLAY_WINDOW = timedelta(hours=24)
# A running record not touched for this long belongs to a request that died
# (app.config["IDEMPOTENCY_ABANDONED_AFTER"] seconds overrides it).
ABANDONED_AFTER = timedelta(seconds=30)
# A duplicate arriving while the first still runs waits this long for its answer.
WAIT_FOR_FIRST = 10.0
MAX_KEY_LENGTH = 255


def request_hash(method: str, path: str, body) -> str:
    """Fingerprint of the request: same key with another fingerprint is a misuse.

    It is taken before validation, so the body may hold lone surrogates ("\\ud800" escapes):
    "surrogatepass" encodes them as bytes no valid text has, keeping distinct bodies distinct.
    """
    canonical = dumps({"method": method, "path": path, "body": body}, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def run_once(deps: Deps, caller: Caller, key: str, fingerprint: str,
             run: Callable[[OnCreated], Response],
             answer_from: Callable[[Transaction], Response],
             abandoned_after: timedelta = ABANDONED_AFTER) -> Response:
    """Run the request once for this key; duplicates get the stored answer.

    `run` performs the request, calling the hook it is given inside the unit of
    work that creates its transaction. `answer_from` rebuilds the answer from
    that transaction when the first request died after committing it.
    """
    deadline = time.monotonic() + WAIT_FOR_FIRST
    while True:
        now = deps.clock()
        with deps.uow() as uow:
            record_id = records.claim(uow.conn, caller.merchant_id, caller.mode.value, key,
                                      fingerprint, now)
            existing = None if record_id else records.find(uow.conn, caller.merchant_id,
                                                           caller.mode.value, key)
            if existing and existing.created_at < now - REPLAY_WINDOW:
                records.release(uow.conn, existing.id)  # expired: the key is free again
                existing, record_id = None, records.claim(
                    uow.conn, caller.merchant_id, caller.mode.value, key, fingerprint, now)
            uow.commit()
        if record_id:
            return _run_claimed(deps, record_id, run)
        if existing is None:
            continue  # released between our insert and read: try again
        if existing.request_hash != fingerprint:
            return json_response({"error": "Idempotency-Key reused with a different request"}, 422)
        if existing.state == "done":
            return _replay(existing)
        if existing.updated_at < now - abandoned_after:
            recovered = _recover(deps, existing, run, answer_from)
            if recovered is not None:
                return recovered
        if time.monotonic() > deadline:
            return json_response(
                {"error": "A request with this Idempotency-Key is still being processed"}, 409)
        time.sleep(0.05)


def _run_claimed(deps: Deps, record_id: int, run: Callable[[OnCreated], Response]) -> Response:
    def link(uow, tx: Transaction) -> None:
        records.link_transaction(uow.conn, record_id, tx.id)

    try:
        response = run(link)
    except Exception:
        with deps.uow() as uow:
            records.release_unless_linked(uow.conn, record_id)
            uow.commit()
        raise
    with deps.uow() as uow:
        if response.status_code >= 500:
            records.release_unless_linked(uow.conn, record_id)
        else:
            records.complete(uow.conn, record_id, response.status_code,
                             response.get_data(as_text=True), deps.clock())
        uow.commit()
    return response


def _recover(deps, existing, run, answer_from) -> Response | None:
    """Finish a key whose first request died: answer from what it created, or run it again."""
    now = deps.clock()
    with deps.uow() as uow:
        won = records.take_over(uow.conn, existing.id, existing.updated_at, now)
        uow.commit()
    if not won:
        return None
    if existing.transaction_id is None:
        return _run_claimed(deps, existing.id, run)
    with deps.uow(write=False) as uow:
        tx = uow.transactions.get_by_id(existing.transaction_id)
    response = answer_from(tx)
    with deps.uow() as uow:
        records.complete(uow.conn, existing.id, response.status_code,
                         response.get_data(as_text=True), deps.clock())
        uow.commit()
    return response


def _replay(record) -> Response:
    return Response(record.response_body, status=record.response_status,
                    mimetype="application/json", headers={"Idempotent-Replayed": "true"})
