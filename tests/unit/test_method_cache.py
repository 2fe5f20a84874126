"""The per-process memory of payment methods: kept for its seconds, found ones only, forgettable."""
from __future__ import annotations

from app.providers.methods import DEFAULT_METHODS
from app.store.method_cache import MethodCache

CARD = DEFAULT_METHODS[0]
KEY = (1, "live", "card")


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Loads:
    def __init__(self, answer):
        self.answer, self.count = answer, 0

    def __call__(self):
        self.count += 1
        return self.answer


def test_a_found_method_is_read_once_within_its_seconds_and_again_after():
    clock, loads = Clock(), Loads(CARD)
    cache = MethodCache(5, clock)
    assert cache.get(KEY, loads) is CARD and cache.get(KEY, loads) is CARD
    assert loads.count == 1
    clock.now += 5
    assert cache.get(KEY, loads) is CARD and loads.count == 2


def test_a_method_not_found_is_not_kept_so_one_added_is_used_at_once():
    loads = Loads(None)
    cache = MethodCache(5, Clock())
    assert cache.get(KEY, loads) is None and cache.get(KEY, loads) is None
    assert loads.count == 2


def test_forgetting_a_merchant_drops_its_methods_only():
    loads = Loads(CARD)
    cache = MethodCache(5, Clock())
    other = (2, "live", "card")
    cache.get(KEY, loads), cache.get(other, loads)
    cache.forget_merchant(1)
    cache.get(KEY, loads), cache.get(other, loads)
    assert loads.count == 3


def test_zero_seconds_keeps_nothing():
    loads = Loads(CARD)
    cache = MethodCache(0, Clock())
    cache.get(KEY, loads), cache.get(KEY, loads)
    assert loads.count == 2
