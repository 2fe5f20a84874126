"""The production-path benchmark in smoke mode: every phase measured, nothing failed, the breaker
opened on the hanging provider; no timing judged."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.databases import create_postgres_database, postgres_admin_url
from tests.support.servers import ROOT


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One smoke run of `python -m bench.provider_path` into a temporary folder."""
    _url, drop = create_postgres_database()  # skips (or fails, in CI) without PostgreSQL
    drop()
    out = tmp_path_factory.mktemp("bench-provider-path")
    finished = subprocess.run(
        [sys.executable, "-m", "bench.provider_path", "--smoke", "--postgres-url", postgres_admin_url(),
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return out


@pytest.mark.postgres
def test_every_phase_is_measured_and_every_create_reached_the_provider(report):
    [raw] = report.glob("*-provider-path-smoke.json")
    phases = json.loads(raw.read_text())["phases"]
    assert phases["status_alone"]["requests"] > 0 and phases["status_alone"]["failed"] == 0
    paced = phases["paced"]
    assert paced["creates"]["sent"] == paced["creates"]["answered_2xx"] > 0
    assert paced["hand_off"]["count"] == paced["creates"]["sent"]  # each one's call was received
    assert paced["hand_off"]["not_received"] == 0
    assert paced["status_reads"]["failed"] == 0
    hang = phases["hang"]
    assert hang["creates"]["sent"] == hang["creates"]["answered_2xx"]  # answered while Paystack hangs
    assert hang["breaker"]["state"] == "open"
    for endpoint in ("create", "refund"):
        for name, rounds in phases["throughput"][endpoint]["rounds"].items():
            assert all(r["requests"] > 0 and r["failed"] == 0 for r in rounds), (endpoint, name)
            # The node's processes and the fake provider's, each counted apart.
            assert all(r["worker_cpu"] >= 0 and r["provider_cpu"] >= 0 for r in rounds), (endpoint, name)
        measured = phases["throughput"][endpoint]
        assert measured["ratio"] > 0
        low, high = measured["median_interval"]
        assert low <= measured["median_ratio"] <= high
        assert measured["verdict"] in ("met", "missed", "undecided")


@pytest.mark.postgres
def test_the_report_states_each_must_hold_line(report):
    [markdown] = report.glob("*-provider-path-smoke.md")
    text = markdown.read_text()
    assert text.startswith("# Production path: Paystack on loopback at 400 ms")
    for line in ("creates/s through Paystack", "status p99 beside", "hand-off p50 < 50 ms",
                 "hand-off p99 < 500 ms", "hanging provider: the breaker opens"):
        assert line in text, line
