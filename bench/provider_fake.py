"""A Paystack on loopback for the benchmark: Paystack's documented answers after a set latency.

`python -m bench.provider_fake --port N` serves what a Paystack account's payments and
refunds call (initialize, verify, refund create/list/fetch, balance) with the shapes of
Paystack's API reference, each after the latency in force. The benchmark sets the latency
and reads what the provider saw through three more paths, outside Paystack's API:

    POST /_bench/latency   {"seconds": 0.4} or {"hang": true} (answers after HANG_SECONDS)
    POST /_bench/reset     forget what was seen
    GET  /_bench/seen      {"arrivals": {reference: unix time}, "in_flight": [samples],
                            "max_in_flight": n, "calls": {path: count}}

It runs in its own process, so its threads never take the GIL from the load generator.
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# A hanging provider answers after this long: longer than any read timeout Paydesk uses.
HANG_SECONDS = 600.0
SAMPLE_EVERY = 0.05  # seconds between samples of the calls in flight


class State:
    """The latency in force and what was seen, shared by the server's threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency = 0.0
        self.in_flight = 0
        # Set when the latency changes: a hanging answer then goes out at once.
        self.latency_changed = threading.Event()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.arrivals: dict[str, float] = {}
            self.samples: list[int] = []
            self.max_in_flight = 0
            self.calls: dict[str, int] = {}

    def arrived(self, path: str, reference: str | None) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            key = re.sub(r"/[^/]+$", "/:id", path) if path.count("/") > 2 else path
            self.calls[key] = self.calls.get(key, 0) + 1
            if reference and reference not in self.arrivals:
                self.arrivals[reference] = time.time()

    def set_latency(self, seconds: float) -> None:
        changed, self.latency_changed = self.latency_changed, threading.Event()
        self.latency = seconds
        changed.set()

    def wait(self) -> None:
        """The latency in force, cut short when it changes (a hang ends)."""
        self.latency_changed.wait(self.latency)

    def left(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def sample_forever(self) -> None:
        while True:
            time.sleep(SAMPLE_EVERY)
            with self.lock:
                self.samples.append(self.in_flight)

    def seen(self) -> dict:
        with self.lock:
            return {"arrivals": dict(self.arrivals), "in_flight": list(self.samples),
                    "max_in_flight": self.max_in_flight, "calls": dict(self.calls)}


def _transaction(reference: str, status: str) -> dict:
    """A Paystack transaction object (verify's data)."""
    return {"id": 4099260516, "domain": "live", "status": status, "reference": reference,
            "amount": 2550000, "gateway_response": "Abandoned" if status == "abandoned" else "Successful",
            "currency": "NGN", "channel": "card", "metadata": {"txNo": reference},
            "customer": {"id": 181873746, "email": "ada@example.com"}}


def _refund(transaction: str, amount: int, note: str, status: str = "pending") -> dict:
    """A Paystack refund object."""
    return {"integration": 463433, "transaction": 4099260516, "id": 15581137, "domain": "live",
            "currency": "NGN", "amount": amount, "status": status, "merchant_note": note,
            "customer_note": "", "deducted_amount": 0, "fully_deducted": 0,
            "transaction_reference": transaction, "createdAt": "2026-11-27T10:10:00.000Z"}


def answer(method: str, path: str, body: dict) -> tuple[int, dict, str | None]:
    """(HTTP status, JSON body, the Paydesk reference the call is about) for a Paystack call."""
    if (method, path) == ("POST", "/transaction/initialize"):
        reference = body.get("reference", "")
        return 200, {"status": True, "message": "Authorization URL created",
                     "data": {"authorization_url": f"https://checkout.paystack.com/{reference[-10:]}",
                              "access_code": reference[-10:], "reference": reference}}, reference
    if method == "GET" and path.startswith("/transaction/verify/"):
        reference = path.rsplit("/", 1)[1]
        return 200, {"status": True, "message": "Verification successful",
                     "data": _transaction(reference, "abandoned")}, None
    if (method, path) == ("GET", "/refund"):
        return 200, {"status": True, "message": "Refunds retrieved", "data": [],
                     "meta": {"total": 0, "skipped": 0, "perPage": 100, "page": 1}}, None
    if (method, path) == ("POST", "/refund"):
        note = str(body.get("merchant_note", ""))
        reference = note.rsplit(" ", 1)[-1] if note else None
        return 200, {"status": True, "message": "Refund has been queued for processing",
                     "data": _refund(str(body.get("transaction")), int(body.get("amount") or 0), note)}, \
            reference
    if method == "GET" and path.startswith("/refund/"):
        return 200, {"status": True, "message": "Refund retrieved",
                     "data": _refund("", 1, "", "pending")}, None
    if (method, path) == ("GET", "/balance"):
        return 200, {"status": True, "message": "Balances retrieved",
                     "data": [{"currency": "NGN", "balance": 0}]}, None
    return 404, {"status": False, "message": f"no route {method} {path} in the benchmark's Paystack"}, None


def handler_for(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body go out in two writes; with Nagle's algorithm the body waited
        # for the client's delayed ACK, 40 ms added to every answer's set latency.
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            path = urlsplit(self.path).path
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.startswith(b"{") else {}
            if path.startswith("/_bench/"):
                return self._control(path, body)
            status, payload, reference = answer(self.command, path, body)
            state.arrived(path, reference)
            try:
                state.wait()
                self._send(status, payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # Paydesk's read timeout ended the call first
            finally:
                state.left()

        def _control(self, path: str, body: dict) -> None:
            if path == "/_bench/latency":
                state.set_latency(HANG_SECONDS if body.get("hang") else float(body.get("seconds", 0)))
                self._send(200, {"latency": state.latency})
            elif path == "/_bench/reset":
                state.reset()
                self._send(200, {})
            elif path == "/_bench/seen":
                self._send(200, state.seen())
            else:
                self._send(404, {})

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # Paydesk's workers open many connections at once


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.provider_fake", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    state = State()
    threading.Thread(target=state.sample_forever, daemon=True).start()
    Server(("127.0.0.1", args.port), handler_for(state)).serve_forever()


if __name__ == "__main__":
    main()
