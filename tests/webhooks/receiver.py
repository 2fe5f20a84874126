"""A webhook receiver on loopback for tests: records every request and answers as told."""
from __future__ import annotations

import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.servers import free_port


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when many deliveries arrive at once, and a
    # dropped SYN is retried after a second: past the tests' 1 s connect timeout. Real
    # receivers (nginx: 511) queue far more.
    request_queue_size = 128


@dataclass(frozen=True)
class Received:
    """One request as the receiver saw it."""

    path: str
    headers: dict
    body: str
    at: float  # time.monotonic() when it arrived


class Receiver:
    """Threaded HTTP server that records requests; `status`, `delay` and `answer` say how it replies.

    stop() takes it down (connections are refused) and start() brings it back on the same port.
    """

    def __init__(self, status: int = 204, delay: float = 0.0, answer: bytes = b"",
                 tls: ssl.SSLContext | None = None):
        self.port = free_port()
        self.tls = tls
        self.status = status
        self.delay = delay
        self.answer = answer
        self.extra_headers: dict[str, str] = {}
        self.received: list[Received] = []
        self.arrived = threading.Condition()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """Where to send webhooks."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        """Listen (again) on the receiver's port."""
        self.server = _Server(("127.0.0.1", self.port), self._handler())
        if self.tls:
            self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening: deliveries now fail to connect."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Block until at least `count` requests arrived; returns them all."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.received) >= count, timeout):
                raise AssertionError(f"{len(self.received)} of {count} requests arrived")
            return list(self.received)

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if len(raw) < length:  # the sender died mid-request: no receiver takes that as a delivery
                    self.close_connection = True
                    return
                body = raw.decode()
                with receiver.arrived:
                    receiver.received.append(
                        Received(self.path, dict(self.headers.items()), body, time.monotonic()))
                    receiver.arrived.notify_all()
                if receiver.delay:
                    time.sleep(receiver.delay)
                try:
                    self.send_response(receiver.status)
                    for name, value in receiver.extra_headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(receiver.answer)))
                    self.end_headers()
                    self.wfile.write(receiver.answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender gave up waiting (timeout tests)

            def log_message(self, *args):
                pass

        return Handler
