"""`python -m bench.webhook_delivery`: webhook deliveries per second and enqueue-to-delivery latency.

Real `flask --app app worker` processes (1, then 2, ...) deliver to a threaded
HTTP receiver on loopback in this process, on a fresh database of the same kind
and server as the URL given. Throughput: a backlog of N events committed at once,
timed from the commit to the last arrival. Latency: events committed one by one
at a steady pace while the workers idle, timed from each commit to its arrival
(this includes the workers' polling interval).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from app import create_app
from app.cli import upgrade_database
from app.config import Config
from app.payments import create
from app.payments.model import Caller, Mode
from app.payments.schemas import parse_create
from app.store.merchants import create_merchant
from app.store.tables import webhook_events

from .servers import ROOT, cpu_seconds, free_port

DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
LATENCY_PACE = 0.02  # seconds between two events of the latency run (50 events/s)
WAIT_LIMIT = 300.0  # seconds a run may take before it is reported as incomplete


class Receiver:
    """Answers every webhook 204 and notes when each webhook-id first arrived (time.monotonic)."""

    def __init__(self):
        self.port = free_port()
        self.arrived: dict[str, float] = {}
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                webhook_id = self.headers.get("webhook-id", "")
                with receiver.changed:
                    receiver.arrived.setdefault(webhook_id, time.monotonic())
                    receiver.changed.notify_all()
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def wait_for(self, webhook_ids: list[str], timeout: float = WAIT_LIMIT) -> bool:
        """Block until every id arrived; False when the time ran out."""
        with self.changed:
            return self.changed.wait_for(lambda: all(i in self.arrived for i in webhook_ids), timeout)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def fresh_database(database_url: str):
    """A new database beside the given one (same PostgreSQL server, or a SQLite file), migrated, dropped after."""
    if database_url.startswith("sqlite"):
        directory = Path(tempfile.mkdtemp(prefix="paydesk-webhook-bench-"))
        url = f"sqlite:///{directory / 'paydesk.db'}"
        try:
            upgrade_database(url)
            yield url
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return
    name = f"paydesk_webhook_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(database_url).set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_database(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def start_workers(database_url: str, count: int) -> list[subprocess.Popen]:
    """`flask --app app worker` processes, each up and polling when this returns."""
    env = dict(os.environ, DATABASE_URL=database_url, SECRET_KEY="bench-secret",
               WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8", INSTANCE_PATH=tempfile.gettempdir())
    workers = []
    for _ in range(count):
        process = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "app", "worker"], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        if "started" not in process.stdout.readline():
            raise RuntimeError("a webhook worker did not start")
        workers.append(process)
    return workers


def stop_workers(workers: list[subprocess.Popen]) -> None:
    """SIGTERM, as a deployment stops them: running deliveries finish first."""
    for process in workers:
        process.send_signal(signal.SIGTERM)
    for process in workers:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Outbox:
    """Writes webhook events the way the payments code does: outbox rows of a transaction, committed."""

    def __init__(self, database_url: str, callback_url: str):
        # A demo (DEMO_MODE): its live payment is the simulator's.
        self.app = create_app(Config(DATABASE_URL=database_url, SECRET_KEY="bench-secret", DEMO_MODE=True,
                                     INSTANCE_PATH=Path(tempfile.gettempdir())))
        self.deps = self.app.extensions["paydesk"]
        with self.deps.uow() as uow:
            merchant = create_merchant(uow, f"Webhook bench {uuid.uuid4().hex[:8]}", "http://bench.test")
            uow.commit()
        body = {
            "amount": 10, "currency": "EUR", "reference": f"bench-{uuid.uuid4().hex[:12]}",
            "statementDescriptor": "BENCH", "callbackUrl": callback_url,
            "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                        "customerReference": "bench"},
            "payment": {"paymentMethod": "card"},
        }
        caller = Caller(merchant.merchant_id, Mode.LIVE, "bench")
        self.tx = create.create_transaction(self.deps, caller, parse_create(body))
        self.known: set[str] = set()

    def enqueue(self, count: int) -> list[str]:
        """Commit `count` events in one transaction; returns their webhook ids."""
        with self.deps.uow() as uow:
            for _ in range(count):
                uow.enqueue_webhook(self.tx)
            everyone = set(uow.conn.execute(
                select(webhook_events.c.webhook_id)
                .where(webhook_events.c.transaction_id == self.tx.id)).scalars())
            uow.commit()
        new = list(everyone - self.known)
        self.known |= everyone
        return new

    def close(self) -> None:
        self.app.extensions["paydesk.engine"].dispose()


def measure(database_url: str, events: int, workers: int, latency_events: int) -> dict:
    """One run with `workers` worker processes: throughput of a backlog, then paced latency."""
    receiver = Receiver()
    outbox = Outbox(database_url, receiver.url)
    processes = start_workers(database_url, workers)
    try:
        if not receiver.wait_for(outbox.enqueue(5), 30):  # warm up: pools, threads, caches
            raise RuntimeError("warm-up webhooks were not delivered")
        backlog = outbox.enqueue(events)
        committed = time.monotonic()
        cpu_before = sum(cpu_seconds(p.pid) for p in processes)
        complete = receiver.wait_for(backlog)
        drained = max(receiver.arrived.get(i, time.monotonic()) for i in backlog) - committed
        worker_cpu = sum(cpu_seconds(p.pid) for p in processes) - cpu_before
        latencies = []
        for _ in range(latency_events):
            [webhook_id] = outbox.enqueue(1)
            enqueued = time.monotonic()
            time.sleep(LATENCY_PACE)
            latencies.append((webhook_id, enqueued))
        complete = receiver.wait_for([i for i, _ in latencies]) and complete
        delays_ms = sorted((receiver.arrived[i] - t) * 1000 for i, t in latencies if i in receiver.arrived)
    finally:
        stop_workers(processes)
        outbox.close()
        receiver.close()
    return {
        "workers": workers,
        "events": events,
        "complete": complete,
        "seconds": round(drained, 3),
        "deliveries_per_s": round(events / drained, 1),
        "worker_cpu_ms_per_delivery": round(worker_cpu * 1000 / events, 2),
        "latency_events": latency_events,
        "latency_p50_ms": round(statistics.median(delays_ms), 1),
        "latency_p99_ms": round(_percentile(delays_ms, 0.99), 1),
    }


def _percentile(sorted_values: list[float], share: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(share * len(sorted_values)))]


def run(database_url: str, events: int, workers: int) -> dict:
    """Throughput and latency with 1 to `workers` worker processes; flat keys for bench/run.py's report."""
    latency_events = max(10, min(events, 200))
    results = {"database": make_url(database_url).get_backend_name(), "events": events,
               "latency_events": latency_events,
               "method": "fresh database beside the given one; real `flask worker` processes; "
                         "threaded receiver on loopback answering 204"}
    with fresh_database(database_url) as url:
        for count in range(1, workers + 1):
            measured = measure(url, events, count, latency_events)
            label = f"{count}_worker{'s' if count > 1 else ''}"
            results[f"{label}_deliveries_per_s"] = measured["deliveries_per_s"]
            results[f"{label}_latency_p50_ms"] = measured["latency_p50_ms"]
            results[f"{label}_latency_p99_ms"] = measured["latency_p99_ms"]
            results[f"{label}_cpu_ms_per_delivery"] = measured["worker_cpu_ms_per_delivery"]
            results[f"{label}_complete"] = measured["complete"]
    return results


