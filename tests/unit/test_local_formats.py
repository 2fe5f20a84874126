"""Dates, times and amounts for people (app/dashboard/formatting.py): one format per locale through
Babel, in the reader's time zone; amounts never parsed with Babel, typed days parsed per locale."""
from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from app.dashboard.formatting import (
    Display,
    amount_text,
    change_text,
    day_input_hint,
    day_text,
    parse_day,
    percent_text,
    retyped_day,
    when,
    when_lines,
)

WINTER = datetime(2026, 1, 27, 9, 44, 48, tzinfo=UTC)
SUMMER = datetime(2026, 7, 27, 9, 44, 48, tzinfo=UTC)


@pytest.mark.parametrize("shown, moment, text", [
    (Display(), WINTER, "27 Jan 2026, 09:44:48 UTC"),
    (Display("en-GB", "Europe/Berlin"), WINTER, "27 Jan 2026, 10:44:48 CET"),
    (Display("en-GB", "Europe/Berlin"), SUMMER, "27 Jul 2026, 11:44:48 CEST"),
    (Display("en-GB", "America/New_York"), WINTER, "27 Jan 2026, 04:44:48 EST"),
    (Display("en-US", "America/New_York"), WINTER, "Jan 27, 2026, 4:44:48\u202fAM EST"),
    (Display("de-DE", "Europe/Berlin"), WINTER, "27.01.2026, 10:44:48 CET"),
])
def test_a_moment_is_written_in_the_readers_zone_and_locale_with_the_zone(shown, moment, text):
    assert when(moment, shown) == text


@pytest.mark.parametrize("shown, lines", [
    (Display(), ("27 Jan 2026,", "09:44:48 UTC")),
    (Display("en-US", "America/New_York"), ("Jan 27, 2026,", "4:44:48\u202fAM EST")),
    (Display("de-DE", "Europe/Berlin"), ("27.01.2026,", "10:44:48 CET")),
])
def test_a_moment_on_two_lines_is_its_day_then_its_time_as_the_locale_joins_them(shown, lines):
    assert when_lines(WINTER, shown) == lines
    assert " ".join(lines) == when(WINTER, shown)


@pytest.mark.parametrize("locale, amount, currency, text", [
    ("en-GB", "1234567.5", "EUR", "1,234,567.50"),
    ("en-US", "1234.5", "USD", "1,234.50"),
    ("de-DE", "1234567.5", "EUR", "1.234.567,50"),
    ("de-DE", "1500", "JPY", "1.500"),
    ("en-GB", "1.25", "KWD", "1.250"),
    ("de-DE", "-20", "EUR", "-20,00"),
])
def test_an_amount_has_the_currencys_digits_and_the_locales_signs(locale, amount, currency, text):
    assert amount_text(Decimal(amount), currency, Display(locale)) == text


@pytest.mark.parametrize("locale, typed", [("en-GB", "29/10/2026"), ("en-US", "10/29/2026"),
                                           ("de-DE", "29.10.2026"), ("en-GB", "2026-10-29")])
def test_a_day_is_typed_in_the_locales_pattern_or_as_iso(locale, typed):
    assert parse_day(typed, Display(locale)) == date(2026, 10, 29)


@pytest.mark.parametrize("typed", ["yesterday", "2026-3-1", "32/01/2026", "29/13/2026", ""])
def test_a_day_that_is_no_day_is_refused(typed):
    with pytest.raises(ValueError):
        parse_day(typed, Display("en-GB"))


def test_the_hint_and_the_field_show_the_locales_pattern():
    assert day_input_hint(Display("en-GB")) == "day/month/year, e.g. 29/10/2026"
    assert day_input_hint(Display("en-US")) == "month/day/year, e.g. 10/29/2026"
    assert day_input_hint(Display("de-DE")) == "day.month.year, e.g. 29.10.2026"
    assert retyped_day("2026-03-01", Display("de-DE")) == "01.03.2026"
    assert retyped_day("March", Display("de-DE")) == "March"
    assert day_text(date(2026, 10, 29), Display("en-US")) == "Oct 29, 2026"


def test_a_change_against_the_previous_period_in_words():
    assert change_text(110, 100, Display()) == "+10.0 %"
    assert change_text(18005, 99900, Display()) == "-82.0 %"
    assert change_text(5, 0, Display()) == "new"
    assert change_text(0, 0, Display()) == "–"
    assert change_text(100, 100, Display()) == "0.0 %"
    assert change_text(1, 3, Display("de-DE")) == "-66,7 %"
    assert percent_text(Decimal("31.9"), Display("de-DE")) == "31,9 %"
