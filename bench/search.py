"""The dashboard's search by reference: its SQL for the baseline, and its server time measured query by query.

The timing calls the dashboard's own query (app.store.listing.list_transactions,
first page, live mode), so it measures exactly what /transactions?q= runs.
"""
from __future__ import annotations

import statistics
import time

from sqlalchemy import select

from app.payments.model import Caller, Mode
from app.store.db import make_engine
from app.store.listing import (
    PAGE_SIZE,
    TransactionFilter,
    customer_search,
    list_transactions,
    reference_search,
)
from app.store.tables import transactions


def search_query(merchant_id: int, mode: str, term: str, reference_ids: list[int] | None = None,
                 customer_ids: list[int] | None = None):
    """The first page of the dashboard's search: newest rows whose reference or customer contains
    the term, any case.

    The same SQL as list_transactions: reference, customer e-mail and name ILIKE '%term%'
    (pg_trgm on PostgreSQL), or on SQLite the ids its trigram indexes found (`reference_ids`,
    `customer_ids`, from reference_search and customer_search), or the term as a transaction
    number or provider id, newest first, one row more than a page.
    """
    return (
        select(transactions.c.id, transactions.c.created_at, transactions.c.tx_no, transactions.c.kind,
               transactions.c.status, transactions.c.amount_minor, transactions.c.currency,
               transactions.c.reference, transactions.c.decline_reason, transactions.c.payment_method)
        .where(transactions.c.merchant_id == merchant_id, transactions.c.mode == mode,
               *TransactionFilter(search=term).conditions(reference_ids, customer_ids))
        .order_by(transactions.c.created_at.desc(), transactions.c.id.desc())
        .limit(PAGE_SIZE + 1)
    )


def percentile(values: list[float], share: float) -> float:
    """The value below which `share` of the values fall (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


# Terms timed per class: SQLite reads the merchant's rows for most terms, so fewer there.
TERMS_PER_CLASS = {"postgresql": 100, "sqlite": 25}


def time_search(database_url: str, merchant_id: int, terms: dict[str, list[str]]) -> dict:
    """Each term searched once, one after another; per class p50/p95/p99 ms, rows found, plan."""
    engine = make_engine(database_url)
    per_class = TERMS_PER_CLASS[engine.dialect.name]
    terms = {label: class_terms[:per_class] for label, class_terms in terms.items()}
    found = {}
    caller = Caller(merchant_id, Mode.LIVE, "bench")
    every_time, every_rows = [], []
    try:
        with engine.connect() as conn:
            for term in [t for ts in terms.values() for t in ts[:5]]:  # warm the caches
                list_transactions(conn, caller, TransactionFilter(search=term))
            for label, class_terms in terms.items():
                times, rows = [], []
                for term in class_terms:
                    started = time.perf_counter()
                    page = list_transactions(conn, caller, TransactionFilter(search=term))
                    times.append((time.perf_counter() - started) * 1000)
                    rows.append(len(page.rows))
                found[label] = _summary(times, rows, class_terms[0], plan(conn, merchant_id, class_terms[0]))
                every_time += times
                every_rows += rows
    finally:
        engine.dispose()
    found["all terms"] = _summary(every_time, every_rows, "", "")
    return found


def _summary(times: list[float], rows: list[int], example: str, access_path: str) -> dict:
    return {"example": example, "queries": len(times), "p50_ms": percentile(times, 0.50),
            "p95_ms": percentile(times, 0.95), "p99_ms": percentile(times, 0.99),
            "mean_rows": statistics.fmean(rows), "plan": access_path}


def plan(conn, merchant_id: int, term: str) -> str:
    """The access path the database chose for the term, in one line."""
    compiled = search_query(merchant_id, Mode.LIVE.value, term, reference_search(conn, term),
                            customer_search(conn, term)).compile(
        conn, compile_kwargs={"literal_binds": True})
    if conn.dialect.name == "postgresql":
        lines = conn.exec_driver_sql(f"EXPLAIN {compiled}").scalars().all()
        return " / ".join(line.strip().removeprefix("->  ").split("  (cost")[0] for line in lines
                          if "Scan" in line)
    rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
    return " / ".join(row[-1] for row in rows)
