"""bench/paired.py: rounds' ratios, the bootstrap interval of their median, and the verdict."""
from __future__ import annotations

import pytest

from bench.paired import median_interval, round_ratios, summary, verdict


def test_each_round_is_divided_by_the_round_beside_it():
    assert round_ratios([90, 100, 50], [100, 100, 100]) == [0.9, 1.0, 0.5]


def test_the_interval_holds_the_median_and_narrows_with_rounds():
    spread = [0.90, 0.95, 1.00, 1.05, 1.10]
    few_low, few_high = median_interval(spread)
    many_low, many_high = median_interval(spread * 8)
    assert few_low <= 1.0 <= few_high
    assert many_low <= 1.0 <= many_high
    assert many_high - many_low < few_high - few_low


def test_the_interval_is_the_same_for_the_same_rounds():
    rounds = [0.91, 0.97, 1.02, 0.88, 0.99, 1.04]
    assert median_interval(rounds) == median_interval(list(rounds))


@pytest.mark.parametrize(("interval", "expected"), [
    ((0.95, 1.02), "met"), ((0.96, 0.99), "met"),
    ((0.80, 0.949), "missed"),
    ((0.93, 0.97), "undecided"),
])
def test_a_bound_is_met_only_by_the_whole_interval_and_missed_only_below_it(interval, expected):
    assert verdict(interval, 0.95) == expected


def test_the_summary_of_rounds_clearly_below_the_bound_is_missed():
    found = summary([80, 82, 79, 81, 80, 83], [100, 100, 100, 100, 100, 100], 0.95)
    assert found["round_ratios"] == [0.8, 0.82, 0.79, 0.81, 0.8, 0.83]
    assert found["median_ratio"] == 0.805
    assert found["median_interval"][0] >= 0.79 and found["median_interval"][1] <= 0.83
    assert found["verdict"] == "missed"


def test_one_round_gives_its_own_ratio_as_the_interval():
    assert summary([90], [100], 0.95) == {"round_ratios": [0.9], "median_ratio": 0.9,
                                          "median_interval": [0.9, 0.9], "verdict": "missed"}
