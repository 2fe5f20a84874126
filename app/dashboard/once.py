"""One-time keys of the dashboard's confirm forms: a second submit of the same form (double
click, a POST resent without JavaScript) gets the first submit's transaction, never a second one."""
from __future__ import annotations

import secrets
from collections.abc import Callable

from app.payments import idempotency
from app.payments import lookup
from app.payments.model import Caller, Transaction
from app.payments.deps import Deps, OnCreated
from app.store import idempotency as key_records

MAX_KEY_LENGTH = 64


class FormReused(Exception):
    """The form's key was used for another request (or its first submit is still running)."""


def new_key() -> str:
    """The one-time key a confirm step carries."""
    return secrets.token_urlsafe(16)


def usable_key(key: str) -> str:
    """The form's one-time key, or a new one when it is not a key new_key could have made."""
    return key if 0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable() else new_key()


def run_once(deps: Deps, caller: Caller, form: str, key: str, body: dict,
             operation: Callable[[OnCreated], Transaction]) -> Transaction:
    """Run the operation (a service call given its on_created hook) once per key of the named form:
    a repeat with the same body gets the first run's transaction as it stands now; the same key
    with another body raises FormReused. A form without a usable key runs the operation as is.
    A refusal keeps nothing, so a corrected form can be sent again with its key."""
    if not (0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable()):
        return operation(None)
    try:
        outcome = idempotency.run_once(
            deps, caller, f"dashboard-{form}:{key}",
            idempotency.request_hash("POST", f"dashboard-{form}", body),
            operation, _kept_transaction, records=key_records)
    except (idempotency.KeyReused, idempotency.StillRunning):  # a submit still running is answered alike
        raise FormReused() from None
    if isinstance(outcome, idempotency.Answer):  # the first submit's transaction, as it stands now
        return lookup.get_status(deps, caller, outcome.body)
    return outcome


def _kept_transaction(outcome: Transaction | Exception) -> idempotency.Answer | None:
    """A transaction made is kept by its number; a refusal is not kept."""
    return idempotency.Answer(200, outcome.tx_no) if isinstance(outcome, Transaction) else None
