"""The worker's CPU priority: its process niced, and its autogroup when the session is its own.

Each case runs `lower_cpu_priority` in a child process (it changes the process it runs in)
and reads back what the kernel reports.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

REPORT = """
import os
from app.worker import AUTOGROUP, lower_cpu_priority
said = lower_cpu_priority({niceness})
with open(AUTOGROUP) as autogroup:
    print(said, autogroup.read().strip(), os.nice(0), sep="|")
"""

autogroups = pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no autogroups in this kernel")


def autogroup_nice(shown: str) -> int | None:
    """The nice value in /proc/<pid>/autogroup ("/autogroup-85 nice 0"); None when it shows
    nothing, as it does for a process still in the root autogroup (no session since boot or
    the container's start has been made with setsid), whose weight cannot be changed."""
    return int(shown.split()[-1]) if shown else None


def run_worker_priority(niceness: int, *, own_session: bool) -> tuple[str, int | None, int]:
    """What the child said, its autogroup's nice value and its own, after lowering by `niceness`."""
    answer = subprocess.run([sys.executable, "-c", REPORT.format(niceness=niceness)], cwd=ROOT, check=True,
                            capture_output=True, text=True, start_new_session=own_session)
    said, shown, process_nice = answer.stdout.rstrip("\n").split("|")
    return said, autogroup_nice(shown), int(process_nice)


@autogroups
def test_a_worker_in_its_own_session_nices_its_autogroup_and_itself():
    start = os.nice(0)
    said, group_nice, process_nice = run_worker_priority(3, own_session=True)
    assert (group_nice, process_nice) == (3, start + 3)
    assert said == f"niceness {start + 3}, its own session's autogroup niced 3"


@autogroups
def test_a_worker_sharing_its_session_leaves_the_autogroup_to_the_others():
    with open("/proc/self/autogroup") as autogroup:
        shared_nice = autogroup_nice(autogroup.read().strip())
    start = os.nice(0)
    said, group_nice, process_nice = run_worker_priority(3, own_session=False)
    assert (group_nice, process_nice) == (shared_nice, start + 3)
    assert said == f"niceness {start + 3}"


@autogroups
def test_niceness_zero_changes_nothing():
    start = os.nice(0)
    said, group_nice, process_nice = run_worker_priority(0, own_session=True)
    assert (group_nice, process_nice) == (0, start)
    assert said == f"niceness {start}"