def markdown(results: dict, workers: int) -> str:
    """The small table the command prints."""
    lines = [f"Webhook delivery on {results['database']}: {results['events']} events backlog, "
             f"{results['latency_events']} paced events for latency", "",
             "| Workers | Deliveries/s | Latency p50 ms | Latency p99 ms | Worker CPU ms/delivery "
             "| All delivered |",
             "|---:|---:|---:|---:|---:|---|"]
    for count in range(1, workers + 1):
        label = f"{count}_worker{'s' if count > 1 else ''}"
        lines.append(f"| {count} | {results[f'{label}_deliveries_per_s']} | "
                     f"{results[f'{label}_latency_p50_ms']} | {results[f'{label}_latency_p99_ms']} | "
                     f"{results[f'{label}_cpu_ms_per_delivery']} | "
                     f"{'yes' if results[f'{label}_complete'] else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.webhook_delivery",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="backlog size for the throughput run")
    parser.add_argument("--workers", type=int, default=2, help="measure with 1 up to this many workers")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_POSTGRES_URL")
                        or os.environ.get("TEST_POSTGRES_URL") or DEFAULT_POSTGRES,
                        help="server (or SQLite URL) beside which a fresh database is made")
    parser.add_argument("--smoke", action="store_true", help="a tiny run: 20 events, checks it works")
    args = parser.parse_args(argv)
    events = 20 if args.smoke else args.events
    results = run(args.database_url, events, args.workers)
    print(markdown(results, args.workers))
    if not all(results[k] for k in results if k.endswith("_complete")):
        sys.exit("some webhooks were not delivered")


if __name__ == "__main__":
    main()
