"""`python -m bench.profile`: where a status, create or refund request spends its time, without HTTP.

Requests go through the Flask test client one after another, so the figures are
per request and hardly disturbed by other load: Python CPU time, SQL statements,
database round trips (BEGIN, pings and COMMIT included), the PostgreSQL backend's
CPU time, and the functions of app/ that take the most time (cProfile). The
baseline app (bench/baseline_app.py) is measured the same way in the same run,
and Paydesk's CPU is reported as a ratio of it. `--with-duties` also measures
bench/duties_app.py (Paydesk's statements alone) on create and refund, executed
through SQLAlchemy as Paydesk executes them.

Creates and refunds take the path `make bench` measures (`--path production`, the default): a
Paystack account's method, so each commits its Pending row with its provider call due for a
worker (the account's address is never called: no worker runs). `--path simulator` measures
the simulator's, whose refund is answered in the request; the duties app mirrors that path only.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from cryptography.fernet import Fernet
from psycopg import pq
from sqlalchemy import Engine, Pool, create_engine, event, text

from app import create_app
from app.api.request_log import flush_request_log
from app.cli import upgrade_database
from app.config import Config

from .run import DEFAULT_POSTGRES, UNCALLED_PROVIDER, Database, commit, machine
from .seed import PAYSTACK_CARD, connect_paystack, seed
from .servers import cpu_seconds

ENDPOINTS = ("status", "create", "refund", "banks")
# The method (id, currency) creates and refunds go through, per --path.
PATHS = {"production": PAYSTACK_CARD, "simulator": ("card", "EUR")}
DUTIES = ("duties-sqlalchemy",)
DUTIES_ENDPOINTS = ("create", "refund")
# Requests per app and endpoint whose statements and round trips are counted, after the timed rounds.
COUNTED_REQUESTS = 50


class Counters:
    """SQL statements and PostgreSQL round trips made by the requests: those of the thread that
    makes them (every engine in it). A background thread's, such as the NOTIFY an Announcer sends
    after a commit, are not a request's (they would be counted by whichever request they fall in).

    Round trips are read from libpq's own protocol trace (psycopg's public `PGconn.trace`): one
    ReadyForQuery per exchange, so prepared statements, pings, BEGIN and COMMIT all count. The
    trace costs CPU, so it runs only while `counting()`, never in the timed rounds.
    """

    def __init__(self):
        self.statements = 0
        self.requests_thread = threading.current_thread()
        self.enabled = False
        self.trace = tempfile.TemporaryFile()
        event.listen(Engine, "before_cursor_execute", self._statement)
        event.listen(Pool, "checkout", self._checked_out)
        event.listen(Pool, "checkin", self._checked_in)

    @contextmanager
    def counting(self) -> Iterator[None]:
        """Count the statements and round trips of the requests made inside the block."""
        self.statements = 0
        self.trace.seek(0)
        self.trace.truncate()
        self.enabled = True
        try:
            yield
        finally:
            self.enabled = False

    @property
    def round_trips(self) -> int:
        self.trace.seek(0)
        return sum(1 for line in self.trace if b"\tReadyForQuery" in line)

    def _ours(self) -> bool:
        return self.enabled and threading.current_thread() is self.requests_thread

    def _checked_out(self, dbapi_connection, *_):
        pgconn = getattr(dbapi_connection, "pgconn", None)  # PostgreSQL only
        if pgconn is not None and self._ours():
            pgconn.trace(self.trace.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

    def _checked_in(self, dbapi_connection, *_):
        pgconn = getattr(dbapi_connection, "pgconn", None)
        if pgconn is not None:
            pgconn.untrace()  # flushes what the connection wrote

    def _statement(self, *_):
        if self._ours():
            self.statements += 1


def requests_for(client, seeded: dict):
    """One function per endpoint, each making one request and checking it succeeded."""
    auth = {"Authorization": f"Bearer {seeded['token']}"}

    def status():
        tx_no = random.choice(seeded["status"])
        answer = client.get(f"/api/v1/transactions/{tx_no}/status", headers=auth)
        assert answer.status_code == 200, answer.data

    def create():
        method_id, currency = seeded["method"]
        body = {"amount": 25.50, "currency": currency, "reference": f"profile-{uuid.uuid4().hex}",
                "statementDescriptor": "BENCH SHOP", "callbackUrl": "https://shop1.example/webhooks/paydesk",
                "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                            "customerReference": "cust-1"},
                "payment": {"paymentMethod": method_id}}
        answer = client.post("/api/v1/transactions", json=body, headers=auth)
        assert answer.status_code == 200, answer.data

    def refund():
        body = {"txNo": random.choice(seeded["refund"]), "amount": 0.01, "reason": "bench"}
        answer = client.post("/api/v1/transactions/refund", json=body, headers=auth)
        assert answer.status_code == 200, answer.data

    def banks():
        body = {"paymentMethod": "ng-bank-payout", "currency": "NGN"}
        answer = client.post("/api/v1/transactions/banks", json=body, headers=auth)
        assert answer.status_code == 200, answer.data

    return {"status": status, "create": create, "refund": refund, "banks": banks}


def backend_cpu(admin, database: str) -> float:
    """CPU seconds of every PostgreSQL backend connected to this database (ours alone)."""
    with admin.connect() as conn:
        pids = conn.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = :db"),
                            {"db": database}).scalars().all()
    return sum(cpu_seconds(pid) for pid in pids)


def paydesk_app(database_url: str, seeded: dict):
    # A demo (DEMO_MODE): the live payments it creates through the simulator are the simulator's.
    return create_app(Config(DATABASE_URL=database_url, SECRET_KEY="bench-secret", DEMO_MODE=True,
                             PAYDESK_ENCRYPTION_KEY=seeded["encryption_key"]))


def baseline_app(database_url: str, seeded: dict):
    os.environ.update(DATABASE_URL=database_url, BENCH_MERCHANT_ID=str(seeded["merchant_id"]))
    from .baseline_app import create_app as create_baseline

    return create_baseline()


def duties_app(database_url: str, seeded: dict):
    os.environ.update(DATABASE_URL=database_url, BENCH_MERCHANT_ID=str(seeded["merchant_id"]))
    from .duties_app import create_app as create_duties

    return create_duties()


def serves(name: str, endpoint: str) -> bool:
    return name not in DUTIES or endpoint in DUTIES_ENDPOINTS


def profile(apps: dict, admin, database: str, counters: Counters, seeded: dict, requests: int,
            rounds: int, top: int) -> dict:
    """Per app and endpoint: the per-request figures, and the hottest app/ functions of Paydesk.

    The apps take turns in `rounds` rounds (A B, B A, ...), so a drift in the machine's
    speed (other work on it) falls on both rather than on whichever runs second.
    """
    calls = {name: requests_for(app.test_client(), seeded) for name, app in apps.items()}
    found = {name: {} for name in apps}
    per_round = max(1, requests // rounds)
    for endpoint in ENDPOINTS:
        serving = [name for name in apps if serves(name, endpoint)]
        totals = {name: dict.fromkeys(("wall", "cpu", "backend", "n"), 0)
                  for name in serving}
        for name in serving:
            for _ in range(50):  # warm up: pool, statement caches, imports
                calls[name][endpoint]()
        for number in range(rounds):
            for name in (serving if number % 2 == 0 else serving[::-1]):
                call, total = calls[name][endpoint], totals[name]
                backend_before = backend_cpu(admin, database)
                wall, cpu = time.perf_counter(), time.process_time()
                for _ in range(per_round):
                    call()
                total["wall"] += time.perf_counter() - wall
                total["cpu"] += time.process_time() - cpu
                total["backend"] += backend_cpu(admin, database) - backend_before
                total["n"] += per_round
        for name, total in totals.items():
            n = total["n"]
            with counters.counting():  # untimed: the protocol trace costs CPU
                for _ in range(COUNTED_REQUESTS):
                    calls[name][endpoint]()
            found[name][endpoint] = {
                "wall_ms": total["wall"] / n * 1000, "python_cpu_ms": total["cpu"] / n * 1000,
                "postgres_cpu_ms": total["backend"] / n * 1000,
                "statements": counters.statements / COUNTED_REQUESTS,
                "round_trips": counters.round_trips / COUNTED_REQUESTS,
            }
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(per_round):
            calls["paydesk"][endpoint]()
        profiler.disable()
        found["paydesk"][endpoint]["hottest"] = _hottest(profiler, per_round, top)
    return found


def _hottest(profiler: cProfile.Profile, requests: int, top: int) -> list[dict]:
    """app/ functions by cumulative time per request (under cProfile, so relative figures)."""
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (filename, line, name), (_, calls, _, cumulative, _) in stats.stats.items():
        if "/app/" in filename and "/.venv/" not in filename:
            rows.append({"function": f"{filename.split('/app/', 1)[1]}:{line} {name}",
                         "calls": calls / requests, "cumulative_ms": cumulative / requests * 1000})
    return sorted(rows, key=lambda r: -r["cumulative_ms"])[:top]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="transactions to seed")
    parser.add_argument("--requests", type=int, default=500, help="requests per endpoint")
    parser.add_argument("--rounds", type=int, default=10, help="turns the apps take on each endpoint")
    parser.add_argument("--top", type=int, default=15, help="functions listed per endpoint")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)
    parser.add_argument("--with-duties", action="store_true",
                        help="also measure bench/duties_app.py (Paydesk's statements alone)")
    parser.add_argument("--path", choices=sorted(PATHS), default="production",
                        help="the method creates and refunds go through (see above)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.with_duties and args.path != "simulator":
        parser.error("--with-duties mirrors the simulator's path: add --path simulator")
    database = Database("postgres", args.postgres_url, keep=False)
    admin = create_engine(args.postgres_url, isolation_level="AUTOCOMMIT")
    counters = Counters()
    result = {"started_at": datetime.now(UTC).isoformat(timespec="seconds"), "commit": commit(),
              "machine": machine(), "rows": args.rows, "requests": args.requests, "rounds": args.rounds,
              "path": args.path}
    try:
        upgrade_database(database.url)
        method = PATHS[args.path]
        seeded = seed(database.url, args.rows, refund_method=method)
        encryption_key = Fernet.generate_key().decode()
        if args.path == "production":
            connect_paystack(database.url, encryption_key, seeded.merchant_id, UNCALLED_PROVIDER)
        requests_from = {"token": seeded.token, "status": seeded.status_tx_nos,
                         "refund": seeded.refund_targets, "merchant_id": seeded.merchant_id,
                         "method": method, "encryption_key": encryption_key}
        apps = {"paydesk": paydesk_app(database.url, requests_from),
                "baseline": baseline_app(database.url, requests_from)}
        if args.with_duties:
            apps.update({name: duties_app(database.url, requests_from) for name in DUTIES})
        result.update(profile(apps, admin, database.name, counters, requests_from, args.requests,
                              args.rounds, args.top))
        # Paydesk's request log is written before its database goes: queued rows would otherwise
        # be written at the process's exit, into a database dropped by then.
        flush_request_log(apps["paydesk"])
        for name, app in apps.items():
            app.extensions["paydesk.engine" if name == "paydesk" else "baseline.engine"].dispose()
    finally:
        admin.dispose()
        database.drop()
    for endpoint in ENDPOINTS:
        paydesk, baseline = result["paydesk"][endpoint], result["baseline"][endpoint]
        print(f"\n{endpoint}: Paydesk / baseline per request: "
              f"{paydesk['python_cpu_ms']:.2f} / {baseline['python_cpu_ms']:.2f} ms Python CPU, "
              f"{paydesk['postgres_cpu_ms']:.2f} / {baseline['postgres_cpu_ms']:.2f} ms PostgreSQL CPU, "
              f"{paydesk['statements']:.1f} / {baseline['statements']:.1f} statements, "
              f"{paydesk['round_trips']:.1f} / {baseline['round_trips']:.1f} round trips; "
              f"baseline CPU as a share of Paydesk's: {_share(baseline, paydesk):.2f}")
        for name in DUTIES:
            if name in result and endpoint in result[name]:
                duties = result[name][endpoint]
                print(f"  {name}: {duties['python_cpu_ms']:.2f} ms Python CPU, "
                      f"{duties['postgres_cpu_ms']:.2f} ms PostgreSQL CPU; "
                      f"baseline CPU as a share of its: {_share(baseline, duties):.2f}")
        for row in paydesk["hottest"]:  # measured apart, under cProfile: relative figures
            print(f"  {row['cumulative_ms']:7.2f} ms  {row['calls']:5.1f}×  {row['function']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


def _share(baseline: dict, paydesk: dict) -> float:
    """Baseline CPU (Python and PostgreSQL) per request over Paydesk's: what throughput would show."""
    return (baseline["python_cpu_ms"] + baseline["postgres_cpu_ms"]) / \
        (paydesk["python_cpu_ms"] + paydesk["postgres_cpu_ms"])


if __name__ == "__main__":
    main()
