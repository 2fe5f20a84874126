"""The Idempotency-Key contract over app.payments.idempotency: one effect per key, the first
response kept and replayed byte for byte."""
from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from flask import Response, current_app, g, request

from app.payments import idempotency as once
from app.payments.idempotency import WAIT_FOR_FIRST, request_hash
from app.payments.model import Transaction
from app.payments.deps import OnCreated
from app.store import idempotency as key_records
from app.web import deps, json_response

MAX_KEY_LENGTH = 255


def answer_once(key: str, body, attempt: Callable[[OnCreated], Transaction],
                answer: Callable[[Transaction], Response],
                refusals: tuple[type[Exception], ...]) -> Response:
    """Answer the request once for its Idempotency-Key; a repeat gets the same bytes again.

    `attempt` runs the service and `answer` shapes the transaction it creates. A refusal (one of
    `refusals`, answered by the blueprint's handler) is kept like a success; a 5xx or any other
    error is not, so a retry runs again.
    """
    first: Response | None = None  # this request's response, made once: the bytes that are kept

    def keep(outcome: Transaction | Exception) -> once.Answer | None:
        nonlocal first
        if isinstance(outcome, Transaction):
            first = answer(outcome)
        elif isinstance(outcome, refusals):
            first = current_app.handle_user_exception(outcome)
        else:
            return None
        if first.status_code >= 500:
            return None
        return once.Answer(first.status_code, first.get_data(as_text=True))

    try:
        outcome = once.run_once(
            deps(), g.caller, key, request_hash(request.method, request.path, body), attempt, keep,
            records=key_records,
            abandoned_after=timedelta(seconds=current_app.config["IDEMPOTENCY_ABANDONED_AFTER"]),
            wait_for_first=WAIT_FOR_FIRST)  # read at each call: tests shorten it
    except refusals:
        return first
    except once.KeyReused:
        return json_response({"error": "Idempotency-Key reused with a different request"}, 422)
    except once.StillRunning:
        return json_response(
            {"error": "A request with this Idempotency-Key is still being processed"}, 409)
    if isinstance(outcome, once.Answer):
        return Response(outcome.body, status=outcome.status, mimetype="application/json",
                        headers={"Idempotent-Replayed": "true"})
    return first
