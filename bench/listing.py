"""`python -m bench.listing`: GET /api/v1/transactions' query at 1,000,000 rows, filter by filter.

It seeds a fresh PostgreSQL (or SQLite) database with bench.seed's data set (or reuses one given
by --database-url), then runs the API list's own query (app.store.listing.list_statuses, what
GET /transactions runs, without HTTP) for each class of filter a merchant's engineer sends,
first page and a later page, one query after another. Per class: p50/p95/p99 ms, rows found and
the access path the database chose. The baseline is the same query with no filter (the listing
index alone), measured in the same run.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from app.cli import upgrade_database
from app.payments.model import Caller, Kind, Mode, Status
from app.store.db import make_engine
from app.store.listing import STATUS_COLUMNS, TransactionFilter, list_statuses, reference_owner_of
from app.store.scope import scoped_to_mode
from app.store.tables import transactions

from .run import DEFAULT_POSTGRES, Database, commit, machine
from .search import percentile
from .seed import seed

LIMIT = 100  # the API's largest page: the slowest a client can ask for


def filter_classes(conn, merchant_id: int, rng: random.Random, per_class: int) -> dict[str, list]:
    """Per class of filter, `per_class` filters drawn from the merchant's own rows."""
    sample = conn.execute(
        select(transactions.c.reference, transactions.c.customer_email, transactions.c.created_at)
        .where(transactions.c.merchant_id == merchant_id, transactions.c.mode == "live",
               transactions.c.kind != "refund")
        .order_by(transactions.c.id.desc()).limit(20_000)).all()
    picks = [rng.choice(sample) for _ in range(per_class)]
    newest = max(row.created_at for row in sample)
    days = [newest - timedelta(days=rng.randrange(1, 300)) for _ in range(per_class)]
    statuses = list(Status)
    return {
        "no filter (baseline)": [TransactionFilter()] * per_class,
        "one status": [TransactionFilter(statuses=(rng.choice(statuses),)) for _ in range(per_class)],
        "two statuses": [TransactionFilter(statuses=tuple(rng.sample(statuses, 2))) for _ in range(per_class)],
        "kind": [TransactionFilter(kind=rng.choice(list(Kind))) for _ in range(per_class)],
        "currency and method": [TransactionFilter(currency="EUR", payment_method=rng.choice(
            ("card", "sepa-payout"))) for _ in range(per_class)],
        "status and kind": [TransactionFilter(statuses=(rng.choice((Status.FAILED, Status.PENDING)),),
                                              kind=Kind.PAYOUT) for _ in range(per_class)],
        "created range (one day)": [TransactionFilter(created_from=day, created_to=day + timedelta(days=1))
                                    for day in days],
        "amount range": [TransactionFilter(currency="EUR", amount_min_minor=low * 100,
                                           amount_max_minor=low * 100 + rng.choice((100, 10_000)))
                         for low in (rng.choice((5, 50, 500, 2000)) for _ in range(per_class))],
        "reference": [TransactionFilter(reference=pick.reference) for pick in picks],
        "customer e-mail": [TransactionFilter(customer_email=pick.customer_email.upper()) for pick in picks
                            if pick.customer_email],
    }


def time_listing(database_url: str, merchant_id: int, per_class: int, seed_number: int) -> dict:
    """Each class's filters run once each, first page then the page after it."""
    engine = make_engine(database_url)
    caller = Caller(merchant_id, Mode.LIVE, "bench")
    found = {}
    try:
        with engine.connect() as conn:
            classes = filter_classes(conn, merchant_id, random.Random(seed_number), per_class)
            for filters in classes.values():  # warm the caches
                for flt in filters[:3]:
                    list_statuses(conn, caller, flt, limit=LIMIT)
            for label, filters in classes.items():
                times, rows = [], []
                for flt in filters:
                    started = time.perf_counter()
                    page = list_statuses(conn, caller, flt, limit=LIMIT)
                    if page.older is not None:
                        page = list_statuses(conn, caller, flt, older_than=page.older, limit=LIMIT)
                        times.append((time.perf_counter() - started) * 1000 / 2)
                    else:
                        times.append((time.perf_counter() - started) * 1000)
                    rows.append(len(page.rows))
                found[label] = {"queries": len(times), "p50_ms": percentile(times, 0.5),
                                "p95_ms": percentile(times, 0.95), "p99_ms": percentile(times, 0.99),
                                "mean_rows": sum(rows) / len(rows), "plan": plan(conn, caller, filters[0])}
    finally:
        engine.dispose()
    return found


def plan(conn, caller: Caller, flt: TransactionFilter) -> str:
    """The access path the database chose for the class's first filter, in one line."""
    owner = reference_owner_of(conn, caller, flt.reference) if flt.reference is not None else None
    query = (select(*STATUS_COLUMNS).where(*scoped_to_mode(transactions, caller),
                                           *flt.conditions(reference_owner=owner))
             .order_by(transactions.c.created_at.desc(), transactions.c.id.desc()).limit(LIMIT + 1))
    compiled = query.compile(conn, compile_kwargs={"literal_binds": True})
    if conn.dialect.name == "postgresql":
        lines = conn.exec_driver_sql(f"EXPLAIN {compiled}").scalars().all()
        return " / ".join(line.strip().removeprefix("->  ").split("  (cost")[0] for line in lines
                          if "Scan" in line or "Sort" in line)
    return " / ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all())


def report(found: dict, rows: int, database: str) -> str:
    baseline = found["no filter (baseline)"]["p95_ms"]
    lines = [f"GET /api/v1/transactions' query, {database}, {rows:,} rows, limit {LIMIT}, first and next page",
             "", "| filter | queries | p50 ms | p95 ms | p99 ms | p95 / baseline | rows | access path |",
             "|---|---|---|---|---|---|---|---|"]
    for label, figures in found.items():
        lines.append(f"| {label} | {figures['queries']} | {figures['p50_ms']:.1f} | {figures['p95_ms']:.1f} | "
                     f"{figures['p99_ms']:.1f} | {figures['p95_ms'] / baseline:.1f}× | "
                     f"{figures['mean_rows']:.0f} | {figures['plan']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.listing", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)
    parser.add_argument("--database-url", help="an already seeded database (its merchant id with --merchant)")
    parser.add_argument("--merchant", type=int)
    parser.add_argument("--keep", action="store_true", help="keep the seeded database")
    parser.add_argument("--per-class", type=int, default=200)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON and Markdown (.md)")
    args = parser.parse_args(argv)
    database = None
    if args.database_url:
        url, merchant_id = args.database_url, args.merchant
    else:
        database = Database(args.db, args.postgres_url, args.keep)
        url = database.url
        upgrade_database(url)
        seeded = seed(url, args.rows)
        merchant_id = seeded.merchant_id
        print(f"seeded {args.rows:,} rows in {seeded.seconds:.0f} s (merchant {merchant_id})")
    try:
        found = time_listing(url, merchant_id, args.per_class, 20261127)
    finally:
        if database is not None:
            database.drop()
    text = report(found, args.rows, args.db)
    print(text)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(
            {"commit": commit(), "machine": machine(), "at": datetime.now(UTC).isoformat(timespec="seconds"),
             "rows": args.rows, "database": args.db, "found": found}, indent=2))
        args.out.with_suffix(".md").write_text(text + "\n")


if __name__ == "__main__":
    main()
