"""`python -m bench.run`: seed, serve Paydesk and the baseline under gunicorn, drive both with wrk, report.

For each database (PostgreSQL, SQLite) and each data set size: a fresh database,
migrated and seeded; Paydesk (`gunicorn 'app:create_app()'`) and the baseline
(`bench/baseline_app.py`) started with the same workers and threads; every
endpoint driven on both at the same concurrency; the dashboard search's SQL timed
on its own; then bench/results/<date>-<db>.md, .json and .png.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import requests
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.cli import upgrade_database

from .load import combine, run_wrk, wrk_path
from .report import ENDPOINT_TITLES, write_reports
from .search import time_search
from .seed import MERCHANT_NAMES, PAYSTACK_CARD, Seeded, connect_paystack, seed
from .servers import ROOT, cpu_seconds, start_gunicorn

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
ENDPOINTS = tuple(ENDPOINT_TITLES)
SERVERS = ("paydesk", "baseline")
WEBHOOK_EVENTS = 2000
# The Paystack account's address: no worker runs here, so nothing ever calls it.
UNCALLED_PROVIDER = "http://127.0.0.1:9"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("postgres", "sqlite", "both"), default="both")
    parser.add_argument("--rows", default="10000,1000000",
                        help="data set sizes, comma-separated; each gets a full run (default %(default)s)")
    parser.add_argument("--sqlite-rows", help="sizes for SQLite when they differ from --rows")
    parser.add_argument("--endpoints", default=",".join(ENDPOINTS),
                        help="endpoints to drive, comma-separated (default: all, %(default)s)")
    parser.add_argument("--duration", type=float, default=20, help="seconds of load per endpoint and server")
    parser.add_argument("--rounds", type=int, default=4,
                        help="the duration is split into this many rounds, the servers alternating")
    parser.add_argument("--warmup", type=float, default=3, help="seconds of unrecorded load before each")
    parser.add_argument("--concurrency", type=int, default=16, help="open connections wrk keeps busy")
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers, both servers")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker, both servers")
    parser.add_argument("--postgres-url", default=os.environ.get("BENCH_POSTGRES_URL")
                        or os.environ.get("TEST_POSTGRES_URL") or DEFAULT_POSTGRES,
                        help="server where a fresh database is created for the run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the reports go")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark databases")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds-long run on a tiny data set (what the test suite runs)")
    args = parser.parse_args(argv)
    args.endpoints = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    unknown = sorted(set(args.endpoints) - set(ENDPOINTS))
    if unknown:
        parser.error(f"unknown endpoint {unknown[0]}; choose from {', '.join(ENDPOINTS)}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.smoke:
        args.rows, args.sqlite_rows = "3000", "3000"
        args.duration, args.warmup, args.concurrency, args.wrk_threads = 1, 0, 4, 1
        args.rounds = 2  # the alternation is exercised too
        args.workers, args.threads = 1, 2
    return args


def round_orders(names: list[str], rounds: int) -> list[list[str]]:
    """The servers' order in each round: A B, B A, A B, ... so slow drifts (checkpoints,
    other work on the machine) fall on both alike rather than on whichever runs first. Three or
    more take every place equally often, not only the ends: each rotation of the names, then the
    same reversed (A B C, C B A, B C A, A C B, ...), since a middle one would always run
    right after another (and under what that one left behind, an autovacuum it woke)."""
    if len(names) <= 2:
        return [names if number % 2 == 0 else names[::-1] for number in range(rounds)]
    orders = []
    for number in range(rounds):
        shift = (number // 2) % len(names)
        rotated = names[shift:] + names[:shift]
        orders.append(rotated if number % 2 == 0 else rotated[::-1])
    return orders


def sizes(spec: str) -> list[int]:
    return [int(part.replace("_", "")) for part in spec.split(",") if part.strip()]


class ProcessesCpu:
    """CPU seconds used by a changing set of processes, summed over the calls: each call adds
    what each listed process used since the call before (all it used, for one listed for the
    first time). A process that ended adds nothing more: summing the set's totals instead
    subtracted an ended process's whole life (an autovacuum worker's, a closed connection's)
    from the next difference, and made a run's CPU look smaller the busier PostgreSQL was."""

    def __init__(self, pids):
        self.pids = pids
        self.seen: dict[int, float] = {}
        self.total = 0.0

    def __call__(self) -> float:
        now = {pid: cpu_seconds(pid) for pid in self.pids()}
        self.total += sum(used - self.seen.get(pid, 0.0) for pid, used in now.items()
                          if used >= self.seen.get(pid, 0.0))
        self.seen = now
        return self.total


