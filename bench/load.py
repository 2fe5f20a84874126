"""The load generator: wrk (Debian's /usr/bin/wrk) driven by load.lua, with its own CPU use measured."""
from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

LUA = Path(__file__).resolve().parent / "load.lua"


@dataclass
class LoadResult:
    """One wrk run against one endpoint of one server."""

    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    failed: int  # non-2xx/3xx answers, connection errors and timeouts
    server_cpu: float  # cores the server (and its database backends) used on average during the run
    generator_cpu: float  # cores wrk used on average during the run

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return dict(self.__dict__)


def combine(rounds: list[LoadResult]) -> LoadResult:
    """Rounds of one server on one endpoint as one result.

    Requests, failures and CPU add up over the rounds' time; p50 and p90 are the median of
    the rounds' values (wrk gives percentiles, not the latencies to merge), p99 and max the worst.
    """
    seconds = sum(r.seconds for r in rounds)
    requests = sum(r.requests for r in rounds)
    return LoadResult(
        requests=requests, seconds=seconds, rps=requests / seconds,
        p50_ms=statistics.median(r.p50_ms for r in rounds),
        p90_ms=statistics.median(r.p90_ms for r in rounds),
        p99_ms=max(r.p99_ms for r in rounds), max_ms=max(r.max_ms for r in rounds),
        failed=sum(r.failed for r in rounds),
        server_cpu=sum(r.server_cpu * r.seconds for r in rounds) / seconds,
        generator_cpu=sum(r.generator_cpu * r.seconds for r in rounds) / seconds,
    )


def wrk_path() -> str:
    """The wrk binary; the benchmark needs it."""
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk)")
    return found


def run_wrk(url: str, endpoint: str, data_file: Path | None, tag: str, seconds: float,
            connections: int, threads: int, server_cpu, header: tuple[str, str] | None = None) -> LoadResult:
    """Drive one endpoint for `seconds` at a fixed number of connections; server_cpu() reads CPU seconds."""
    command = [wrk_path(), "--threads", str(threads), "--connections", str(connections),
               "--duration", f"{max(1, round(seconds))}s", "--timeout", "10s", "--script", str(LUA), url,
               "--", endpoint, str(data_file) if data_file else "-", tag]
    if header:
        command += list(header)
    before_children = _children_cpu()
    before_server = server_cpu()
    finished = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    server_used = server_cpu() - before_server
    generator_used = _children_cpu() - before_children
    line = next((l for l in finished.stdout.splitlines() if l.startswith("BENCH_JSON ")), None)
    if finished.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({finished.returncode}): {finished.stderr or finished.stdout}")
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    elapsed = raw["duration_us"] / 1e6
    failed = sum(raw[k] for k in ("errors_connect", "errors_read", "errors_write", "errors_status",
                                  "errors_timeout"))
    return LoadResult(
        requests=raw["requests"], seconds=elapsed, rps=raw["requests"] / elapsed,
        p50_ms=raw["p50_us"] / 1000, p90_ms=raw["p90_us"] / 1000, p99_ms=raw["p99_us"] / 1000,
        max_ms=raw["max_us"] / 1000, failed=failed,
        server_cpu=server_used / elapsed, generator_cpu=generator_used / elapsed,
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
