"""Bank lists kept for an hour, as the interface advises: the picker need not ask on every change."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timedelta

KEEP_FOR = timedelta(hours=1)
MAX_ENTRIES = 256


class BankListCache:
    """A small, thread-safe cache of bank lists by (merchant, method, currency, country)."""

    def __init__(self, clock: Callable[[], datetime], keep_for: timedelta = KEEP_FOR,
                 max_entries: int = MAX_ENTRIES):
        self.clock = clock
        self.keep_for = keep_for
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, tuple[datetime, list]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_load(self, key: tuple, load: Callable[[], list]) -> list:
        """The cached list, or load() stored for an hour (refusals are not cached)."""
        now = self.clock()
        with self._lock:
            found = self._entries.get(key)
            if found and found[0] > now:
                self._entries.move_to_end(key)
                return found[1]
        banks = load()
        with self._lock:
            self._entries[key] = (now + self.keep_for, banks)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return banks
