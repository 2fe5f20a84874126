"""DatabaseSlots: a worker's provider calls hold at most so many units of work open at once."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from app.providers.calls import DatabaseSlots


class CountingUnits:
    """A unit-of-work factory that counts the units open at once and the most ever seen."""

    def __init__(self):
        self.open = 0
        self.most = 0
        self.lock = threading.Lock()

    @contextmanager
    def __call__(self, write: bool = True):
        with self.lock:
            self.open += 1
            self.most = max(self.most, self.open)
        try:
            yield f"unit(write={write})"
        finally:
            with self.lock:
                self.open -= 1


def test_no_more_units_than_slots_are_open_at_once():
    units = CountingUnits()
    bounded = DatabaseSlots(3).bounded(units)

    def work():
        with bounded(write=False) as unit:
            assert unit == "unit(write=False)"
            time.sleep(0.02)

    threads = [threading.Thread(target=work) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert units.most == 3
    assert units.open == 0


def test_a_unit_opened_inside_a_threads_own_unit_takes_no_slot():
    """With one slot, a nested unit would wait for itself forever if it needed one."""
    units = CountingUnits()
    bounded = DatabaseSlots(1).bounded(units)
    done = threading.Event()

    def nested():
        with bounded():
            with bounded():
                with bounded():
                    pass
        with bounded():  # and the slot is free again afterwards
            done.set()

    thread = threading.Thread(target=nested, daemon=True)
    thread.start()
    thread.join(5)
    assert done.is_set()
    assert units.open == 0


def test_a_unit_that_raises_gives_its_slot_back():
    units = CountingUnits()
    bounded = DatabaseSlots(1).bounded(units)
    try:
        with bounded():
            raise ValueError("the unit failed")
    except ValueError:
        pass
    finished = threading.Event()
    thread = threading.Thread(target=lambda: (bounded().__enter__(), finished.set()), daemon=True)
    thread.start()
    thread.join(5)
    assert finished.is_set()
