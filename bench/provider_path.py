"""`python -m bench.provider_path`: the production path, a Paystack account behind a network.

One node as production runs it (gunicorn with the README's workers and threads, `flask worker`,
PostgreSQL), a merchant whose Paystack account points at bench/provider_fake.py on loopback,
and the provider's latency set per phase:

1. status reads alone (8 connections);
2. creates through Paystack paced at 100/s while the same status reads run: status p50/p99
   beside them, and the hand-off (the transaction's creation to Paystack receiving its
   initialize) p50/p99, from the provider's own arrival times;
3. the same with a Paystack that hangs: status p50/p99, and whether the breaker opened;
4. creates and refunds at 64 connections, through the simulator and through Paystack in
   alternating rounds: requests per second, and the ratio the issue asks for.

Provider calls in flight (one worker process) are sampled by the provider every 50 ms.
Writes bench/results/<date>-provider-path.json and .md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests
from cryptography.fernet import Fernet
from sqlalchemy import func, insert, select, update

from app.cli import upgrade_database
from app.store.db import make_engine
from app.store.tables import provider_accounts, provider_calls, transactions

from .load import run_wrk, wrk_path
from .paired import summary
from .report import write_json_and_markdown
from .run import DEFAULT_POSTGRES, RESULTS, Database, commit, cpu_times, machine, stolen_share
from .seed import PAYSTACK_CARD, connect_paystack, seed
from .servers import ROOT, autogroup_nice, cpu_seconds, free_port, nice_value, start_gunicorn

PAYSTACK_METHOD = (PAYSTACK_CARD[0], PAYSTACK_CARD[1], "25.50")
SIMULATOR_METHOD = ("card", "EUR", "25.50")
REFUND_TARGETS = 500
PROVIDER_NICENESS = 10
REFUND_TARGET_MINOR = 100_000_000_00  # 100,000,000.00 NGN: chipped 0.01 per refund
CREATE_RATIO = 0.8  # the issue's bound: creates through Paystack at least 0.8 of the simulator's


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.provider_path", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000, help="transactions seeded first")
    parser.add_argument("--latency", type=float, default=0.4, help="the provider's seconds per answer")
    parser.add_argument("--rate", type=float, default=100, help="paced creates per second (phases 2, 3)")
    parser.add_argument("--duration", type=float, default=20, help="seconds of each measured load")
    parser.add_argument("--hang-duration", type=float, default=45,
                        help="seconds of phase 3 (longer than the read timeout, so the breaker can open)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per server in phase 4")
    parser.add_argument("--round-duration", type=float, default=10, help="seconds of each round of phase 4")
    parser.add_argument("--status-connections", type=int, default=8)
    parser.add_argument("--connections", type=int, default=64, help="connections of phase 4's load")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--read-timeout", type=float, default=30, help="PROVIDER_READ_TIMEOUT of the node")
    parser.add_argument("--postgres-url", default=os.environ.get("BENCH_POSTGRES_URL")
                        or os.environ.get("TEST_POSTGRES_URL") or DEFAULT_POSTGRES)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long run (what the test suite runs)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.duration, args.hang_duration, args.rounds, args.round_duration = 300, 2, 4, 1, 2
        args.rate, args.connections, args.read_timeout = 20, 8, 1
    return args


class Provider:
    """bench/provider_fake.py in a process of its own."""

    def __init__(self, work: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # At a lower CPU priority: Paystack runs on its own machines, not on the node measured.
        # With autogroups on (as on the benchmark's machine) its session of its own makes the nice
        # count for nothing against the node. Its autogroup is not niced: its arrival stamps end
        # the hand-off, and would then wait behind the node's own work.
        self.process = subprocess.Popen(["nice", "-n", str(PROVIDER_NICENESS), sys.executable, "-m",
                                         "bench.provider_fake", "--port", str(self.port)],
                                        cwd=ROOT, stdout=subprocess.DEVNULL,
                                        stderr=open(work / "provider.log", "w"), start_new_session=True)
        for _ in range(100):
            try:
                self.seen()
                return
            except requests.RequestException:
                time.sleep(0.1)
        raise RuntimeError("the benchmark's Paystack did not start")

    def set_latency(self, seconds: float | None) -> None:
        body = {"hang": True} if seconds is None else {"seconds": seconds}
        requests.post(f"{self.url}/_bench/latency", json=body, timeout=5).raise_for_status()

    def reset(self) -> None:
        requests.post(f"{self.url}/_bench/reset", timeout=5).raise_for_status()

    def cpu_seconds(self) -> float:
        """The provider's CPU so far (`nice` execs Python: the pid is the provider's own)."""
        return cpu_seconds(self.process.pid)

    def seen(self) -> dict:
        return requests.get(f"{self.url}/_bench/seen", timeout=30).json()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class Worker:
    """`flask --app app worker`, as the README runs it beside the web server."""

    def __init__(self, env: dict, work: Path):
        self.process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", "worker"], cwd=ROOT,
                                        env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                                        stderr=open(work / "worker.log", "w"), start_new_session=True)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid)

    def priority(self) -> str:
        """The worker's nice value and its autogroup's, as the kernel reports them."""
        group_nice = autogroup_nice(self.process.pid)
        return f"niceness {nice_value(self.process.pid)}, autogroup {'n/a' if group_nice is None else group_nice}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def add_captured_payments(database_url: str, merchant_id: int, count: int) -> list[str]:
    """Captured Paystack payments of the merchant that the refund load chips 0.01 off."""
    now = datetime.now(UTC) - timedelta(days=1)
    rows = [{"merchant_id": merchant_id, "mode": "live", "tx_no": f"PAY-BENCHPS{n:08d}", "kind": "payment",
             "status": "Captured", "amount_minor": REFUND_TARGET_MINOR, "currency": "NGN",
             "reference": f"PS-BIG-{n:08d}", "payment_method": PAYSTACK_METHOD[0],
             "provider_transaction_id": str(4_100_000_000 + n), "provider_status": "success",
             "created_at": now, "updated_at": now} for n in range(count)]
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(insert(transactions), rows)
    finally:
        engine.dispose()
    return [row["tx_no"] for row in rows]


def paced_creates(url: str, token: str, rate: float, seconds: float, tag: str) -> list[dict]:
    """Creates through Paystack at `rate` per second for `seconds`, each sent on time (an open
    loop: a slow answer does not delay the next). Each: its transactionId, HTTP status, latency."""
    method, currency, amount = PAYSTACK_METHOD
    local = threading.local()
    results: list[dict] = []

    def one(number: int) -> None:
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        body = {"amount": float(amount), "currency": currency, "reference": f"paced-{tag}-{number}",
                "statementDescriptor": "BENCH SHOP", "callbackUrl": "https://shop1.example/webhooks/paydesk",
                "billing": {"firstName": "Ada", "lastName": "Obi", "email": "ada@example.com",
                            "customerReference": "cust-1"}, "payment": {"paymentMethod": method}}
        started = time.monotonic()
        try:
            answer = session.post(f"{url}/api/v1/transactions", json=body, timeout=30,
                                  headers={"Authorization": f"Bearer {token}"})
            tx_no, status = answer.json().get("transactionId"), answer.status_code
        except requests.RequestException:
            tx_no, status = None, 0
        results.append({"txNo": tx_no, "status": status, "seconds": time.monotonic() - started})

    with ThreadPoolExecutor(max_workers=64) as pool:
        start = time.monotonic()
        for number in range(int(rate * seconds)):
            delay = start + number / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, number)
    return results


def percentile(values: list[float], share: float) -> float | None:
    """The value at the share (0.5, 0.99) of the sorted values; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def hand_offs(database_url: str, tx_nos: list[str], arrivals: dict[str, float]) -> dict:
    """Milliseconds from each transaction's creation (its created_at, taken before its commit) to
    the provider receiving its initialize; those never received are counted apart."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            created = dict(conn.execute(select(transactions.c.tx_no, transactions.c.created_at)
                                        .where(transactions.c.tx_no.in_(tx_nos))).all())
    finally:
        engine.dispose()
    delays = [(arrivals[tx] - created[tx].timestamp()) * 1000 for tx in tx_nos if tx in arrivals and tx in created]
    return {"count": len(delays), "not_received": len(tx_nos) - len(delays),
            "p50_ms": _round(percentile(delays, 0.5)), "p99_ms": _round(percentile(delays, 0.99)),
            "max_ms": _round(max(delays) if delays else None)}


def in_flight(seen: dict) -> dict:
    """The provider's samples of calls in flight (one worker process)."""
    samples = seen["in_flight"]
    return {"max": seen["max_in_flight"], "mean": _round(statistics.fmean(samples) if samples else 0),
            "p50": percentile(samples, 0.5)}


