"""bench/overview.py in smoke mode on PostgreSQL and SQLite: every range timed from the daily totals'
primary key, the totals checked against the seeded transactions, a well-formed report; no timing
judged."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.overview import PAGE_RANGES, RANGES
from tests.support.databases import create_postgres_database, postgres_admin_url
from tests.support.servers import ROOT


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One smoke run of `python -m bench.overview` into a temporary folder."""
    _url, drop = create_postgres_database()  # skips (or fails, in CI) without PostgreSQL
    drop()
    out = tmp_path_factory.mktemp("overview-bench")
    finished = subprocess.run(
        [sys.executable, "-m", "bench.overview", "--smoke", "--db", "both",
         "--postgres-url", postgres_admin_url(), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return out


@pytest.mark.postgres
@pytest.mark.parametrize("database, index_used", [
    ("postgres", "using pk_daily_totals on daily_totals"),
    ("sqlite", "SEARCH daily_totals USING INDEX sqlite_autoindex_daily_totals_1"),
])
def test_smoke_run_times_every_range_from_the_daily_totals(report, database, index_used):
    [raw] = report.glob(f"*-overview-{database}.json")
    [size] = json.loads(raw.read_text())["sizes"]
    assert size["rows"] == 3000
    assert list(size["sql"]) == [str(days) for days in RANGES]
    assert list(size["page"]) == [str(days) for days in PAGE_RANGES]
    for measured in [*size["sql"].values(), *size["page"].values()]:
        assert measured["queries"] == 5 and 0 < measured["p50_ms"] <= measured["p95_ms"]
    assert all(index_used in sql["plan"] for sql in size["sql"].values()), size["sql"]
    assert 0 < size["sql"]["7"]["rows_in_range"] < size["sql"]["366"]["rows_in_range"]
    [markdown] = report.glob(f"*-overview-{database}.md")
    text = markdown.read_text()
    assert "| 90 days |" in text and "| 366 days |" in text
    assert size["folded_changes"] > 0 and "the totals matched the transactions" in text
