"""Bearer-token authentication with a short in-process memory of tokens already checked."""
from __future__ import annotations

import threading
import time

from app.payments.model import Caller
from app.store.merchants import authenticate_token, hash_token

# Where each app keeps its memory (app.extensions).
MEMORY_KEY = "paydesk.tokens"
# Enough for every live token of many merchants; past it the memory starts afresh.
MAX_REMEMBERED = 10_000


def forget_checked_tokens(app) -> None:
    """Make this process check every token against the database again (after a revocation)."""
    memory = app.extensions.get(MEMORY_KEY)
    if memory is not None:
        memory.clear()


class TokenMemory:
    """Tokens authenticated in the last `ttl` seconds, by hash, so most requests skip the token query.

    A revoked token is refused by every process at most `ttl` seconds after revocation
    (TOKEN_CACHE_SECONDS; 0 turns the memory off). Unknown tokens are never remembered.
    """

    def __init__(self, clock=time.monotonic) -> None:
        self._callers: dict[str, tuple[float, Caller]] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def clear(self) -> None:
        """Forget every remembered token."""
        with self._lock:
            self._callers.clear()

    def caller(self, uow_factory, token: str, ttl: float) -> Caller | None:
        """The caller the token stands for, from memory when checked less than ttl seconds ago."""
        key = hash_token(token)
        now = self._clock()
        if ttl > 0:
            with self._lock:
                remembered = self._callers.get(key)
            if remembered and now - remembered[0] < ttl:
                return remembered[1]
        with uow_factory(write=False) as uow:
            caller = authenticate_token(uow.conn, token)
        if caller is not None and ttl > 0:
            with self._lock:
                if len(self._callers) >= MAX_REMEMBERED:
                    self._callers.clear()
                self._callers[key] = (now, caller)
        return caller