def breaker_state(database_url: str, account_id: int) -> dict:
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            row = conn.execute(select(provider_accounts.c.calls_state, provider_accounts.c.calls_state_since)
                               .where(provider_accounts.c.id == account_id)).first()
    finally:
        engine.dispose()
    return {"state": row.calls_state, "since": row.calls_state_since.isoformat() if row.calls_state_since else None}


def calls_never_made(database_url: str) -> int:
    """Pending transactions due whose provider was never reached: payments not opened (no
    payment page yet), refunds not submitted (no provider id yet). Later status checks, which
    come due on their own, are not a backlog."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(provider_calls.join(
                transactions, transactions.c.id == provider_calls.c.transaction_id)).where(
                provider_calls.c.due_at <= datetime.now(UTC),
                transactions.c.status == "Pending", transactions.c.provider_redirect_url.is_(None),
                transactions.c.provider_transaction_id.is_(None))).scalar()
    finally:
        engine.dispose()


def wait_for_backlog(database_url: str, timeout: float = 600) -> float:
    """Wait until the worker has made every first call that is due; the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout and calls_never_made(database_url):
        time.sleep(1)
    return round(time.monotonic() - started, 1)


def quiet_backlog(database_url: str) -> None:
    """Leave the hung calls of phase 3 out of phase 4: their checks are moved an hour on."""
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(update(transactions).where(transactions.c.status == "Pending",
                                                    transactions.c.provider_check_at.is_not(None))
                         .values(provider_check_at=datetime.now(UTC) + timedelta(hours=1)))
    finally:
        engine.dispose()


