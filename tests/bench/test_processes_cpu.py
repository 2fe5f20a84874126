"""bench.run.ProcessesCpu: the CPU of a changing set of processes never goes back."""
import subprocess
import sys

import pytest

from bench.run import ProcessesCpu
from bench.servers import cpu_seconds

BURN_THEN_WAIT = """
import time
started = time.process_time()
while time.process_time() - started < 0.3:
    pass
print("burnt", flush=True)
time.sleep(60)
"""


@pytest.fixture
def burnt():
    """A process that used 0.3 s of CPU and now sleeps; ended by end()."""
    child = subprocess.Popen([sys.executable, "-c", BURN_THEN_WAIT], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "burnt"
    yield child
    end(child)


def end(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()
    child.stdout.close()


def test_a_process_that_ends_takes_back_nothing_it_was_counted_for(burnt):
    listed = [burnt.pid]
    counter = ProcessesCpu(lambda: listed)
    counted = counter()
    assert counted >= 0.25
    end(burnt)
    listed.clear()  # gone from pg_stat_activity's list
    assert counter() == counted


def test_a_process_listed_but_already_ended_counts_nothing(burnt):
    counter = ProcessesCpu(lambda: [burnt.pid])
    counted = counter()
    end(burnt)
    assert cpu_seconds(burnt.pid) == 0.0
    assert counter() == counted


def test_a_process_that_appears_counts_what_it_used(burnt):
    listed: list[int] = []
    counter = ProcessesCpu(lambda: listed)
    assert counter() == 0.0
    listed.append(burnt.pid)
    assert counter() >= 0.25
