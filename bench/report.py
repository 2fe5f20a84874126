"""The benchmark's reports: a Markdown table, the raw figures as JSON and a PNG chart per database."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

# In the order the benchmark drives them: reads first, since the writes add the
# newest rows, which the dashboard search walks first.
ENDPOINT_TITLES = {
    "status": "GET status",
    "banks": "POST bank list",
    "search": "dashboard search by reference",
    "create": "POST create",
    "refund": "POST refund",
}
DATABASE_TITLES = {"postgres": "PostgreSQL", "sqlite": "SQLite"}


def write_reports(reports: list[dict], out: Path) -> list[Path]:
    """<date>-<db>.md, .json and .png for each database; <date>-summary.md when there are several."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for results in reports:
        stem = f"{results['started_at'][:10]}-{results['database']}"
        (out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
        chart = out / f"{stem}.png"
        draw_chart(results, chart)
        (out / f"{stem}.md").write_text(markdown(results, chart.name))
        written += [out / f"{stem}.md", out / f"{stem}.json", chart]
    if len(reports) > 1:
        summary = out / f"{reports[0]['started_at'][:10]}-summary.md"
        summary.write_text(summary_markdown(reports))
        written.append(summary)
    return written


def write_json_and_markdown(results: dict, markdown_text: str, out: Path, kind: str,
                            started: datetime, smoke: bool) -> list[Path]:
    """<date>-<kind>[-smoke].json as measured and .md as read, in out (a benchmark of one page:
    the production path, the request log)."""
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{started:%Y-%m-%d}-{kind}{'-smoke' if smoke else ''}"
    json_path, md_path = stem.with_suffix(".json"), stem.with_suffix(".md")
    json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    md_path.write_text(markdown_text)
    return [json_path, md_path]


def _ms(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _ratio(paydesk: dict | None, baseline: dict | None) -> str:
    if not paydesk or not baseline or not baseline["rps"]:
        return "–"
    return f"{paydesk['rps'] / baseline['rps']:.2f}"


def _cells(result: dict | None) -> list[str]:
    if result is None:
        return ["not measured", "–", "–"]
    return [f"{result['rps']:.0f}", _ms(result["p50_ms"]), _ms(result["p99_ms"])]


def _setup_lines(results: dict) -> list[str]:
    machine, settings = results["machine"], results["settings"]
    when = datetime.fromisoformat(results["started_at"])
    return [
        f"- When: {when:%Y-%m-%d %H:%M} UTC to {results['finished_at'][11:16]} UTC"
        + (" (smoke run: tiny data, seconds of load; the figures mean nothing)" if settings["smoke"] else ""),
        f"- Machine: {machine['nproc']} CPUs ({machine['cpu']}), {machine['ram_gib']} GiB RAM, Linux "
        f"{machine['kernel']}, Python {machine['python']}; server, database and load generator share it",
        f"- Load average (1, 5, 15 min) before: {', '.join(map(str, results['load_average_before']))}; "
        f"after: {', '.join(map(str, results['load_average_after']))}. Other processes (other work on this "
        "machine) may have been running during the measurement."
        + (f" CPU stolen by the hypervisor during the run: {results['cpu_stolen']:.0%} of the machine's "
           "time (a machine slower than it is, and unevenly)." if "cpu_stolen" in results else ""),
        f"- Commit: {results['commit']}",
        f"- Servers: gunicorn, {settings['workers']} workers × {settings['threads']} threads (gthread), the "
        "same for Paydesk (`gunicorn 'app:create_app()'`) and the baseline (`bench/baseline_app.py`)",
        f"- Load: wrk, {settings['concurrency']} connections, {settings['wrk_threads']} threads, "
        f"{settings['duration']:g} s per endpoint and server after {settings['warmup']:g} s of warm-up, "
        + (f"in {rounds} rounds with the servers alternating (A B, B A, ...), so drifts such as checkpoints "
           "fall on both; p50 is the median of the rounds', p99 the worst round's; "
           if (rounds := settings.get("rounds", 1)) > 1 else "")
        + "p50/p99 are wrk's latencies at that concurrency (queueing included)",
    ]


def markdown(results: dict, chart_name: str) -> str:
    """The report of one database: setup, then per data set size the table, memory and search."""
    title = DATABASE_TITLES[results["database"]]
    lines = [f"# Paydesk benchmark on {title}, {results['started_at'][:10]}", ""]
    lines += _setup_lines(results)
    lines += ["", f"![requests per second per endpoint]({chart_name})", ""]
    for size in results["sizes"]:
        lines += _size_section(results, size)
    if len(results["sizes"]) > 1:
        lines += _memory_growth(results)
    lines += _webhooks(results)
    return "\n".join(lines) + "\n"


def _size_section(results: dict, size: dict) -> list[str]:
    seed = size["seed"]
    postgres = results["database"] == "postgres"
    lines = [
        f"## {size['rows']:,} transactions "
        f"({DATABASE_TITLES[results['database']]} {size['database_version']})",
        "",
        f"Seeded in {seed['seconds']:.0f} s by {seed['method']}: {size['rows']:,} transactions over "
        f"{seed['merchants']} merchants ({seed['refunds']:,} of them refunds, "
        f"{seed['refund_targets']:,} large Captured payments as refund targets), "
        f"{seed['history_rows']:,} status history rows.",
        "",
        "| Endpoint | Paydesk req/s | p50 ms | p99 ms | Baseline req/s | p50 ms | p99 ms "
        "| Paydesk / baseline | failed (P / B) | CPU ms per request (P / B) | CPU cores busy (P / B) "
        "| wrk cores |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for endpoint, title in _measured(size):
        paydesk, baseline = size["endpoints"][endpoint]["paydesk"], size["endpoints"][endpoint]["baseline"]
        present = [r for r in (paydesk, baseline) if r]
        row = [title, *_cells(paydesk), *_cells(baseline), _ratio(paydesk, baseline),
               " / ".join(str(r["failed"]) if r else "–" for r in (paydesk, baseline)),
               " / ".join(f"{cpu_ms_per_request(r):.2f}" if r else "–" for r in (paydesk, baseline)),
               " / ".join(f"{r['server_cpu']:.2f}" if r else "–" for r in (paydesk, baseline)),
               f"{max(r['generator_cpu'] for r in present):.2f}" if present else "–"]
        lines.append("| " + " | ".join(row) + " |")
    where = "the gunicorn processes and the PostgreSQL backends serving the benchmark database" \
        if postgres else "the gunicorn processes (SQLite runs inside them)"
    lines += ["", f"CPU per request and cores busy count {where}, so work for other databases on this "
              "machine is left out; with the cores shared, CPU per request is the steadier comparison."]
    drained = [f"{title}, {name} {result['drain_seconds']:.0f} s" for endpoint, title in _measured(size)
               for name, result in size["endpoints"][endpoint].items()
               if result and result.get("drain_seconds", 0) >= 1]
    if drained:
        lines += ["", "Requests wrk left queued when it stopped kept the server busy afterwards (waited out "
                  "before the next measurement): " + "; ".join(drained) + "."]
    lines += ["", f"Dashboard search over HTTP: {size['dashboard']}.", ""]
    lines += _memory_table(size)
    lines += _search_table(size)
    return lines


def _measured(size: dict) -> list[tuple[str, str]]:
    """(endpoint, title) of the endpoints this run drove (--endpoints can pick some), in report order."""
    return [(endpoint, title) for endpoint, title in ENDPOINT_TITLES.items() if endpoint in size["endpoints"]]


def cpu_ms_per_request(result: dict) -> float:
    """Milliseconds of CPU (the server and its database backends) a request took in a load result."""
    return result["server_cpu"] * result["seconds"] / max(result["requests"], 1) * 1000


def _peak(snapshots: list[dict]) -> tuple[float, float]:
    """Highest and lowest worker peak RSS (MiB) over the run."""
    if not snapshots:
        return 0.0, 0.0
    peaks = [w["peak_rss_mib"] for w in snapshots[-1]["workers"]]
    return max(peaks, default=0.0), min(peaks, default=0.0)


def _memory_table(size: dict) -> list[str]:
    lines = ["Peak RSS per gunicorn worker (VmHWM, MiB) after each endpoint's load:", "",
             "| Server | " + " | ".join(s["after"] for s in size["memory"]["paydesk"]) + " |",
             "|---|" + "---:|" * len(size["memory"]["paydesk"])]
    for name in ("paydesk", "baseline"):
        cells = [" / ".join(f"{w['peak_rss_mib']:.0f}" for w in snapshot["workers"])
                 for snapshot in size["memory"][name]]
        lines.append(f"| {name.title()} | " + " | ".join(cells) + " |")
    return lines + [""]


def _search_table(size: dict) -> list[str]:
    lines = ["Dashboard search by reference, the SQL alone (a reference containing the term, any case: "
             "`reference ILIKE '%term%'` on PostgreSQL, the FTS5 trigram index's matches on SQLite; newest 50 of the "
             "merchant's live transactions), run one query at a time on the freshly seeded data, before any load "
             "(server time, no HTTP):", "",
             "| Term | Example | Queries | p50 ms | p95 ms | p99 ms | Rows found (mean) | Plan |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for label, timing in size["search_sql"].items():
        example = f"`{timing['example']}`" if timing["example"] else ""
        lines.append(f"| {label} | {example} | {timing['queries']} | {_ms(timing['p50_ms'])} | "
                     f"{_ms(timing['p95_ms'])} | {_ms(timing['p99_ms'])} | {timing['mean_rows']:.1f} | "
                     f"{timing['plan']} |")
    return lines + [""]


def _webhooks(results: dict) -> list[str]:
    lines = ["## Webhook delivery", "", "Measured by bench/webhook_delivery.py (the webhooks work) on a "
             "fresh database of its own:", ""]
    lines += [f"- {key}: {value}" for key, value in results.get("webhooks", {}).items()]
    return lines + [""]


def _memory_growth(results: dict) -> list[str]:
    lines = ["## Memory as the data set grows", "",
             "| Transactions | Paydesk worker peak RSS MiB (max / min) | Baseline (max / min) |",
             "|---:|---:|---:|"]
    for size in results["sizes"]:
        paydesk, baseline = _peak(size["memory"]["paydesk"]), _peak(size["memory"]["baseline"])
        lines.append(f"| {size['rows']:,} | {paydesk[0]:.0f} / {paydesk[1]:.0f} | "
                     f"{baseline[0]:.0f} / {baseline[1]:.0f} |")
    return lines + [""]


def summary_markdown(reports: list[dict]) -> str:
    """PostgreSQL and SQLite side by side, at each one's largest data set."""
    lines = [f"# Paydesk benchmark summary, {reports[0]['started_at'][:10]}", ""]
    lines += _setup_lines(reports[0])
    header = "| Endpoint |"
    rule = "|---|"
    for results in reports:
        size = results["sizes"][-1]
        name = f"{DATABASE_TITLES[results['database']]} ({size['rows']:,} rows)"
        header += f" {name} Paydesk req/s | baseline req/s | ratio |"
        rule += "---:|---:|---:|"
    lines += ["", "Requests per second at each database's largest data set "
              f"(details: {', '.join(r['started_at'][:10] + '-' + r['database'] + '.md' for r in reports)}).",
              "", header, rule]
    for endpoint, title in _measured(reports[0]["sizes"][-1]):
        row = f"| {title} |"
        for results in reports:
            measured = results["sizes"][-1]["endpoints"].get(endpoint, {"paydesk": None, "baseline": None})
            paydesk, baseline = measured["paydesk"], measured["baseline"]
            row += (f" {paydesk['rps']:.0f} |" if paydesk else " not measured |")
            row += (f" {baseline['rps']:.0f} |" if baseline else " – |")
            row += f" {_ratio(paydesk, baseline)} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def draw_chart(results: dict, path: Path) -> None:
    """Requests per second and p99 latency per endpoint, Paydesk beside the baseline, largest data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    size = results["sizes"][-1]
    endpoints = [endpoint for endpoint, _title in _measured(size)]
    figure, (rps_axis, p99_axis) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.38
    positions = range(len(endpoints))
    for offset, name, colour in ((-width / 2, "paydesk", "#2b6cb0"), (width / 2, "baseline", "#a0aec0")):
        measured = [size["endpoints"][e][name] for e in endpoints]
        rps_axis.bar([p + offset for p in positions], [m["rps"] if m else 0 for m in measured], width,
                     label=name.title(), color=colour)
        p99_axis.bar([p + offset for p in positions], [m["p99_ms"] if m else 0 for m in measured], width,
                     label=name.title(), color=colour)
    for axis, label in ((rps_axis, "requests per second"), (p99_axis, "p99 latency, ms")):
        axis.set_xticks(list(positions), endpoints)
        axis.set_ylabel(label)
        axis.legend()
        axis.grid(axis="y", alpha=0.3)
    machine, settings = results["machine"], results["settings"]
    figure.suptitle(
        f"Paydesk vs baseline on {DATABASE_TITLES[results['database']]}, {size['rows']:,} transactions, "
        f"{results['started_at'][:10]}\n{machine['nproc']} CPUs, {settings['workers']} workers × "
        f"{settings['threads']} threads, wrk {settings['concurrency']} connections", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
