"""The request log's cost benchmark in smoke mode: three servers told apart by their environment,
each endpoint (status reads too) measured on each without a failed request, a report with the issue's bound; no
timing judged."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.request_log import CHOICES, SWITCHED, VARIANTS
from tests.support.databases import create_postgres_database, postgres_admin_url
from tests.support.servers import ROOT


def _smoke(tmp_path, *options: str) -> tuple[dict, str]:
    """`python -m bench.request_log --smoke` with these options: its JSON report and its markdown."""
    _url, drop = create_postgres_database()  # skips (or fails, in CI) without PostgreSQL
    drop()
    finished = subprocess.run(
        [sys.executable, "-m", "bench.request_log", "--smoke", "--postgres-url", postgres_admin_url(),
         "--out", str(tmp_path), *options],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    [raw] = tmp_path.glob("*-request-log-smoke.json")
    [markdown] = tmp_path.glob("*-request-log-smoke.md")
    return json.loads(raw.read_text()), markdown.read_text()


@pytest.mark.postgres
def test_each_variant_is_measured_on_each_endpoint(tmp_path):
    report, markdown = _smoke(tmp_path, "--endpoints", ",".join(CHOICES))
    measured = report["endpoints"]
    assert set(measured) == set(CHOICES)
    for endpoint in CHOICES:
        assert set(measured[endpoint]) == set(VARIANTS)
        for variant, result in measured[endpoint].items():
            assert result["requests"] > 0 and result["failed"] == 0, (endpoint, variant)
            assert result["cpu_ms"] > 0, (endpoint, variant)
        assert measured[endpoint]["off"]["ratio_to_off"] == 1.0
        assert measured[endpoint]["off"]["logged"] == 0
        assert measured[endpoint]["batched"]["logged"] >= measured[endpoint]["batched"]["requests"]
        batched = measured[endpoint]["batched"]
        low, high = batched["median_interval"]
        assert low <= batched["median_round_ratio"] <= high
        assert batched["verdict"] in ("met", "missed", "undecided")
    assert "| create | batched |" in markdown


@pytest.mark.postgres
def test_fresh_servers_start_each_variants_server_for_each_round(tmp_path):
    report, markdown = _smoke(tmp_path, "--endpoints", "create", "--variants", "batched", "--fresh-servers")
    measured = report["endpoints"]["create"]
    assert set(measured) == {"off", "batched"}  # the log off always runs, to compare with
    assert report["servers_started"] == 2 * report["settings"]["rounds"]
    for variant, result in measured.items():
        assert len(result["rounds"]) == report["settings"]["rounds"], variant
        assert result["requests"] > 0 and result["failed"] == 0, variant
    assert "each server started anew for its round" in markdown


@pytest.mark.postgres
def test_one_server_switches_its_log_between_rounds(tmp_path):
    """--one-server: every variant on one server; the log writes in the batched rounds only, one
    row for each request, and the A/A variant ("off again") writes none."""
    report, markdown = _smoke(tmp_path, "--endpoints", "create", "--one-server", "--warmup", "1")
    measured = report["endpoints"]["create"]
    assert list(measured) == list(SWITCHED)
    assert report["servers_started"] == 1
    assert measured["off"]["logged"] == measured["off again"]["logged"] == 0
    batched = measured["batched"]
    assert batched["requests"] > 0 and batched["failed"] == 0
    assert batched["logged"] >= batched["requests"]  # and those wrk left in flight at its stop
    assert "its log switched between rounds" in markdown