def _round(value, digits: int = 1):
    return None if value is None else round(value, digits)


def main(argv=None) -> None:
    args = parse_args(argv)
    wrk_path()
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    database = Database("postgres", args.postgres_url, keep=False)
    work = Path(tempfile.mkdtemp(prefix="paydesk-bench-provider-"))
    key = Fernet.generate_key().decode()
    processes: list = []
    try:
        upgrade_database(database.url)
        print(f"seeding {args.rows:,} rows", flush=True)
        seeded = seed(database.url, args.rows)
        provider = Provider(work)
        processes.append(provider)
        account_id = connect_paystack(database.url, key, seeded.merchant_id, provider.url)
        paystack_targets = add_captured_payments(database.url, seeded.merchant_id, REFUND_TARGETS)
        files = {"status": work / "status.txt", "refund-simulator": work / "refund-simulator.txt",
                 "refund-paystack": work / "refund-paystack.txt", "create-simulator": work / "create-sim.txt",
                 "create-paystack": work / "create-paystack.txt"}
        files["status"].write_text("\n".join(seeded.status_tx_nos) + "\n")
        files["refund-simulator"].write_text("\n".join(seeded.refund_targets) + "\n")
        files["refund-paystack"].write_text("\n".join(paystack_targets) + "\n")
        files["create-simulator"].write_text(" ".join(SIMULATOR_METHOD) + "\n")
        files["create-paystack"].write_text(" ".join(PAYSTACK_METHOD) + "\n")
        env = {"DATABASE_URL": database.url, "SECRET_KEY": "bench-secret", "DEMO_MODE": "1",
               "PAYDESK_ENCRYPTION_KEY": key, "PROVIDER_ALLOWED_NETWORKS": "127.0.0.0/8",
               "PROVIDER_READ_TIMEOUT": str(args.read_timeout)}
        server = start_gunicorn("paydesk", "app:create_app()", env, args.workers, args.threads, work)
        processes.append(server)
        worker = Worker(env, work)
        processes.append(worker)
        header = ("Authorization", f"Bearer {seeded.token}")
        node_cpu = server.cpu_seconds

        def status_load(seconds: float, tag: str):
            before = cpu_times()
            result = run_wrk(server.url, "status", files["status"], tag, seconds, args.status_connections, 1,
                             node_cpu, header).as_dict()
            return result | {"stolen": stolen_share(before, cpu_times())}

        def under_paced_load(label: str) -> dict:
            provider.reset()
            beside: dict = {}
            seconds = args.hang_duration if label == "hang" else args.duration
            reader = threading.Thread(target=lambda: beside.update(status_load(seconds, f"s{label}")))
            reader.start()
            creates = paced_creates(server.url, seeded.token, args.rate, seconds, f"{label}{uuid.uuid4().hex[:6]}")
            reader.join()
            time.sleep(1 if label != "hang" else 0)
            seen = provider.seen()
            made = [c["txNo"] for c in creates if c["txNo"]]
            latencies = [c["seconds"] * 1000 for c in creates if 200 <= c["status"] < 300]
            result = {"status_reads": beside, "creates": {
                "sent": len(creates), "answered_2xx": len(latencies),
                "p50_ms": _round(percentile(latencies, 0.5)), "p99_ms": _round(percentile(latencies, 0.99))},
                "hand_off": hand_offs(database.url, made, seen["arrivals"]), "in_flight": in_flight(seen),
                "provider_calls": seen["calls"]}
            print(f"[{label}] status p50 {beside['p50_ms']:.1f} ms p99 {beside['p99_ms']:.1f} ms; "
                  f"hand-off {result['hand_off']}; in flight {result['in_flight']}; CPU stolen {beside['stolen']:.0%}",
                  flush=True)
            return result

        results: dict = {"settings": vars(args) | {"out": str(args.out)}, "phases": {}}
        provider.set_latency(args.latency)
        status_load(3, "warm")
        alone = status_load(args.duration, "alone")
        print(f"[alone] status p50 {alone['p50_ms']:.1f} ms p99 {alone['p99_ms']:.1f} ms "
              f"{alone['rps']:.0f} req/s, CPU stolen {alone['stolen']:.0%}", flush=True)
        results["phases"]["status_alone"] = alone
        results["worker_priority"] = worker.priority()  # lowered by now: it has been up for seconds
        results["phases"]["paced"] = under_paced_load("paced")
        results["phases"]["paced"]["backlog_seconds"] = wait_for_backlog(database.url)

        provider.set_latency(None)
        hang = under_paced_load("hang")
        hang["breaker"] = breaker_state(database.url, account_id)
        print(f"[hang] breaker {hang['breaker']}", flush=True)
        results["phases"]["hang"] = hang
        provider.set_latency(args.latency)
        quiet_backlog(database.url)

        throughput: dict = {}
        for endpoint in ("create", "refund"):
            rounds: dict[str, list] = {"simulator": [], "paystack": []}
            for number in range(args.rounds):
                order = ["simulator", "paystack"] if number % 2 == 0 else ["paystack", "simulator"]
                for name in order:
                    wait_for_backlog(database.url)
                    server.wait_until_idle()
                    provider.reset()
                    worker_before, database_before = worker.cpu_seconds(), database.backend_cpu()
                    provider_before = provider.cpu_seconds()
                    times_before = cpu_times()
                    result = run_wrk(server.url, endpoint, files[f"{endpoint}-{name}"],
                                     f"t{uuid.uuid4().hex[:8]}", args.round_duration,
                                     args.connections, 2, node_cpu, header).as_dict()
                    result["stolen"] = stolen_share(times_before, cpu_times())
                    result["worker_cpu"] = round((worker.cpu_seconds() - worker_before) / result["seconds"], 2)
                    result["database_cpu"] = round((database.backend_cpu() - database_before) / result["seconds"], 2)
                    # The fake Paystack shares the node's cores, which a real one does not: its share.
                    result["provider_cpu"] = round((provider.cpu_seconds() - provider_before) / result["seconds"], 3)
                    result["in_flight"] = in_flight(provider.seen())
                    rounds[name].append(result)
                    print(f"[{endpoint} {name}] {result['rps']:.1f} req/s p99 {result['p99_ms']:.1f} ms "
                          f"failed {result['failed']} in flight {result['in_flight']} gunicorn {result['server_cpu']:.2f} "
                          f"worker {result['worker_cpu']:.2f} database {result['database_cpu']:.2f} "
                          f"provider {result['provider_cpu']:.3f} cores "
                          f"stolen {result['stolen']:.0%}", flush=True)
            rps = {name: sum(r["requests"] for r in runs) / sum(r["seconds"] for r in runs)
                   for name, runs in rounds.items()}
            # Each round's Paystack req/s over the simulator's of the same round (they ran back to
            # back), their median and its interval.
            paired = summary([run["rps"] for run in rounds["paystack"]], [run["rps"] for run in rounds["simulator"]],
                             CREATE_RATIO)
            throughput[endpoint] = {"rounds": rounds, "rps": {k: round(v, 1) for k, v in rps.items()},
                                    "ratio": round(rps["paystack"] / rps["simulator"], 3)} | paired
            print(f"[{endpoint}] paystack / simulator = {throughput[endpoint]['ratio']}, rounds' median "
                  f"{paired['median_ratio']} {paired['median_interval']}", flush=True)
        results["phases"]["throughput"] = throughput
        results["phases"]["throughput"]["backlog_seconds"] = wait_for_backlog(database.url)
        results.update({"started_at": started.isoformat(timespec="seconds"), "machine": machine(),
                        "commit": commit(), "load_average_before": [round(x, 2) for x in load_before],
                        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
                        "database_version": database.version()})
    finally:
        for process in reversed(processes):
            process.stop()
        database.drop()
    for path in write_json_and_markdown(results, markdown(results), args.out, "provider-path", started, args.smoke):
        print(f"wrote {path}")