class Database:
    """A fresh database for one run: a new PostgreSQL database or a SQLite file, dropped after."""

    def __init__(self, kind: str, postgres_url: str, keep: bool):
        self.kind, self.keep = kind, keep
        if kind == "postgres":
            self.name = f"paydesk_bench_{datetime.now(UTC):%Y%m%d%H%M%S}_{uuid.uuid4().hex[:6]}"
            self.admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
            with self.admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{self.name}"'))
            self.url = make_url(postgres_url).set(database=self.name).render_as_string(hide_password=False)
        else:
            self.directory = Path(tempfile.mkdtemp(prefix="paydesk-bench-"))
            self.url = f"sqlite:///{self.directory / 'paydesk.db'}"
        self._backends = self._listed("datname = :name")
        self._cluster = self._listed("pid <> pg_backend_pid()")

    def backend_cpu(self) -> float:
        """CPU seconds of the PostgreSQL backends serving this database, counted from the first
        call (0 for SQLite)."""
        return self._backends()

    def cluster_cpu(self) -> float:
        """CPU seconds of every process pg_stat_activity lists, counted from the first call (0 for
        SQLite): every database's backends and the WAL writer, checkpointer and background writer,
        where the cost of writing more rows partly lands. Other databases' work counts too."""
        return self._cluster()

    def _listed(self, where: str):
        """A counter of the CPU of the processes pg_stat_activity lists under `where`."""
        def pids() -> list[int]:
            if self.kind != "postgres":
                return []
            with self.admin.connect() as conn:
                return conn.execute(text(f"SELECT pid FROM pg_stat_activity WHERE {where}"),
                                    {"name": self.name}).scalars().all()
        return ProcessesCpu(pids)

    def version(self) -> str:
        if self.kind == "postgres":
            with self.admin.connect() as conn:
                return conn.execute(text("SHOW server_version")).scalar()
        return sqlite3.sqlite_version

    def drop(self) -> None:
        if self.keep:
            print(f"kept {self.url}")
            return
        if self.kind == "postgres":
            with self.admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
            self.admin.dispose()
        else:
            shutil.rmtree(self.directory, ignore_errors=True)


def machine() -> dict:
    """What the figures were measured on."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    return {"nproc": os.cpu_count(), "ram_gib": round(mem_kib / 1024 / 1024, 1), "cpu": cpu,
            "kernel": platform.release(), "python": platform.python_version()}


def cpu_times() -> list[int]:
    """The machine's CPU time so far by kind (/proc/stat's first line, in clock ticks)."""
    return [int(ticks) for ticks in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


def stolen_share(before: list[int], after: list[int]) -> float:
    """The share of the machine's CPU time between two cpu_times() that its hypervisor gave to other
    machines (steal): a run with much of it measured a machine slower than it is, and unevenly."""
    spent = [b - a for a, b in zip(before, after)]
    return round(spent[7] / sum(spent), 3) if sum(spent) else 0.0


def commit() -> str:
    """The checked-out commit, marked when the tree has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" (with uncommitted changes)" if git("status", "--porcelain", "--", "app", "bench",
                                                        "migrations") else "")


