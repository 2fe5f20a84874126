"""The Overview charts' geometry: scales that reach the largest day, exact coordinates, readable
axis labels in the currency's digits, and a few dates under the axis."""
from __future__ import annotations

from datetime import date, timedelta
from fractions import Fraction

import pytest

from app.dashboard.charts import (
    PLOT_BOTTOM,
    PLOT_LEFT,
    PLOT_RIGHT,
    PLOT_TOP,
    axis_amount,
    daily_chart,
    decline_chart,
    labelled_days,
    nice_step,
    px,
)
from app.store.overview import CurrencyOverview, DayFigures, DeclineCount


@pytest.mark.parametrize("largest, step", [(1, 1), (4, 1), (5, 2), (15000, 5000), (20001, 10000),
                                           (123456, 50000), (0, 1)])
def test_the_step_is_one_two_or_five_times_a_power_of_ten_reaching_the_largest_in_four(largest, step):
    assert nice_step(largest) == step


def test_coordinates_are_written_to_a_tenth_without_floats():
    assert [px(Fraction(25, 2)), px(40), px(Fraction(-32, 10)), px(Fraction(1, 3))] == ["12.5", "40", "-3.2", "0.3"]


@pytest.mark.parametrize("minor, step, currency, label", [
    (1200000, 500000, "EUR", "12,000"), (50, 50, "EUR", "0.50"), (1500, 500, "JPY", "1,500"),
    (500, 500, "KWD", "0.500"), (1000, 500, "KWD", "1.000"), (2000, 1000, "KWD", "2"),
])
def test_axis_labels_drop_zero_decimals_only_when_the_axis_steps_by_whole_units(minor, step, currency, label):
    assert axis_amount(minor, step, currency) == label


@pytest.mark.parametrize("count, labelled", [(1, [0]), (3, [0, 1, 2]), (7, [0, 2, 4, 6]),
                                             (30, [0, 8, 16, 24, 29]), (90, [0, 23, 46, 69, 89])])
def test_at_most_five_days_are_written_under_the_axis_first_and_last_included(count, labelled):
    assert labelled_days(count) == labelled


def _figures(*days: tuple[int, int]) -> CurrencyOverview:
    first = date(2026, 3, 1)
    return CurrencyOverview("EUR", [DayFigures(first + timedelta(days=n), captured_minor=c, refunded_minor=r)
                                    for n, (c, r) in enumerate(days)])


def test_the_daily_chart_puts_zero_on_the_axis_and_the_top_tick_at_the_top():
    chart = daily_chart(_figures((15000, 0), (2005, 5000), (1000, 750)))
    assert [(t.label, t.position) for t in chart.y_ticks] == [
        ("0", str(PLOT_BOTTOM)), ("50", "139.3"), ("100", "82.7"), ("150", str(PLOT_TOP))]
    assert (chart.captured[0].x, chart.captured[0].y) == (str(PLOT_LEFT), str(PLOT_TOP))
    assert chart.captured[-1].x == str(PLOT_RIGHT)
    # 170 units tall for 150.00 (room above for the unit, below for the days' axis title): 50.00
    # is 56.7 up, 7.50 is 8.5 up; 2 Mar halfway from 52 to 340.
    assert (PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM) == (52, 340, 26, 196)
    assert chart.refunded_line == "52,196 196,139.3 340,187.5"
    assert [t.label for t in chart.x_ticks] == ["1 Mar", "2 Mar", "3 Mar"]
    assert chart.marked


def test_a_range_with_nothing_captured_still_has_a_scale_of_one_unit():
    chart = daily_chart(_figures((0, 0), (0, 0)))
    assert [t.label for t in chart.y_ticks] == ["0.00", "0.50", "1.00"]
    assert "Nothing captured. Nothing refunded." in chart.description


def test_decline_bars_are_as_long_as_their_counts_say_the_longest_full_width():
    chart = decline_chart("EUR", [DeclineCount("Insufficient Funds", 4), DeclineCount("Card Expired", 1)])
    assert [(b.reason, b.bar_width) for b in chart.bars] == [("Insufficient Funds", "316"), ("Card Expired", "79")]
    assert chart.description == "5 declined payments: Insufficient Funds 4; Card Expired 1."
