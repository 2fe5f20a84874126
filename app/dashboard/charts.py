"""The Overview's charts as geometry for SVG templates (templates/dashboard/_charts.html): scales,
ticks, points and bars in viewBox units, worked out with exact fractions from minor units.

No JavaScript and no file from elsewhere: the page carries the SVG, and its viewBox makes it scale
to any width. Every chart also states what it shows in words (<title>, <desc>), and the page gives
the same numbers as a table.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from fractions import Fraction

from app.payments.money import from_minor, minor_digits
from app.store.overview import CurrencyOverview, DeclineCount

from .formatting import amount_text, day_text, number_text, short_day_text

# Narrow enough that 12-unit text stays readable on a phone (about 11 px at 390 px wide).
WIDTH = 360
# The daily chart: room on the left for the amounts, below for the dates.
DAILY_HEIGHT = 240
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 52, WIDTH - 20, 26, DAILY_HEIGHT - 44
# The box that shows a day's values while the pointer is on it or it has the keyboard's focus.
TIP_WIDTH, TIP_HEIGHT = 150, 46
MAX_Y_TICKS = 4
MAX_X_LABELS = 5
# Points are marked on each day up to a month; beyond that the line alone reads better.
MARKED_DAYS = 31
# The declines chart: a row per reason, its words above its bar.
DECLINE_ROW = 40
DECLINE_TOP = 16
DECLINE_LABEL_ROOM = 44  # right of the longest bar, for its count


def px(value: Fraction | int) -> str:
    """A coordinate to a tenth of a unit, written without a float: 12.5, 40, -3.2."""
    tenths = round(Fraction(value) * 10)
    sign = "-" if tenths < 0 else ""
    whole, tenth = divmod(abs(tenths), 10)
    return f"{sign}{whole}.{tenth}" if tenth else f"{sign}{whole}"


def day_label(day: date) -> str:
    """A day as the axis writes it, in the reader's locale: 3 Mar (en-GB), Mar 3 (en-US)."""
    return short_day_text(day)


def nice_step(largest: int, ticks: int = MAX_Y_TICKS) -> int:
    """The smallest 1, 2 or 5 times a power of ten that reaches `largest` in at most `ticks` steps."""
    if largest <= 0:
        return 1
    power = 1
    while True:
        for factor in (1, 2, 5):
            step = factor * power
            if step * ticks >= largest:
                return step
        power *= 10


