"""`python -m bench.request_log`: what writing the API request log costs API requests.

Issue 32 asks that the request log (and events) cost create and refund no more than 5% of their
throughput, measured both ways: the log batched by its writer thread (the default) and written
on the request's thread (REQUEST_LOG_FLUSH_MS=0). One PostgreSQL database, seeded as `make bench`
seeds it, and three Paydesk servers on it under the same gunicorn settings, told apart only by
their environment: the log off (REQUEST_LOG_ENABLED=0), batched, and on the request's thread.
Creates and refunds go through a Paystack account's method, the path production takes (no worker
runs: the provider is never called). wrk drives each server in turn, the order reversed every
round, so drifts on the machine fall on all three alike (`--variants off,batched` runs two;
`--fresh-servers` starts each server anew for its round; `--one-server` serves every variant from
one server whose log is switched between rounds, bench/switched_app.py, with an A/A variant, the
log off against itself, that shows the method's own spread). Each variant reports the rows the
log gained in its rounds, so a variant that writes none, or fewer than it answered, shows.
`--endpoints status,create,refund` adds status reads (the issue bounds create and refund only; a
read is the cheapest request, so the log's largest share); each result also gives the CPU a
request took, and the rounds' median ratio to the log off with its 95% interval and verdict
(bench/paired.py).

Events: on this path a create and a refund are answered Pending and write no event (a webhook, and
with it an event, is written when a status moves, by the worker that records the provider's
answer); the simulator's in-process refund writes its event in the statement that writes its
outbox row (docs/benchmarks.md, "Events on the write path").

Writes bench/results/<date>-request-log.json and .md.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.pool import NullPool

from app.cli import upgrade_database

from .load import combine, run_wrk, wrk_path
from .paired import summary
from .report import cpu_ms_per_request, write_json_and_markdown
from .run import (DEFAULT_POSTGRES, RESULTS, UNCALLED_PROVIDER, Database, commit, cpu_times, machine,
                  round_orders, stolen_share, write_data_files)
from .seed import PAYSTACK_CARD, connect_paystack, seed
from .servers import start_gunicorn

# Each server's name and what its environment adds.
VARIANTS = {
    "off": {"REQUEST_LOG_ENABLED": "0"},
    "batched": {},
    "on the request's thread": {"REQUEST_LOG_FLUSH_MS": "0"},
}
# --one-server: one server (bench/switched_app.py) for every variant, its log switched between
# rounds; what each variant writes in the switch's file. "off again" is the A/A check: the log
# off against itself, so its ratio shows the method's own spread.
SWITCHED = {"off": "0", "batched": "1", "off again": "0"}
# Seconds after the switch is written: every worker has read it (bench/switched_app.py polls at 0.1).
SWITCH_SETTLE = 0.5
# Seconds after a round for the writer's last batch (REQUEST_LOG_FLUSH_MS is 200) before its rows are counted.
FLUSH_WAIT = 0.5
ENDPOINTS = ("create", "refund")
# Status reads are logged too; the cheapest request, so the log's largest share of it.
CHOICES = ("status", "create", "refund")
LIMIT = 0.95  # the issue's bound: at least 95% of the throughput without the log
# Seconds of unrecorded load on a server started for one round (--fresh-servers): its pool
# filled and its statements prepared before the round counts. Over 32 rounds a server that noted
# each request and dropped it ran 5% faster than the log off's, doing more: a server's own speed
# (its processes' memory layout, hash seeds) can fall on every round of its variant. Started
# anew each round, it falls on one round and into the interval.
FRESH_WARMUP = 2.0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.request_log", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000, help="transactions seeded first")
    parser.add_argument("--duration", type=float, default=60, help="seconds of load per endpoint and server")
    parser.add_argument("--rounds", type=int, default=6, help="the duration is split into this many rounds")
    parser.add_argument("--warmup", type=float, default=5, help="seconds of unrecorded load per server first")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--postgres-url", default=os.environ.get("BENCH_POSTGRES_URL")
                        or os.environ.get("TEST_POSTGRES_URL") or DEFAULT_POSTGRES)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--endpoints", default=",".join(ENDPOINTS),
                        help=f"comma-separated, of {', '.join(CHOICES)}")
    parser.add_argument("--variants", help="comma-separated, of: " + "; ".join(VARIANTS)
                        + " (default: all; the log off always runs); with --one-server, of: "
                        + "; ".join(SWITCHED))
    parser.add_argument("--fresh-servers", action="store_true",
                        help="start each variant's server anew for every round (see FRESH_WARMUP)")
    parser.add_argument("--one-server", action="store_true",
                        help="serve every variant from one server, its log switched between rounds "
                             f"(variants: {', '.join(SWITCHED)}; see bench/switched_app.py)")
    parser.add_argument("--smoke", action="store_true", help="seconds-long run (what the test suite runs)")
    args = parser.parse_args(argv)
    args.endpoints = [name.strip() for name in args.endpoints.split(",") if name.strip()]
    unknown = set(args.endpoints) - set(CHOICES)
    if unknown:
        parser.error(f"unknown endpoints: {', '.join(sorted(unknown))}")
    known = SWITCHED if args.one_server else VARIANTS
    chosen = {name.strip() for name in (args.variants or ",".join(known)).split(",") if name.strip()} | {"off"}
    if chosen - set(known):
        parser.error(f"unknown variants: {', '.join(sorted(chosen - set(known)))}")
    if args.one_server and args.fresh_servers:
        parser.error("--one-server and --fresh-servers do not go together")
    args.variants = [name for name in known if name in chosen]
    if args.smoke:
        args.rows, args.duration, args.rounds, args.warmup = 300, 3, 3, 0
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    wrk_path()
    started = datetime.now(UTC)
    database = Database("postgres", args.postgres_url, keep=False)
    work = Path(tempfile.mkdtemp(prefix="paydesk-bench-request-log-"))
    key = Fernet.generate_key().decode()
    servers = {}
    started_servers: list[str] = []  # each server's variant, as it was started
    times_before = cpu_times()
    try:
        upgrade_database(database.url)
        print(f"seeding {args.rows:,} rows", flush=True)
        seeded = seed(database.url, args.rows, refund_method=PAYSTACK_CARD)
        connect_paystack(database.url, key, seeded.merchant_id, UNCALLED_PROVIDER)
        files = write_data_files(seeded, work)
        # Counts the log's rows between rounds; no connection kept open through them (NullPool).
        counting = create_engine(database.url, poolclass=NullPool)
        env = {"DATABASE_URL": database.url, "SECRET_KEY": "bench-secret", "DEMO_MODE": "1",
               "PAYDESK_ENCRYPTION_KEY": key}

        def start(name: str):
            started_servers.append(name)
            return start_gunicorn(name.replace(" ", "-").replace("'", ""), "app:create_app()",
                                  env | VARIANTS[name], args.workers, args.threads, work)

        switch = work / "request-log-switch"
        if args.one_server:
            turn(switch, SWITCHED["off"])
            started_servers.append("switched")
            shared = start_gunicorn("switched", "bench.switched_app:create_app()",
                                    env | {"REQUEST_LOG_SWITCH": str(switch)}, args.workers, args.threads, work)
            servers.update((name, shared) for name in args.variants)
        elif not args.fresh_servers:
            servers.update((name, start(name)) for name in args.variants)
        header = ("Authorization", f"Bearer {seeded.token}")
        results: dict = {}
        for endpoint in args.endpoints:
            def drive(name: str, seconds: float, counted: bool = False):
                server = servers[name]
                if args.one_server:
                    turn(switch, SWITCHED[name])
                    time.sleep(SWITCH_SETTLE)
                rows_before = logged_rows(counting) if counted else 0
                result = run_wrk(server.url, endpoint, files[endpoint], f"r{uuid.uuid4().hex[:8]}", seconds,
                                 args.concurrency, 2, lambda: server.cpu_seconds() + database.cluster_cpu(),
                                 header)
                server.wait_until_idle()
                time.sleep(FLUSH_WAIT)  # the writer's last batch
                if counted:
                    logged[name] += logged_rows(counting) - rows_before
                return result

            if args.warmup:
                for name in servers:
                    drive(name, args.warmup)
            rounds: dict[str, list] = {name: [] for name in args.variants}
            logged = dict.fromkeys(args.variants, 0)  # rows the log gained in each variant's rounds
            for order in round_orders(args.variants, args.rounds):
                for name in order:
                    if args.fresh_servers:
                        servers[name] = start(name)
                        drive(name, FRESH_WARMUP)
                    rounds[name].append(drive(name, args.duration / args.rounds, counted=True))
                    if args.fresh_servers:
                        servers.pop(name).stop()
            measured = {name: combine(runs).as_dict() | {"rounds": [r.rps for r in runs],
                                                         "logged": logged[name]}
                        for name, runs in rounds.items()}
            for name, result in measured.items():
                result["ratio_to_off"] = round(result["rps"] / measured["off"]["rps"], 3)
                # Each round's ratio to the log off's in the same round (measured next to it in
                # time), their median and its interval: a drift or a stall falls on one pair.
                paired = summary(result["rounds"], measured["off"]["rounds"], LIMIT)
                result["median_round_ratio"] = paired["median_ratio"]
                result["median_interval"], result["verdict"] = paired["median_interval"], paired["verdict"]
                result["cpu_ms"] = round(cpu_ms_per_request(result), 3)
                low, high = result["median_interval"]
                print(f"[{endpoint}] {name:24} {result['rps']:7.1f} req/s  ratio {result['ratio_to_off']:.3f}  "
                      f"rounds' median {result['median_round_ratio']:.3f} [{low:.3f}, {high:.3f}]  "
                      f"cpu {result['cpu_ms']:.3f} ms/req  "
                      f"p99 {result['p99_ms']:.1f} ms  failed {result['failed']}  logged {result['logged']}",
                      flush=True)
            results[endpoint] = measured
        report = {"started_at": started.isoformat(timespec="seconds"), "commit": commit(), "machine": machine(),
                  "database_version": database.version(), "settings": vars(args) | {"out": str(args.out)},
                  "endpoints": results, "cpu_stolen": stolen_share(times_before, cpu_times()),
                  "servers_started": len(started_servers)}
    finally:
        for server in {id(server): server for server in servers.values()}.values():  # one, shared
            server.stop()
        database.drop()
    for path in write_json_and_markdown(report, markdown(report), args.out, "request-log", started, args.smoke):
        print(f"wrote {path}")


def turn(switch: Path, state: str) -> None:
    """Write the switch's file whole at once (a worker's poll never reads it half-written)."""
    written = switch.with_suffix(".new")
    written.write_text(state)
    os.replace(written, switch)


def logged_rows(engine: Engine) -> int:
    """The rows in the request log now (every variant's rounds add to one table)."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM request_log")).scalar_one()


def markdown(report: dict) -> str:
    s = report["settings"]
    lines = [
        "# The request log's cost on API requests",
        "",
        f"Commit {report['commit']}, {report['started_at']}; {report['machine']['nproc']} cores, PostgreSQL "
        f"{report['database_version']}; gunicorn --workers {s['workers']} --threads {s['threads']} per server; "
        f"{s['rows']:,} rows; wrk at {s['concurrency']} connections, {s['duration']:.0f} s per endpoint and "
        f"server in {s['rounds']} rounds"
        f"{', each server started anew for its round' if s.get('fresh_servers') else ''}"
        f"{'; one server for every variant, its log switched between rounds' if s.get('one_server') else ''}; "
        f"CPU stolen {report['cpu_stolen']:.0%}.",
        "",
        "| endpoint | log | req/s | of the log off | rounds' median [95% interval] | CPU ms a request "
        "| log off's CPU / this | cores busy | p99 | rounds' req/s | rows logged | within 5% |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for endpoint, measured in report["endpoints"].items():
        off_cpu = measured["off"]["cpu_ms"]
        for name, result in measured.items():
            within = "" if name == "off" else result["verdict"]
            rounds = ", ".join(f"{rps:.0f}" for rps in result["rounds"])
            low, high = result["median_interval"]
            lines.append(f"| {endpoint} | {name} | {result['rps']:.1f} | {result['ratio_to_off']:.3f} | "
                         f"{result['median_round_ratio']:.3f} [{low:.3f}, {high:.3f}] | {result['cpu_ms']:.3f} | "
                         f"{off_cpu / result['cpu_ms']:.3f} | {result['server_cpu'] + result['generator_cpu']:.2f} | "
                         f"{result['p99_ms']:.1f} ms | {rounds} | {result.get('logged', 0):,} | {within} |")
    lines += ["", "CPU a request: the server's processes (the writer thread included) and every process of "
              "the PostgreSQL cluster (backends, WAL writer, checkpointer), over the requests answered. "
              "Cores busy: those processes and wrk. Where they are all busy (status reads), the log "
              "off's CPU over this is the throughput the log leaves; where they are not (creates and "
              "refunds wait on PostgreSQL's WAL flush at commit), req/s also moves with that wait. "
              "Rounds' median: the median over rounds of req/s over the log off's in the same round; "
              "its interval, a bootstrap's (bench/paired.py). Within 5%: met when the whole interval "
              "is at or above 0.95, missed when it is all below, undecided otherwise.",
              "", "Creates and refunds go through a Paystack account's method and are answered Pending; no "
              "worker runs, so no provider is called and no event is written on this path.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