def write_data_files(seeded: Seeded, directory: Path) -> dict[str, Path]:
    """What load.lua picks from: status numbers, refund targets, search terms (URL-encoded: a
    customer's name has a space, an e-mail an @)."""
    files = {"status": directory / "status.txt", "refund": directory / "refund.txt",
             "search": directory / "search.txt", "create": directory / "create.txt"}
    files["create"].write_text(f"{PAYSTACK_CARD[0]} {PAYSTACK_CARD[1]} 25.50\n")
    files["status"].write_text("\n".join(seeded.status_tx_nos) + "\n")
    files["refund"].write_text("\n".join(seeded.refund_targets) + "\n")
    files["search"].write_text("\n".join(quote(t, safe="") for terms in seeded.search_terms.values()
                                         for t in terms) + "\n")
    return files


def dashboard_cookie(base_url: str, email: str, password: str) -> tuple[str | None, str]:
    """Log in through the dashboard's form (with its CSRF token); the Cookie header, or None and why."""
    session = requests.Session()
    try:
        page = session.get(f"{base_url}/login", timeout=10)
    except requests.RequestException as error:
        return None, f"login page unreachable: {error}"
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page.text) or \
        re.search(r'value="([^"]+)"[^>]*name="csrf_token"', page.text)
    if page.status_code != 200 or not token:
        return None, f"no dashboard login form at /login (HTTP {page.status_code})"
    answer = session.post(f"{base_url}/login", data={"csrf_token": token.group(1), "email": email,
                                                     "password": password}, timeout=30)
    probe = session.get(f"{base_url}/transactions", params={"q": "ORD"}, timeout=30,
                        allow_redirects=False)
    if probe.status_code != 200:
        return None, (f"dashboard login or /transactions?q= failed (login HTTP {answer.status_code}, "
                      f"search HTTP {probe.status_code})")
    cookie = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
    return cookie, "measured over HTTP through the dashboard (/transactions?q=..., logged in)"


def run_size(kind: str, rows: int, args, work: Path) -> dict:
    """One database, one data set size: seed, serve both, drive every endpoint, time the search SQL."""
    database = Database(kind, args.postgres_url, args.keep)
    encryption_key = Fernet.generate_key().decode()
    servers = {}
    try:
        upgrade_database(database.url)
        print(f"[{kind} {rows:,}] seeding", flush=True)
        # Creates and refunds take the path production takes: a Paystack account's method, so each
        # commits its Pending row with its provider call due for a worker (none runs here:
        # bench/provider_path.py measures the calls).
        seeded = seed(database.url, rows, refund_method=PAYSTACK_CARD)
        connect_paystack(database.url, encryption_key, seeded.merchant_id, UNCALLED_PROVIDER)
        print(f"[{kind} {rows:,}] seeded in {seeded.seconds:.1f} s", flush=True)
        files = write_data_files(seeded, work)
        print(f"[{kind} {rows:,}] timing the search SQL", flush=True)
        search_sql = time_search(database.url, seeded.merchant_id, seeded.search_terms)
        # A demo (DEMO_MODE): the live payments it creates are the simulator's.
        env = {"DATABASE_URL": database.url, "SECRET_KEY": "bench-secret", "DEMO_MODE": "1",
               "BENCH_MERCHANT_ID": str(seeded.merchant_id), "PAYDESK_ENCRYPTION_KEY": encryption_key}
        servers["paydesk"] = start_gunicorn("paydesk", "app:create_app()", env, args.workers, args.threads,
                                            work)
        servers["baseline"] = start_gunicorn("baseline", "bench.baseline_app:create_app()", env,
                                             args.workers, args.threads, work)
        cookie, dashboard = dashboard_cookie(servers["paydesk"].url, seeded.user_email, seeded.user_password)
        endpoints, memory = {}, {name: [] for name in SERVERS}
        for endpoint in args.endpoints:
            measured = [name for name in SERVERS
                        if not (endpoint == "search" and name == "paydesk" and cookie is None)]

            def drive(name, seconds, tag):
                """One wrk run, then its backlog waited out; the result and the backlog's seconds."""
                # The CPU the request costs: the server's processes and, on PostgreSQL,
                # the backends serving this database (other databases' work excluded).
                server = servers[name]
                header = ("Cookie", cookie) if endpoint == "search" and name == "paydesk" else \
                    ("Authorization", f"Bearer {seeded.token}")
                result = run_wrk(server.url, endpoint, files.get(endpoint), tag, seconds,
                                 args.concurrency, args.wrk_threads,
                                 lambda: server.cpu_seconds() + database.backend_cpu(), header)
                # Requests wrk left queued are served before anything else is measured.
                return result, server.wait_until_idle()

            if args.warmup:
                for name in measured:
                    drive(name, args.warmup, f"w{uuid.uuid4().hex[:8]}")
            rounds = {name: [] for name in measured}
            drained = dict.fromkeys(measured, 0.0)
            for number, order in enumerate(round_orders(measured, args.rounds)):
                for name in order:
                    result, backlog = drive(name, args.duration / args.rounds,
                                            f"m{number}{uuid.uuid4().hex[:8]}")
                    rounds[name].append(result)
                    drained[name] += backlog
            endpoints[endpoint] = {name: None for name in SERVERS}
            for name in measured:
                result = combine(rounds[name]).as_dict()
                result["rounds"] = len(rounds[name])
                result["drain_seconds"] = round(drained[name], 1)
                endpoints[endpoint][name] = result
                memory[name].append({"after": endpoint, "workers": servers[name].worker_memory()})
                print(f"[{kind} {rows:,}] {endpoint:7} {name:8} {result['rps']:8.1f} req/s  "
                      f"p50 {result['p50_ms']:7.1f} ms  p99 {result['p99_ms']:7.1f} ms  "
                      f"failed {result['failed']}  backlog {result['drain_seconds']} s", flush=True)
        return {
            "rows": rows, "database_version": database.version(),
            "seed": {"seconds": seeded.seconds, "refunds": seeded.refunds,
                     "history_rows": seeded.history_rows, "merchants": len(MERCHANT_NAMES),
                     "refund_targets": len(seeded.refund_targets),
                     "method": "COPY (psycopg 3)" if kind == "postgres"
                     else "executemany, 20,000 rows per transaction"},
            "endpoints": endpoints, "memory": memory, "dashboard": dashboard,
            "search_sql": search_sql,
        }
    finally:
        for server in servers.values():
            server.stop()
        database.drop()