def markdown(results: dict) -> str:
    s, phases = results["settings"], results["phases"]
    alone, paced, hang, thr = phases["status_alone"], phases["paced"], phases["hang"], phases["throughput"]

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "n/a"

    def stolen(phase: dict) -> str:
        return f"{phase['stolen']:.0%}" if "stolen" in phase else "n/a"

    lines = [
        f"# Production path: Paystack on loopback at {s['latency'] * 1000:.0f} ms",
        "",
        f"Commit {results['commit']}, {results['started_at']}; {results['machine']['nproc']} cores, "
        f"PostgreSQL {results['database_version']}; gunicorn --workers {s['workers']} --threads {s['threads']} "
        f"and one `flask worker` ({results.get('worker_priority', 'priority not recorded')}); "
        f"{s['rows']:,} rows seeded. Load average before: "
        f"{results['load_average_before']}.",
        "",
        "| must hold | measured | holds |",
        "|---|---|---|",
        f"| creates/s through Paystack ≥ {CREATE_RATIO} × through the simulator ({s['connections']} connections) | "
        f"{thr['create']['rps']['paystack']} / {thr['create']['rps']['simulator']} = {thr['create']['ratio']}; "
        f"rounds' median {thr['create'].get('median_ratio', 'n/a')}, 95% interval "
        f"{thr['create'].get('median_interval', 'n/a')} | "
        f"{'yes' if thr['create']['ratio'] >= CREATE_RATIO else 'NO'}; rounds: {thr['create'].get('verdict', 'n/a')} |",
        f"| status p99 beside {s['rate']:.0f} creates/s ≤ 2 × alone | {paced['status_reads']['p99_ms']:.1f} / "
        f"{alone['p99_ms']:.1f} ms = {ratio(paced['status_reads']['p99_ms'], alone['p99_ms'])} | "
        f"{'yes' if paced['status_reads']['p99_ms'] <= 2 * alone['p99_ms'] else 'NO'} |",
        f"| hand-off p50 < 50 ms | {paced['hand_off']['p50_ms']} ms | "
        f"{'yes' if (paced['hand_off']['p50_ms'] or 1e9) < 50 else 'NO'} |",
        f"| hand-off p99 < 500 ms | {paced['hand_off']['p99_ms']} ms | "
        f"{'yes' if (paced['hand_off']['p99_ms'] or 1e9) < 500 else 'NO'} |",
        f"| hanging provider: status p99 ≤ 2 × alone | {hang['status_reads']['p99_ms']:.1f} / "
        f"{alone['p99_ms']:.1f} ms = {ratio(hang['status_reads']['p99_ms'], alone['p99_ms'])} | "
        f"{'yes' if hang['status_reads']['p99_ms'] <= 2 * alone['p99_ms'] else 'NO'} |",
        f"| hanging provider: the breaker opens | calls_state {hang['breaker']['state']!r} since "
        f"{hang['breaker']['since']} | {'yes' if hang['breaker']['state'] == 'open' else 'NO'} |",
        "",
        "| phase | status req/s | status p50 | status p99 | creates sent / answered 2xx | create p99 | "
        "hand-off p50 / p99 / max | not received | calls in flight max / mean | CPU stolen |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| status alone ({s['status_connections']} connections) | {alone['rps']:.0f} | {alone['p50_ms']:.1f} ms | "
        f"{alone['p99_ms']:.1f} ms | | | | | | {stolen(alone)} |",
    ]
    for name, phase in (("creates paced, Paystack 400 ms", paced), ("creates paced, Paystack hangs", hang)):
        sr, cr, ho, fl = phase["status_reads"], phase["creates"], phase["hand_off"], phase["in_flight"]
        lines.append(f"| {name} | {sr['rps']:.0f} | {sr['p50_ms']:.1f} ms | {sr['p99_ms']:.1f} ms | "
                     f"{cr['sent']} / {cr['answered_2xx']} | {cr['p99_ms']} ms | {ho['p50_ms']} / {ho['p99_ms']} / "
                     f"{ho['max_ms']} ms | {ho['not_received']} | {fl['max']} / {fl['mean']} | {stolen(sr)} |")
    lines += ["", f"| {s['connections']} connections, {s['rounds']} rounds of {s['round_duration']:.0f} s | "
              "through the simulator | through Paystack | ratio | rounds' ratios (median) | "
              "rounds' req/s, simulator; Paystack | CPU stolen (rounds) |", "|---|---|---|---|---|---|---|"]
    for endpoint in ("create", "refund"):
        rps, rounds = thr[endpoint]["rps"], thr[endpoint]["rounds"]
        taken = ", ".join(f"{name} {stolen(run)}" for name, runs in rounds.items() for run in runs)
        each = "; ".join(", ".join(f"{run['rps']:.0f}" for run in rounds[name]) for name in ("simulator", "paystack"))
        ratios = ", ".join(f"{r:.2f}" for r in thr[endpoint].get("round_ratios", []))
        lines.append(f"| {endpoint}s/s | {rps['simulator']} | {rps['paystack']} | {thr[endpoint]['ratio']} | "
                     f"{ratios} ({thr[endpoint].get('median_ratio', 'n/a')}) | {each} | {taken} |")
    lines += ["", "The hand-off runs from the transaction's `created_at` (taken before its commit) to the "
              "provider receiving the call, so it includes the create's own database work. CPU stolen: "
              "the share of the machine's CPU time its hypervisor gave to other machines during the "
              "phase (/proc/stat's steal); a phase with much of it ran on a slower, uneven machine and "
              "its figures are not comparable with the others'.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
