"""Paydesk served over real HTTP: in a thread of the test process, or as a separate process."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import requests
from werkzeug.serving import make_server

from .network import LOOPBACK_ALLOWED

ROOT = Path(__file__).resolve().parents[2]
# Argon2 at production cost takes a tenth of a second per user made and per sign-in; the
# suite's apps and processes use the library's cheapest parameters instead (only
# tests/dashboard/test_auth.py's rehash test uses the real ones).
TEST_PASSWORD_HASH_PROFILE = "fast"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def closing_every_answer(app):
    """The WSGI app, its answers closed however the server leaves them (PEP 3333's close()).

    When a client drops the connection while werkzeug's server writes an answer (a browser
    leaving a page while a stylesheet or script is on its way), the server's cleanup can fail
    before it calls the answer's close(); a file the answer sends is then closed only by the
    garbage collector, with a ResourceWarning that the suite's warnings-as-errors fails a later
    test on. Here the answer is a generator: whatever the server does, the generator's own
    close(), at the latest when it is collected, closes the answer first."""

    def answer(environ, start_response):
        inner = app(environ, start_response)
        try:
            yield from inner
        finally:
            close = getattr(inner, "close", None)
            if close is not None:
                close()

    return answer


class ThreadedServer:
    """The app behind werkzeug's threaded HTTP server, in a background thread."""

    def __init__(self, app, port: int):
        self.server = make_server("127.0.0.1", port, closing_every_answer(app), threaded=True)
        self.url = f"http://127.0.0.1:{port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.thread.join(5)


def wait_until_up(url: str, timeout: float = 60.0, process: subprocess.Popen | None = None) -> None:
    """Poll the health check until the server answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if requests.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass  # not listening yet, or still loading the app
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not come up")


def paydesk_env(database_url: str, base_url: str, **extra: str) -> dict:
    """Environment for a Paydesk process of the test run: loopback receivers and providers allowed,
    and a demo (the simulator decides live payments)."""
    env = dict(os.environ)
    env.update({"DATABASE_URL": database_url, "BASE_URL": base_url, "SECRET_KEY": "test-secret",
                "DEMO_MODE": "1", "PASSWORD_HASH_PROFILE": TEST_PASSWORD_HASH_PROFILE,
                **LOOPBACK_ALLOWED})
    env.update(extra)
    return env


def start_gunicorn(database_url: str, port: int, workers: int = 2, *, log: Path | None = None,
                   **extra: str) -> subprocess.Popen:
    """Paydesk under gunicorn, the production command, as its own process group.

    Its log (stderr) goes to `log` when given; tests that make it log much need one, or
    the unread pipe fills and gunicorn blocks.
    """
    base_url = f"http://127.0.0.1:{port}"
    with log.open("a") if log else nullcontext(subprocess.PIPE) as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers",
             str(workers), "--threads", "4", "app:create_app()"],
            cwd=ROOT, env=paydesk_env(database_url, base_url, **extra),
            stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
        )
    try:
        wait_until_up(base_url, process=process)
    except Exception:
        stop_process_group(process)
        raise
    return process


def start_worker(database_url: str, *, log: Path | None = None, **extra: str) -> subprocess.Popen:
    """`flask --app app worker` as its own process group, returned once it has started.

    Its log (stderr) goes to `log` when given, else nowhere.
    """
    with log.open("a") if log else nullcontext(subprocess.DEVNULL) as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "app", "worker", "--interval", "0.2"],
            cwd=ROOT, env=paydesk_env(database_url, "http://paydesk.test", **extra),
            stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True,
        )
    if "started" not in process.stdout.readline():
        stop_process_group(process)
        raise RuntimeError("the worker did not start")
    return process


def stop_process_group(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop a process started with start_new_session, and everything it forked."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
    for stream in (process.stdout, process.stderr):
        if stream:
            stream.close()