def run_webhook_delivery(kind: str, args, work: Path) -> dict:
    """bench/webhook_delivery.py (the webhooks work) when it exists; otherwise the gap, stated.

    It makes its own fresh database beside the URL it is given, so it runs once per database.
    """
    if importlib.util.find_spec("bench.webhook_delivery") is None:
        return {"status": "not measured: bench/webhook_delivery.py does not exist yet"}
    from . import webhook_delivery

    beside = args.postgres_url if kind == "postgres" else f"sqlite:///{work / 'webhooks.db'}"
    print(f"[{kind}] webhook delivery", flush=True)
    events = 20 if args.smoke else WEBHOOK_EVENTS
    return {"status": "measured", **webhook_delivery.run(beside, events, args.workers)}


def main(argv=None) -> None:
    args = parse_args(argv)
    wrk_path()
    kinds = ["postgres", "sqlite"] if args.db == "both" else [args.db]
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    reports = []
    for kind in kinds:
        spec = args.sqlite_rows if kind == "sqlite" and args.sqlite_rows else args.rows
        results = {
            "database": kind, "started_at": started.isoformat(timespec="seconds"),
            "machine": machine(), "commit": commit(),
            "load_average_before": [round(x, 2) for x in load_before],
            "settings": {"workers": args.workers, "threads": args.threads, "concurrency": args.concurrency,
                         "wrk_threads": args.wrk_threads, "duration": args.duration, "warmup": args.warmup,
                         "rounds": args.rounds,
                         "smoke": args.smoke},
            "sizes": [],
        }
        times_before = cpu_times()
        with tempfile.TemporaryDirectory(prefix="paydesk-bench-work-") as work:
            for rows in sizes(spec):
                results["sizes"].append(run_size(kind, rows, args, Path(work)))
            results["webhooks"] = run_webhook_delivery(kind, args, Path(work))
        results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        results["cpu_stolen"] = stolen_share(times_before, cpu_times())
        reports.append(results)
    for path in write_reports(reports, args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
