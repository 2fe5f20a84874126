"""A worker's jobs that ask providers beside its rounds: each pass on a thread of its own.

A job such as fetching due bank lists or settlements calls a provider for each item it claims;
run inside the round, one slow provider would hold every other job of the round. Each round
pokes the job's BackgroundPass instead: a pass starts on its own thread unless one is still
running. The thread is a daemon: a worker stopping mid-pass abandons it, and the job's claims
lapse to another worker.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class BackgroundPass:
    """One worker process's passes of one job (`run`), one at a time, beside its rounds."""

    def __init__(self, name: str, run: Callable[[], object]):
        self.name = name  # the thread's name, and the log's
        self.run = run
        self.thread: threading.Thread | None = None

    def poke(self) -> None:
        """Start a pass, unless one is running."""
        if self.thread is not None and self.thread.is_alive():
            return
        self.thread = threading.Thread(target=self._pass, name=self.name, daemon=True)
        self.thread.start()

    def _pass(self) -> None:
        try:
            self.run()
        except Exception:  # noqa: BLE001 - the database away, most likely: the next round pokes again
            log.exception("%s failed; the next round tries again", self.name)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the running pass, if any (tests; a stopping worker does not wait)."""
        if self.thread is not None:
            self.thread.join(timeout)
