"""The servers under test: gunicorn processes, their workers' CPU time and memory, read from /proc."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Gunicorn:
    """One gunicorn master and its workers."""

    name: str
    url: str
    process: subprocess.Popen
    log_path: Path

    def worker_pids(self) -> list[int]:
        """The master's children (its workers), found through /proc."""
        return [pid for pid in _all_pids() if _parent_of(pid) == self.process.pid]

    def cpu_seconds(self) -> float:
        """User + system CPU of the master and its workers so far."""
        return sum(cpu_seconds(pid) for pid in [self.process.pid, *self.worker_pids()])

    def wait_until_idle(self, timeout: float = 600.0, window: float = 0.5) -> float:
        """Wait until the server stops working (requests wrk left queued when it stopped).

        Idle means under a tenth of a core over `window` seconds. Without this, a slow
        endpoint's backlog would be served during the next endpoint's measurement.
        Returns the seconds it was still busy: 0 when the first window was already idle.
        """
        started = time.monotonic()
        before = self.cpu_seconds()
        while time.monotonic() - started < timeout:
            time.sleep(window)
            now = self.cpu_seconds()
            if now - before < 0.1 * window:
                return max(0.0, time.monotonic() - started - window)
            before = now
        return time.monotonic() - started

    def worker_memory(self) -> list[dict]:
        """Each worker's resident memory now and at its peak (VmRSS, VmHWM), in MiB."""
        found = []
        for pid in self.worker_pids():
            status = _proc_status(pid)
            if status:
                found.append({"pid": pid, "rss_mib": status.get("VmRSS", 0) / 1024,
                              "peak_rss_mib": status.get("VmHWM", 0) / 1024})
        return found

    def stop(self) -> None:
        """SIGTERM, then SIGKILL to the process group if it does not leave in time."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


def start_gunicorn(name: str, app_spec: str, env: dict, workers: int, threads: int,
                   log_dir: Path) -> Gunicorn:
    """`gunicorn APP` with the given workers and threads (gthread), as the production command runs it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = log_dir / f"{name}-{port}.log"
    command = [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
               "--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread",
               "--log-level", "warning", "--error-logfile", str(log_path), app_spec]
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env, "BASE_URL": url},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    server = Gunicorn(name, url, process, log_path)
    try:
        _wait_until_up(server, workers)
    except Exception:
        server.stop()
        raise
    return server


def _wait_until_up(server: Gunicorn, workers: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.process.returncode}; "
                               f"see {server.log_path}")
        try:
            if requests.get(f"{server.url}/healthz", timeout=5).status_code == 200 \
                    and len(server.worker_pids()) == workers:
                return
        except requests.RequestException:  # not listening yet, or too busy starting to answer
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{server.name} did not come up at {server.url}")


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()  # the command name may hold spaces


def _parent_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (0 once it is gone)."""
    fields = _stat_fields(pid)
    if not fields:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def nice_value(pid: int) -> int | None:
    """The nice value of one process (None once it is gone)."""
    fields = _stat_fields(pid)
    return int(fields[16]) if fields else None


def autogroup_nice(pid: int) -> int | None:
    """The nice value of one process's autogroup (None once it is gone, without autogroups, or
    in the root autogroup, whose file shows nothing)."""
    try:
        shown = Path(f"/proc/{pid}/autogroup").read_text().split()
    except OSError:
        return None
    return int(shown[-1]) if shown else None


def _proc_status(pid: int) -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    values = {}
    for line in lines:
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values
