"""The order servers run in each round: two alternate; three or more take every place equally often."""
from __future__ import annotations

from collections import Counter

import pytest

from bench.run import round_orders


def test_two_servers_alternate():
    assert round_orders(["a", "b"], 4) == [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]


@pytest.mark.parametrize("names", [["a", "b", "c"], ["a", "b", "c", "d"]])
def test_more_servers_take_every_place_equally_often(names):
    rounds = 2 * len(names) * 2
    orders = round_orders(names, rounds)
    assert all(sorted(order) == sorted(names) for order in orders)
    places = Counter((name, place) for order in orders for place, name in enumerate(order))
    assert set(places.values()) == {rounds // len(names)}
    assert len(places) == len(names) ** 2
