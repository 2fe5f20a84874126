"""The benchmark in smoke mode on PostgreSQL and SQLite: a well-formed report, no timing judged."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.report import ENDPOINT_TITLES
from tests.support.databases import create_postgres_database, postgres_admin_url
from tests.support.servers import ROOT

SERVERS = ("paydesk", "baseline")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One smoke run of `python -m bench.run` into a temporary folder."""
    _url, drop = create_postgres_database()  # skips (or fails, in CI) without PostgreSQL
    drop()
    out = tmp_path_factory.mktemp("bench")
    finished = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--db", "both",
         "--postgres-url", postgres_admin_url(), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return out


@pytest.mark.postgres
@pytest.mark.parametrize("database", ["postgres", "sqlite"])
def test_smoke_run_measures_every_endpoint_on_both_servers_without_failures(report, database):
    [raw] = report.glob(f"*-{database}.json")
    results = json.loads(raw.read_text())
    [size] = results["sizes"]
    assert size["rows"] == 3000
    assert set(size["endpoints"]) == set(ENDPOINT_TITLES)
    for endpoint, measured in size["endpoints"].items():
        for server in SERVERS:
            assert measured[server] is not None, (endpoint, server, size["dashboard"])
            assert measured[server]["requests"] > 0, (endpoint, server)
            assert measured[server]["failed"] == 0, (endpoint, server)
    for server in SERVERS:
        assert [s["after"] for s in size["memory"][server]] == list(ENDPOINT_TITLES)
        assert all(w["peak_rss_mib"] > 0 for s in size["memory"][server] for w in s["workers"])
    assert set(size["search_sql"]) == {"whole reference", "8 characters", "5 characters",
                                       "common prefix", "no match", "customer e-mail",
                                       "customer name", "all terms"}
    assert all(t["queries"] > 0 for t in size["search_sql"].values())
    assert results["webhooks"]["status"].startswith(("measured", "not measured"))


@pytest.mark.postgres
@pytest.mark.parametrize("database", ["postgres", "sqlite"])
def test_smoke_run_writes_a_markdown_table_and_a_png_chart(report, database):
    [markdown] = report.glob(f"*-{database}.md")
    text = markdown.read_text()
    assert text.startswith("# Paydesk benchmark on ")
    assert "- Machine: " in text and "- Commit: " in text and "- Load average" in text
    header = next(line for line in text.splitlines() if line.startswith("| Endpoint | Paydesk req/s"))
    for title in ENDPOINT_TITLES.values():
        row = next(line for line in text.splitlines() if line.startswith(f"| {title} |"))
        assert row.count("|") == header.count("|"), row
        assert "not measured" not in row, row
    [chart] = report.glob(f"*-{database}.png")
    assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert f"]({chart.name})" in text


@pytest.mark.postgres
def test_smoke_run_puts_both_databases_side_by_side(report):
    [summary] = report.glob("*-summary.md")
    text = summary.read_text()
    assert "PostgreSQL (3,000 rows) Paydesk req/s" in text and "SQLite (3,000 rows) Paydesk req/s" in text
    for title in ENDPOINT_TITLES.values():
        assert f"| {title} |" in text


def profile_command(out, *options: str) -> list[str]:
    """`python -m bench.profile` with `options` on a small data set, its figures written to `out`."""
    _url, drop = create_postgres_database()  # skips (or fails, in CI) without PostgreSQL
    drop()
    return [sys.executable, "-m", "bench.profile", "--rows", "3000", "--requests", "40", "--rounds", "2",
            "--top", "3", "--postgres-url", postgres_admin_url(), "--json", str(out), *options]


def run(command: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.postgres
def test_profile_measures_paydesk_the_baseline_and_the_duties_apps(tmp_path):
    """`python -m bench.profile --path simulator --with-duties` on a small data set: every app
    answers each request it is given with 200 (the run stops otherwise); the duties apps serve
    create and refund only."""
    out = tmp_path / "profile.json"
    finished = run(profile_command(out, "--path", "simulator", "--with-duties"))
    assert finished.returncode == 0, finished.stdout + finished.stderr
    found = json.loads(out.read_text())
    assert set(found["paydesk"]) == set(found["baseline"]) == {"status", "create", "refund", "banks"}
    assert set(found["duties-sqlalchemy"]) == {"create", "refund"}
    assert found["duties-sqlalchemy"]["refund"]["round_trips"] == 3  # read, reserve + write, answer
    # read; reserve + write + answer, the simulator answering in process (a statement prepared
    # by a connection during the run is one more round trip)
    assert round(found["paydesk"]["refund"]["round_trips"]) == 2
    assert "duties-sqlalchemy" in finished.stdout


@pytest.mark.postgres
def test_profile_takes_the_production_path_by_default(tmp_path):
    """`python -m bench.profile` creates and refunds through a Paystack account's method, as `make
    bench` does: the refund is one statement (reserve, Pending refund, its provider call due), no
    provider answer inside the request; the duties app, which mirrors the simulator's path, is
    refused beside it."""
    out = tmp_path / "profile.json"
    command = profile_command(out)
    finished = run(command)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    found = json.loads(out.read_text())
    assert found["path"] == "production"
    assert round(found["paydesk"]["refund"]["statements"]) == 1
    assert round(found["paydesk"]["create"]["statements"]) == 1
    assert "Traceback" not in finished.stderr  # the request log is written before the database goes
    refused = run([*command, "--with-duties"], timeout=60)
    assert refused.returncode == 2
    assert "--with-duties mirrors the simulator's path: add --path simulator" in refused.stderr
