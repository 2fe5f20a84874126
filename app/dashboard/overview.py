"""The Overview page: the landing page of finance and admin, with a date range's figures and charts
per currency in the current mode."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from flask import render_template, request

from app.auth.users import current_caller, requires
from app.payments.money import from_minor
from app.store.overview import CurrencyOverview, overview as overview_figures
from app.web import deps

from . import dashboard
from .charts import daily_chart, decline_chart
from .formatting import change_text, day_input_hint, day_text, parse_day

PRESET_DAYS = (7, 30, 90)
DEFAULT_DAYS = 30
# A custom range spans at most a year and a day: the charts stay readable and the sums bounded.
MAX_RANGE_DAYS = 366


@dataclass(frozen=True)
class DateRange:
    """Whole UTC days, first to last inclusive, and the preset they came from (None: custom)."""


    first: date
    last: date
    preset: int | None = None

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    @property
    def label(self) -> str:
        """The range in words, in the reader's locale: 26 Oct 2026 to 24 Nov 2026."""
        return f"{day_text(self.first)} to {day_text(self.last)}"

    def previous(self) -> "DateRange":
        """As many days just before it: what its figures are compared with."""
        return DateRange(self.first - timedelta(days=self.days), self.first - timedelta(days=1))


def read_range(args, today: date) -> tuple[DateRange, list[str]]:
    """The range the query string asks for, and what could not be understood in it.

    `from` and `to` (YYYY-MM-DD, UTC days) give a custom range; otherwise `days` picks a preset,
    the last 7, 30 or 90 days up to today. Anything not understood falls back to the last 30 days.
    """
    fallback = _last_days(DEFAULT_DAYS, today)
    if args.get("from") or args.get("to"):
        days, problems = {}, []
        for name in ("from", "to"):
            text = args.get(name, "")
            try:
                days[name] = parse_day(text)
            except ValueError:
                problems.append(f"Dates are written {day_input_hint()} ({name} was {text[:20]!r})"
                                if text else f"Give both dates of a custom range ({name} is missing)")
        if problems:
            return fallback, problems
        if days["from"] > days["to"]:
            return fallback, ["The range's first day comes after its last day"]
        custom = DateRange(days["from"], days["to"])
        if custom.days > MAX_RANGE_DAYS:
            return fallback, [f"A range is at most {MAX_RANGE_DAYS} days"]
        return custom, []
    preset = args.get("days", str(DEFAULT_DAYS))
    if preset not in {str(n) for n in PRESET_DAYS}:
        return fallback, [f"Choose a period of {', '.join(map(str, PRESET_DAYS))} days"]
    return _last_days(int(preset), today), []


def _last_days(count: int, today: date) -> DateRange:
    return DateRange(today - timedelta(days=count - 1), today, count)


@dashboard.get("/overview")
@requires("view_overview")
def overview():
    """Captured, refunded and net volume, counts, refund rate and declines per currency over a
    range of UTC days, with a daily chart and a declines chart for each currency."""
    today = deps().clock().date()
    chosen, problems = read_range(request.args, today)
    caller = current_caller()
    before = chosen.previous()
    with deps().uow(write=False) as uow:
        currencies = overview_figures(uow.conn, caller, chosen.first, chosen.last)
        previous = {f.currency: f for f in overview_figures(uow.conn, caller, before.first, before.last)}
    sections = [{"figures": figures, "daily": daily_chart(figures),
                 "declines": decline_chart(figures.currency, figures.declines),
                 "change": _changes(figures, previous.get(figures.currency))}
                for figures in currencies]
    return render_template("dashboard/overview.html", chosen=chosen, problems=problems, before=before,
                           presets=PRESET_DAYS, sections=sections, minor_amount=from_minor)


def _changes(now: CurrencyOverview, before: CurrencyOverview | None) -> dict[str, str]:
    """Each figure's change against the previous period, in words: +12.5 %, -3.0 %, "new", "–"."""
    def minor(figures, name):
        return 0 if figures is None else getattr(figures, name)
    names = ("captured_minor", "refunded_minor", "disputes_lost_minor", "net_minor", "payouts_minor",
             "captured_count", "refund_count", "declined_count", "expired_count", "payout_count")
    return {name: change_text(minor(now, name), minor(before, name)) for name in names}
