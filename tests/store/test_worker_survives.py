"""The worker outlives a database that is down: a failing round is logged and tried again, with backoff.

It stops only when asked (SIGTERM, SIGINT), and a stop asked during a backoff pause ends it at once.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from app.util import Backoff
from app.worker import MAX_ROUND_PAUSE, run_until_stopped
from tests.conftest import make_app
from tests.support.servers import ROOT, free_port, paydesk_env


class RecordedStop:
    """A stop flag whose waits are recorded instead of slept; stops after `waits` of them."""

    def __init__(self, waits: int):
        self.waits_left = waits
        self.paused: list[float] = []
        self.requested = False

    def wait(self, seconds: float) -> None:
        self.paused.append(seconds)
        self.waits_left -= 1
        self.requested = self.waits_left <= 0


def rounds(*outcomes):
    """A round function giving these outcomes in turn (an exception instance is raised)."""
    remaining = list(outcomes)

    def run(_app):
        outcome = remaining.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return run


def test_backoff_doubles_from_its_first_pause_up_to_the_cap():
    backoff = Backoff(first=0.5, cap=4.0)
    assert [backoff.next_pause() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    backoff.reset()
    assert backoff.next_pause() == 0.5


def test_a_failing_round_is_logged_and_tried_again_after_a_growing_pause(sqlite_url, caplog):
    app = make_app(sqlite_url)
    stop = RecordedStop(waits=4)
    failure = ConnectionError("database is down")
    run_until_stopped(app, stop, interval=0.2,
                      run_round=rounds(failure, failure, failure, False))
    assert stop.paused == [0.5, 1.0, 2.0, 0.2]  # backoff, then the idle interval once a round works
    failures = [r for r in caplog.records if "worker round failed" in r.getMessage()]
    assert len(failures) == 3
    assert all(r.exc_info and r.exc_info[1] is failure for r in failures)  # with the traceback


def test_a_round_that_works_again_resets_the_backoff(sqlite_url):
    app = make_app(sqlite_url)
    stop = RecordedStop(waits=3)
    failure = ConnectionError("database is down")
    run_until_stopped(app, stop, interval=0.2,
                      run_round=rounds(failure, failure, True, failure))
    assert stop.paused == [0.5, 1.0, 0.5]  # a busy round goes on without a pause


def test_the_backoff_pause_never_exceeds_the_cap(sqlite_url):
    app = make_app(sqlite_url)
    stop = RecordedStop(waits=12)
    failure = ConnectionError("database is down")
    run_until_stopped(app, stop, interval=0.2, run_round=rounds(*[failure] * 12))
    assert max(stop.paused) == MAX_ROUND_PAUSE == 30.0


def test_worker_once_still_fails_loudly(sqlite_url):
    app = make_app(sqlite_url)
    with pytest.raises(ConnectionError):
        run_until_stopped(app, RecordedStop(waits=1), interval=0.2, once=True,
                          run_round=rounds(ConnectionError("database is down")))


LONG_PAUSE_LOGGED = "worker round failed; trying again in 8.0 s"


@pytest.mark.slow  # a worker process of its own
def test_the_worker_process_outlives_an_unreachable_database_and_stops_promptly_on_sigterm(tmp_path):
    unreachable = f"postgresql+psycopg://paydesk@127.0.0.1:{free_port()}/paydesk"
    log = tmp_path / "worker.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "app", "worker", "--interval", "0.2"],
            cwd=ROOT, env=paydesk_env(unreachable, "http://paydesk.test"),
            stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
    try:
        assert "started" in process.stdout.readline()
        # Rounds fail after 0, 0.5, 1.5, 3.5 and 7.5 s; the pause after the fifth is 8 s long.
        # Waiting for that failure in the log (not sleeping) keeps a busy machine, whose rounds
        # come late, from signalling before it; an exit well inside that pause shows the signal
        # cut it short, however slowly a loaded machine starts and ends a process.
        deadline = time.monotonic() + 60
        while LONG_PAUSE_LOGGED not in log.read_text() and process.poll() is None:
            assert time.monotonic() < deadline, "the worker never logged its 8 s pause"
            time.sleep(0.05)
        assert process.poll() is None, "the worker exited on a database error"
        os.kill(process.pid, signal.SIGTERM)  # in the middle of the 8 s backoff pause
        stopped_at = time.monotonic()
        assert process.wait(10) == 0
        assert time.monotonic() - stopped_at < 4.0  # half the pause it cut short
        assert "stopped" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    logged = log.read_text()
    assert logged.count("worker round failed") >= 5
    assert "Traceback" in logged and "OperationalError" in logged
