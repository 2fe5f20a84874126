"""Payment methods remembered per process: they change rarely and create reads one on every call."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from app.payments.model import PaymentMethod

MAX_ENTRIES = 10_000


class MethodCache:
    """A method found by (merchant, mode, method id), kept `seconds` (TOKEN_CACHE_SECONDS: the same
    staleness bound as API tokens). Only methods found are kept: a method added is used at once.
    A change made by this process (connect, disconnect) forgets the merchant's at once; other
    processes see it within `seconds`. 0 keeps nothing."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self._found: dict[tuple[int, str, str], tuple[float, PaymentMethod]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str, str], load: Callable[[], PaymentMethod | None]
            ) -> PaymentMethod | None:
        """The remembered method, or load() (remembered when found)."""
        if self.seconds <= 0:
            return load()
        now = self.clock()
        with self._lock:
            kept = self._found.get(key)
        if kept and kept[0] > now:
            return kept[1]
        method = load()
        if method is not None:
            with self._lock:
                if len(self._found) >= MAX_ENTRIES:
                    self._found.clear()
                self._found[key] = (now + self.seconds, method)
        return method

    def forget_merchant(self, merchant_id: int) -> None:
        """Drop the merchant's methods (after this process changed them)."""
        with self._lock:
            for key in [k for k in self._found if k[0] == merchant_id]:
                del self._found[key]
