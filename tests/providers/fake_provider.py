"""A provider played by a local HTTP server: scripted answers by method and path, every request kept."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from app.providers.http import ALLOWED_NETWORKS_SETTING
from app.webhooks.guard import AddressGuard, parse_networks
from tests.support.network import LOOPBACK

# What a connector must be allowed to reach the fake (or Prism) on loopback: PROVIDER_ALLOWED_NETWORKS.
LOOPBACK_GUARD = AddressGuard(ALLOWED_NETWORKS_SETTING, parse_networks(LOOPBACK))


@dataclass
class Answer:
    """What the fake provider says to one request."""

    status: int = 200
    body: object = None  # dict/list as JSON, str/bytes as given
    delay: float = 0.0  # seconds to wait before answering (timeouts)
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)  # more headers (a redirect's Location)


@dataclass
class Seen:
    """One request as the provider received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    @property
    def json(self):
        """The body parsed as JSON (Paystack)."""
        return json.loads(self.body)

    @property
    def form(self) -> dict[str, str]:
        """The body parsed as a form, one value per key (Stripe)."""
        return {key: values[-1] for key, values in parse_qs(self.body.decode(), keep_blank_values=True).items()}

    def header(self, name: str) -> str | None:
        """A request header by name in any case."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class FakeProvider:
    """Answers by (method, path); a list of answers is used in order, its last one repeating."""

    url: str = ""
    routes: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def on(self, method: str, path: str, *answers: Answer | dict) -> None:
        """Script the answers to METHOD path (no query string); dicts are 200 JSON bodies."""
        self.routes[(method, path)] = [a if isinstance(a, Answer) else Answer(body=a) for a in answers]

    def requests_to(self, method: str, path: str) -> list[Seen]:
        """The requests received for METHOD path."""
        return [s for s in self.seen if (s.method, s.path) == (method, path)]

    def answer(self, method: str, path: str) -> Answer:
        answers = self.routes.get((method, path))
        if not answers:
            return Answer(404, {"status": False, "message": f"fake provider has no route {method} {path}"})
        return answers.pop(0) if len(answers) > 1 else answers[0]


def _handler(provider: FakeProvider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self):
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            provider.seen.append(Seen(self.command, parts.path, parse_qs(parts.query),
                                      dict(self.headers.items()), body))
            answer = provider.answer(self.command, parts.path)
            if answer.delay:
                time.sleep(answer.delay)
            payload = answer.body
            if isinstance(payload, (dict, list)):
                payload = json.dumps(payload).encode()
            elif isinstance(payload, str):
                payload = payload.encode()
            payload = payload or b""
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (timeout tests)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass

    return Handler


class RunningFakeProvider:
    """The fake provider on 127.0.0.1 and a random port, in a background thread."""

    def __init__(self):
        self.provider = FakeProvider()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.provider))
        self.server.daemon_threads = True
        self.provider.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval: shutdown() waits up to one interval, at every test's end.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self.provider

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