def axis_amount(minor: int, step: int, currency: str) -> str:
    """An axis label: in whole units when the axis steps by whole units (12,000), else with the
    currency's digits (0.500)."""
    unit = 10 ** minor_digits(currency)
    if step % unit == 0:
        return number_text(minor // unit)
    return amount_text(from_minor(minor, currency), currency)


@dataclass(frozen=True)
class Tick:
    """A labelled line across the plot (y) or a labelled day under it (x)."""

    position: str
    label: str


@dataclass(frozen=True)
class Point:
    x: str
    y: str


@dataclass(frozen=True)
class DayPoint:
    """One day of the daily chart: its column (what the pointer rests on), its values in words
    and where the box showing them goes."""

    column_x: str
    column_width: str
    words: str
    tip_x: str
    captured: str
    refunded: str
    day: str


@dataclass(frozen=True)
class DailyChart:
    """Captured and refunded per day for one currency, as two lines over shared scales."""

    currency: str
    width: int
    height: int
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    captured: list[Point]
    refunded: list[Point]
    marked: bool
    description: str
    points: list[DayPoint]
    tip_y: int = PLOT_TOP
    tip_width: int = TIP_WIDTH
    tip_height: int = TIP_HEIGHT

    @property
    def captured_line(self) -> str:
        return " ".join(f"{p.x},{p.y}" for p in self.captured)

    @property
    def refunded_line(self) -> str:
        return " ".join(f"{p.x},{p.y}" for p in self.refunded)

    @property
    def captured_area(self) -> str:
        """The captured line closed along the zero line, for a light fill under it."""
        first, last = self.captured[0], self.captured[-1]
        return f"{first.x},{self.plot_bottom} {self.captured_line} {last.x},{self.plot_bottom}"


def daily_chart(figures: CurrencyOverview) -> DailyChart:
    """The daily chart of one currency's figures."""
    currency, days = figures.currency, figures.days
    # A range with nothing captured or refunded (declines only) still gets a scale: one whole unit.
    largest = max([max(d.captured_minor, d.refunded_minor) for d in days] + [0]) \
        or 10 ** minor_digits(currency)
    step = nice_step(largest)
    top_value = step * max(1, -(-largest // step))
    height = PLOT_BOTTOM - PLOT_TOP

    def y(minor: int) -> str:
        return px(PLOT_BOTTOM - Fraction(minor * height, top_value))

    span = PLOT_RIGHT - PLOT_LEFT
    count = len(days)

    def x(index: int) -> str:
        return px(PLOT_LEFT + (Fraction(span * index, count - 1) if count > 1 else Fraction(span, 2)))

    y_ticks = [Tick(y(value), axis_amount(value, step, currency)) for value in range(0, top_value + 1, step)]
    x_ticks = [Tick(x(i), day_label(days[i].day)) for i in labelled_days(count)]
    column = Fraction(span, count)
    points = []
    for i, d in enumerate(days):
        middle = PLOT_LEFT + (Fraction(span * i, count - 1) if count > 1 else Fraction(span, 2))
        captured = amount_text(from_minor(d.captured_minor, currency), currency) + f" {currency}"
        refunded = amount_text(from_minor(d.refunded_minor, currency), currency) + f" {currency}"
        left = max(middle - column / 2, Fraction(PLOT_LEFT))
        right = min(middle + column / 2, Fraction(PLOT_RIGHT))
        tip_x = min(max(middle - TIP_WIDTH // 2, Fraction(PLOT_LEFT)), Fraction(PLOT_RIGHT - TIP_WIDTH))
        points.append(DayPoint(
            column_x=px(left), column_width=px(right - left),
            words=f"{day_text(d.day)}: captured {captured}, refunded {refunded}", tip_x=px(tip_x),
            captured=f"Captured {captured}", refunded=f"Refunded {refunded}", day=day_text(d.day)))
    return DailyChart(
        currency=currency, width=WIDTH, height=DAILY_HEIGHT, plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT, plot_top=PLOT_TOP, plot_bottom=PLOT_BOTTOM, y_ticks=y_ticks,
        x_ticks=x_ticks,
        captured=[Point(x(i), y(d.captured_minor)) for i, d in enumerate(days)],
        refunded=[Point(x(i), y(d.refunded_minor)) for i, d in enumerate(days)],
        marked=count <= MARKED_DAYS, description=_daily_description(figures), points=points,
    )


def labelled_days(count: int) -> list[int]:
    """Which of `count` days get a date under the axis: evenly spaced, at most MAX_X_LABELS, the
    first and the last always (a regular one too close to the last gives way to it)."""
    every = max(1, -(-(count - 1) // (MAX_X_LABELS - 1)))
    regular = list(range(0, count - 1, every))
    if len(regular) > 1 and count - 1 - regular[-1] < every / 2:
        regular.pop()
    return regular + [count - 1]


def _daily_description(figures: CurrencyOverview) -> str:
    currency, days = figures.currency, figures.days
    first, last = days[0].day, days[-1].day
    words = [f"{len(days)} days, {day_text(first)} to {day_text(last)}."]
    for name, pick in (("captured", lambda d: d.captured_minor), ("refunded", lambda d: d.refunded_minor)):
        peak = max(days, key=lambda d: (pick(d), -d.day.toordinal()))
        if pick(peak):
            words.append(f"Most {name}: {amount_text(from_minor(pick(peak), currency), currency)} "
                         f"{currency} on {day_label(peak.day)}.")
        else:
            words.append(f"Nothing {name}.")
    words.append("The table of figures by day gives every day.")
    return " ".join(words)


@dataclass(frozen=True)
class Bar:
    """One reason's bar: where its words go, the bar, and its count at the bar's end."""

    reason: str
    count: int
    label_y: str
    bar_y: str
    bar_width: str
    count_x: str


@dataclass(frozen=True)
class DeclineChart:
    """Declined payments by reason, one horizontal bar each, most frequent on top."""

    currency: str
    width: int
    height: int
    bar_height: int
    bars: list[Bar]
    description: str


def decline_chart(currency: str, declines: list[DeclineCount]) -> DeclineChart:
    """The declines chart of one currency (declines already most frequent first)."""
    most = max([d.count for d in declines] + [1])
    room = WIDTH - DECLINE_LABEL_ROOM
    bars = []
    for row, decline in enumerate(declines):
        top = DECLINE_TOP + row * DECLINE_ROW
        length = Fraction(room * decline.count, most)
        bars.append(Bar(decline.reason, decline.count, label_y=px(top + 13), bar_y=px(top + 19),
                        bar_width=px(max(length, Fraction(2))), count_x=px(length + 6)))
    total = sum(d.count for d in declines)
    description = (f"{total} declined payment{'s' if total != 1 else ''}: "
                   + "; ".join(f"{d.reason} {d.count}" for d in declines) + ".")
    return DeclineChart(currency, WIDTH, DECLINE_TOP * 2 + DECLINE_ROW * len(declines), 14, bars,
                        description)
