"""A bounded load: a few client threads walking payments through create, capture, refunds and status.

Every call is recorded with when it started and ended, so a test can hold each answer
against what the database was doing at that moment. Each call opens its own
connection (no keep-alive), so a call never inherits a connection that an earlier
one left to a server process that has since died.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
import requests

from tests.conftest import payment_body

ASYNC_ORIGINAL = "SBX-REFUND-ASYNC"  # its refunds stay Pending until the worker completes them
ASYNC_REFUND = 0.05  # small enough never to exhaust its 100.00 during a test


@dataclass(frozen=True)
class Call:
    """One HTTP call and what came of it: a response, or the client's error."""

    what: str
    started: float  # time.monotonic()
    ended: float
    status: int | None
    body: object
    retry_after: str | None
    error: str | None

    def overlaps(self, start: float, end: float) -> bool:
        """The call was in progress at some moment between start and end."""
        return self.started <= end and self.ended >= start


class Load:
    """`threads` clients for at most `seconds` and `max_calls` calls, each pausing `pace` between calls."""

    def __init__(self, base_url: str, token: str, callback_url: str, *, threads: int = 4,
                 seconds: float = 10.0, max_calls: int = 800, pace: float = 0.05):
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.callback_url = callback_url
        self.threads = [threading.Thread(target=self._client, daemon=True) for _ in range(threads)]
        self.seconds = seconds
        self.max_calls = max_calls
        self.pace = pace
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def __enter__(self) -> Load:
        self.deadline = time.monotonic() + self.seconds
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.wait()

    def wait(self) -> list[Call]:
        """Let the clients finish (by the time limit at most) and return every call made."""
        for thread in self.threads:
            thread.join(self.seconds + 120)
        return self.calls

    def _client(self) -> None:
        while not self._done():
            self._journey()

    def _done(self) -> bool:
        return time.monotonic() > self.deadline or len(self.calls) >= self.max_calls

    def _journey(self) -> None:
        """One payment's life; it ends at the first answer that is not 200 (the rest would be moot)."""
        self._call("async refund", "POST", "/transactions/refund",
                   {"txNo": ASYNC_ORIGINAL, "amount": ASYNC_REFUND})
        created = self._call("create", "POST", "/transactions",
                             payment_body(callbackUrl=self.callback_url))
        if created.status != 200:
            return
        tx_no = created.body["transactionId"]
        steps = [
            ("capture", "POST", f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}),
            ("refund", "POST", "/transactions/refund", {"txNo": tx_no, "amount": 30}),
            ("refund", "POST", "/transactions/refund", {"txNo": tx_no, "amount": 70}),
            ("status", "GET", f"/transactions/{tx_no}/status", None),
        ]
        for what, method, path, body in steps:
            if self._done() or self._call(what, method, path, body).status != 200:
                return

    def _call(self, what: str, method: str, path: str, body) -> Call:
        time.sleep(self.pace)
        started = time.monotonic()
        try:
            response = requests.request(method, f"{self.base_url}/api/v1{path}", json=body,
                                        headers=self.headers, timeout=60)
        except requests.RequestException as error:
            call = Call(what, started, time.monotonic(), None, None, None, repr(error))
        else:
            try:
                answer = response.json()
            except ValueError:
                answer = response.text
            call = Call(what, started, time.monotonic(), response.status_code, answer,
                        response.headers.get("Retry-After"), None)
        with self.lock:
            self.calls.append(call)
        return call

