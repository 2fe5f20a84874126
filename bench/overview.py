"""`python -m bench.overview`: how long the Overview's sums take, per range, on the benchmark data set.

For each database and data set size: a fresh database, migrated and seeded as `bench.run`
seeds it (five merchants over the last year, the first holding 40% of the rows); then, for
each range (the page's 7, 30 and 90-day presets and the longest custom range, 366 days):

- the SQL: app.store.overview.overview(), exactly what the page calls, run one query at a
  time, each range ending on a different day of the seeded year (drawn with a fixed seed);
- the page: GET /overview?days=N through the Flask test client, signed in as a finance user
  (SQL, charts and template; no HTTP server, no network);

p50/p95/p99 in milliseconds, the rows the range holds and the access path the database chose.
Reports: bench/results/<date>-overview-<db>.md and .json.

A 1,000,000-row run (`--rows 1000000`) needs about 2 minutes of seeding on PostgreSQL (COPY) and
about 1 GB of disk for the database; SQLite's seeding takes longer (executemany).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlalchemy import event, func, select

from app import create_app
from app.cli import upgrade_database
from app.config import Config
from app.passwords import hasher_for
from app.payments.model import Caller, Mode
from app.store.daily_totals import check_daily_totals, fold_changes
from app.store.db import make_engine
from app.store.merchants import create_user
from app.store.overview import overview
from app.store.unit_of_work import UnitOfWork
from app.store.tables import transactions

from .run import DEFAULT_POSTGRES, RESULTS, Database, commit, machine, sizes
from .search import percentile
from .seed import seed

RANGES = (7, 30, 90, 366)
PAGE_RANGES = (7, 30, 90)  # the presets; a custom range's page is the same work as its SQL
FINANCE_EMAIL = "finance@bench.test"
FINANCE_PASSWORD = "paydesk-bench-finance"
TARGET_P95_MS = 200
_CSRF = re.compile(r'name="csrf_token"[^>]*value="([^"]+)"')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.overview", description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("postgres", "sqlite", "both"), default="both")
    parser.add_argument("--rows", default="10000", help="data set sizes, comma-separated (default %(default)s)")
    parser.add_argument("--queries", type=int, default=100, help="timed queries per range (default %(default)s)")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES,
                        help="server where a fresh database is created for the run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the reports go")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark databases")
    parser.add_argument("--smoke", action="store_true", help="a tiny data set and a few queries (the test suite's)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.queries = "3000", 5
    return args


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _summary(times: list[float]) -> dict:
    return {"queries": len(times), "p50_ms": round(percentile(times, 0.50), 2),
            "p95_ms": round(percentile(times, 0.95), 2), "p99_ms": round(percentile(times, 0.99), 2)}


def time_sql(database: Database, caller: Caller, today: date, queries: int) -> dict:
    """Per range: the SQL's times, ranges ending on days drawn across the seeded year.

    On PostgreSQL also the CPU time the database's backends spent per query: unlike the
    wall-clock times, it hardly grows when other work shares the machine's cores.
    """
    engine = make_engine(database.url)
    rng = random.Random(20261125)
    found = {}
    try:
        with engine.connect() as conn:
            for days in RANGES:
                ends = [today - timedelta(days=rng.randrange(0, max(1, 366 - days))) for _ in range(queries)]
                for end in ends[:5]:  # warm the caches
                    overview(conn, caller, end - timedelta(days=days - 1), end)
                cpu_before = database.backend_cpu()
                times = [_timed(lambda end=end: overview(conn, caller, end - timedelta(days=days - 1), end))
                         for end in ends]
                backend_cpu_ms = (database.backend_cpu() - cpu_before) / len(ends) * 1000
                first = today - timedelta(days=days - 1)
                found[str(days)] = {**_summary(times), "backend_cpu_ms": round(backend_cpu_ms, 2),
                                    "rows_in_range": rows_in_range(conn, caller, first, today),
                                    "plan": plan(conn, caller, first, today)}
    finally:
        engine.dispose()
    return found


def rows_in_range(conn, caller: Caller, first: date, last: date) -> int:
    """The caller's transactions created in the range ending today (payouts too)."""
    start = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(last + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return conn.execute(select(func.count()).where(
        transactions.c.merchant_id == caller.merchant_id, transactions.c.mode == caller.mode.value,
        transactions.c.created_at >= start, transactions.c.created_at < end)).scalar_one()


def plan(conn, caller: Caller, first: date, last: date) -> str:
    """The access paths of the Overview's queries, in one line."""
    statements = []

    def capture(_conn, _cursor, statement, parameters, _context, _many):
        statements.append((statement, parameters))

    event.listen(conn, "before_cursor_execute", capture)
    try:
        overview(conn, caller, first, last)
    finally:
        event.remove(conn, "before_cursor_execute", capture)
    # Replayed as overview() sent them (its planner settings too), each query explained: the
    # figures' query, then the settlements' fees.
    found = []
    for statement, parameters in statements:
        if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
            conn.exec_driver_sql(statement, parameters)
        elif conn.dialect.name == "postgresql":
            lines = conn.exec_driver_sql(f"EXPLAIN {statement}", parameters).scalars().all()
            found.append(" / ".join(line.strip().removeprefix("->  ").split("  (cost")[0] for line in lines
                                    if "Scan" in line or "Aggregate" in line or "Sort" in line))
        else:
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
            found.append(" / ".join(row[-1] for row in rows))
    return " | ".join(found)


def time_page(database_url: str, merchant_id: int, queries: int) -> dict:
    """Per preset: GET /overview?days=N through the test client, signed in as a finance user."""
    engine = make_engine(database_url)
    try:
        with UnitOfWork(engine) as uow:
            create_user(uow.conn, merchant_id, FINANCE_EMAIL, "finance",
                        hasher_for("standard").hash(FINANCE_PASSWORD))
            uow.commit()
    finally:
        engine.dispose()
    app = create_app(Config(DATABASE_URL=database_url, SECRET_KEY="bench-secret"))
    client = app.test_client()
    token = _CSRF.search(client.get("/login").get_data(as_text=True)).group(1)
    signed_in = client.post("/login", data={"csrf_token": token, "email": FINANCE_EMAIL,
                                            "password": FINANCE_PASSWORD})
    assert signed_in.status_code == 303, signed_in.get_data(as_text=True)
    found = {}
    try:
        for days in PAGE_RANGES:
            def get(days=days):
                answer = client.get(f"/overview?days={days}")
                assert answer.status_code == 200, answer.status_code
            for _ in range(5):
                get()
            found[str(days)] = _summary([_timed(get) for _ in range(queries)])
    finally:
        app.extensions["paydesk.engine"].dispose()
    return found


def fold_everything(database_url: str) -> int:
    """Fold the seeding's change rows into the daily totals, as the worker's rounds would, and
    check the totals against the transactions (so the timed figures are the right ones)."""
    engine = make_engine(database_url)
    folded = 0
    try:
        while batch := _fold_once(engine):
            folded += batch
        with engine.connect() as conn:
            mismatches = check_daily_totals(conn)
        assert not mismatches, f"daily totals do not match the transactions: {mismatches[:3]}"
        return folded
    finally:
        engine.dispose()


def _fold_once(engine) -> int:
    with UnitOfWork(engine) as uow:
        batch = fold_changes(uow.conn)
        uow.commit()
    return batch


def run_size(kind: str, rows: int, args) -> dict:
    """One database, one data set size: seed, then time the SQL and the page per range."""
    database = Database(kind, args.postgres_url, args.keep)
    try:
        upgrade_database(database.url)
        print(f"[overview {kind} {rows:,}] seeding", flush=True)
        seeded = seed(database.url, rows)
        print(f"[overview {kind} {rows:,}] seeded in {seeded.seconds:.1f} s", flush=True)
        fold_started = time.perf_counter()
        folded = fold_everything(database.url)
        fold_seconds = time.perf_counter() - fold_started
        print(f"[overview {kind} {rows:,}] folded {folded:,} changes in {fold_seconds:.1f} s", flush=True)
        caller = Caller(seeded.merchant_id, Mode.LIVE, "bench")
        sql = time_sql(database, caller, datetime.now(UTC).date(), args.queries)
        page = time_page(database.url, seeded.merchant_id, args.queries)
        for days, measured in sql.items():
            print(f"[overview {kind} {rows:,}] {days:>3} days  {measured['rows_in_range']:>8,} rows  "
                  f"SQL p95 {measured['p95_ms']:7.2f} ms  backend CPU {measured['backend_cpu_ms']:7.2f} ms"
                  + (f"  page p95 {page[days]['p95_ms']:7.2f} ms" if days in page else ""), flush=True)
        return {"rows": rows, "database_version": database.version(),
                "seed_seconds": round(seeded.seconds, 1), "folded_changes": folded,
                "fold_seconds": round(fold_seconds, 1), "sql": sql, "page": page}
    finally:
        database.drop()


def markdown(results: dict) -> str:
    """The report: one table per data set size."""
    name = {"postgres": "PostgreSQL", "sqlite": "SQLite"}[results["database"]]
    lines = [f"# Overview benchmark on {name}", "",
             f"- Started: {results['started_at']}", f"- Commit: {results['commit']}",
             f"- Machine: {results['machine']['nproc']} CPUs, {results['machine']['ram_gib']} GiB, "
             f"{results['machine']['cpu']}, Python {results['machine']['python']}",
             f"- Load average before and after: {results['load_average_before']} / "
             f"{results['load_average_after']} (other work on the machine stretches wall-clock times; "
             "the database CPU per query is hardly affected)",
             f"- Target: p95 under {TARGET_P95_MS} ms on PostgreSQL at 1,000,000 rows",
             "- SQL: app.store.overview.overview(), one query at a time, ranges ending on days drawn "
             "across the seeded year. Page: GET /overview?days=N through the Flask test client "
             "(SQL, charts, template), ranges ending today.", ""]
    for size in results["sizes"]:
        lines += [f"## {size['rows']:,} rows ({name} {size['database_version']}, seeded in "
                  f"{size['seed_seconds']} s; the worker's fold of its {size['folded_changes']:,} "
                  f"daily-total changes took {size['fold_seconds']} s, and the totals matched the "
                  "transactions)", "",
                  "| Range | Rows in range | SQL p50 ms | SQL p95 ms | SQL p99 ms | DB CPU ms/query | Page p50 ms | Page p95 ms | Access path |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for days, sql in size["sql"].items():
            page = size["page"].get(days)
            page_cells = f"{page['p50_ms']} | {page['p95_ms']}" if page else "– | –"
            lines.append(f"| {days} days | {sql['rows_in_range']:,} | {sql['p50_ms']} | {sql['p95_ms']} | "
                         f"{sql['p99_ms']} | {sql['backend_cpu_ms'] or '–'} | {page_cells} | {sql['plan']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    kinds = ["postgres", "sqlite"] if args.db == "both" else [args.db]
    started = datetime.now(UTC)
    args.out.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        results = {"database": kind, "started_at": started.isoformat(timespec="seconds"),
                   "machine": machine(), "commit": commit(), "queries_per_range": args.queries,
                   "load_average_before": [round(x, 2) for x in os.getloadavg()]}
        results["sizes"] = [run_size(kind, rows, args) for rows in sizes(args.rows)]
        results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        stem = args.out / f"{started:%Y-%m-%d}-overview-{kind}"
        stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        stem.with_suffix(".md").write_text(markdown(results))
        print(f"wrote {stem}.md and .json")


if __name__ == "__main__":
    main()
