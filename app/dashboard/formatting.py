"""How the dashboard writes amounts and times for people: in the signed-in user's locale (Babel)
and time zone, one format per locale on every page. The API and the CSV's machine columns stay UTC
and plain decimals."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from babel import Locale
from babel.dates import format_date, format_datetime, format_skeleton, format_time, get_date_format, parse_date
from babel.numbers import format_currency, format_decimal
from flask import Flask, has_request_context
from flask_login import current_user
from markupsafe import Markup

from app.auth.users import DEFAULT_LOCALE
from app.payments import declines
from app.payments.accounts import mask_account_number
from app.payments.formats import code_in_words
from app.payments.money import format_amount, from_minor


# What a user may choose (BCP 47 tags, the words stay English: only dates and numbers follow it).
LOCALES = ("en-GB", "en-US", "en-NG", "de-DE", "fr-FR", "nl-NL")
DEFAULT_ZONE = "UTC"
# The number part of an amount: the locale's grouping and decimal signs, the currency's digits
# (Babel's currency_digits), no symbol: the ISO code follows it, as in the API.
_AMOUNT_PATTERN = "#,##0.00"
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class Display:
    """Where and how one person reads times and amounts: a locale tag and a time zone."""

    locale: str = DEFAULT_LOCALE
    zone: str = DEFAULT_ZONE

    @property
    def babel(self) -> str:
        return self.locale.replace("-", "_")

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)


def display() -> Display:
    """The signed-in user's locale and time zone (theirs, else their merchant's zone), or the
    defaults outside a request or before sign-in."""
    if has_request_context() and current_user and current_user.is_authenticated:
        return Display(current_user.locale, current_user.time_zone)
    return Display()


@cache
def time_zones() -> tuple[str, ...]:
    """Every IANA time zone name this machine knows, sorted, UTC first."""
    return ("UTC", *sorted(z for z in available_timezones() if z != "UTC" and "/" in z
                           and not z.startswith(("Etc/", "SystemV/", "US/"))))


def is_time_zone(name: str | None) -> bool:
    return bool(name) and name in time_zones()


def locale_name(tag: str) -> str:
    """A locale in its own words and in English: Deutsch (Deutschland) – German (Germany)."""
    found = Locale.parse(tag.replace("-", "_"))
    own, english = found.get_display_name(), found.get_display_name("en")
    return own if own == english else f"{own} – {english}"


def amount_text(amount: Decimal, currency: str, shown: Display | None = None) -> str:
    """The amount with the currency's digits, in the locale's signs: 1,234.56 (en-GB),
    1.234,56 (de-DE); JPY 1,235; KWD 1.000. Amounts are written, never parsed, with Babel."""
    return format_currency(Decimal(format_amount(amount, currency)), currency, format=_AMOUNT_PATTERN,
                           currency_digits=True, locale=(shown or display()).babel)


def percent_text(value: Decimal, shown: Display | None = None) -> str:
    """A percentage to one decimal in the locale's signs: 31.9 % (en-GB), 31,9 % (de-DE)."""
    return f"{format_decimal(value, format='#,##0.0', locale=(shown or display()).babel)} %"


def change_text(now: int, before: int, shown: Display | None = None) -> str:
    """A figure's change against the previous period, to one decimal (half up): "+12.5 %",
    "-3.0 %", "0.0 %"; "new" when the previous period had none, "–" when neither had any."""
    if not before:
        return "new" if now else "–"
    change = (Decimal((now - before) * 100) / Decimal(abs(before))).quantize(
        Decimal("0.1"), rounding=ROUND_HALF_UP)
    sign = "+" if change > 0 else ""
    return f"{sign}{percent_text(change, shown)}"


def number_text(value: int | Decimal, shown: Display | None = None) -> str:
    """A count or percentage in the locale's signs: 12,345 (en-GB), 12.345 (de-DE)."""
    return format_decimal(value, locale=(shown or display()).babel)


@dataclass(frozen=True)
class MoneyText:
    """An amount written for people: text in a sentence, amount and currency marked up in a page."""

    amount: str
    currency: str

    def __str__(self) -> str:
        return f"{self.amount} {self.currency}"

    def __html__(self) -> str:
        return Markup('<span class="money"><span class="money-amount">{}</span> '
                      '<span class="money-currency">{}</span></span>').format(self.amount, self.currency)


def money(amount: Decimal, currency: str) -> MoneyText:
    """Amount and currency together: 1,234.56 EUR."""
    return MoneyText(amount_text(amount, currency), currency)


def money_of_minor(amount_minor: int, currency: str) -> MoneyText:
    """An amount stored in minor units, signed (a settlement's refund line), as money()."""
    return money(from_minor(amount_minor, currency), currency)


def minor_money(amount_minor: int | None, currency: str | None) -> str:
    """An amount stored in minor units (audit log) as text, or an empty text when there is none."""
    if amount_minor is None or not currency:
        return ""
    return str(money(from_minor(amount_minor, currency), currency))


def when(moment: datetime | None, shown: Display | None = None) -> str:
    """A moment in the reader's zone and locale, to the second, with the zone's abbreviation:
    27 Nov 2026, 10:44:48 CET (en-GB), Nov 27, 2026, 10:44:48 AM CET (en-US),
    27.11.2026, 10:44:48 CET (de-DE)."""
    if moment is None:
        return ""
    shown = shown or display()
    local = moment.astimezone(shown.tz)
    return f"{format_datetime(local, 'medium', tzinfo=shown.tz, locale=shown.babel)} {local.tzname()}"


def when_lines(moment: datetime, shown: Display | None = None) -> tuple[str, str]:
    """when's text as its day and its time of day, for a narrow column to show on two lines:
    ("27 Nov 2026,", "10:44:48 CET"); ("", the whole text) where the locale puts the time first."""
    whole = when(moment, shown)
    clock = clock_text(moment, shown)
    if len(whole) > len(clock) and whole.endswith(clock):
        return whole[:-len(clock)].rstrip(), clock
    return "", whole


def clock_text(moment: datetime, shown: Display | None = None) -> str:
    """The time of day of a moment in the reader's zone and locale, with the zone's abbreviation:
    08:00:00 CET (en-GB, de-DE), 8:00:00 AM CET (en-US)."""
    shown = shown or display()
    local = moment.astimezone(shown.tz)
    return f"{format_time(local, 'medium', tzinfo=shown.tz, locale=shown.babel)} {local.tzname()}"


def local_day(moment: datetime, shown: Display | None = None) -> date:
    """The calendar day a moment falls on in the reader's zone."""
    return moment.astimezone((shown or display()).tz).date()


def day_text(day: date | None, shown: Display | None = None) -> str:
    """A calendar day: 29 Oct 2026 (en-GB), Oct 29, 2026 (en-US), 29.10.2026 (de-DE)."""
    if day is None:
        return ""
    return format_date(day, "medium", locale=(shown or display()).babel)


def short_day_text(day: date, shown: Display | None = None) -> str:
    """A day without its year, for chart axes: 29 Oct, Oct 29, 29. Okt."""
    return format_skeleton("MMMd", day, locale=(shown or display()).babel)


def day_input_pattern(shown: Display | None = None) -> str:
    """The locale's numeric day pattern with a four-digit year, for typed dates: dd/MM/yyyy,
    M/d/yyyy, dd.MM.yyyy."""
    pattern = get_date_format("short", locale=(shown or display()).babel).pattern
    return re.sub(r"y+", "yyyy", pattern)


def day_input_text(day: date | None, shown: Display | None = None) -> str:
    """A day as a date field shows it: 29/10/2026 (en-GB), 10/29/2026 (en-US), 29.10.2026."""
    if day is None:
        return ""
    return format_date(day, day_input_pattern(shown), locale=(shown or display()).babel)


def day_input_hint(shown: Display | None = None) -> str:
    """How to type a day, in words and by example: day/month/year, e.g. 29/10/2026."""
    shown = shown or display()
    pattern = day_input_pattern(shown)
    words = re.sub(r"d+", "day", re.sub(r"M+", "month", re.sub(r"y+", "year", pattern)))
    return f"{words}, e.g. {day_input_text(date(2026, 10, 29), shown)}"


def retyped_day(text: str | None, shown: Display | None = None) -> str:
    """A day from a query string as the date field shows it (2026-03-01 -> 01/03/2026 in
    en-GB); text that is no day stays as it was typed, for the user to correct."""
    try:
        return day_input_text(parse_day(text or "", shown), shown)
    except ValueError:
        return text or ""


def parse_day(text: str, shown: Display | None = None) -> date:
    """A typed day in the reader's locale (29/10/2026 in en-GB), or YYYY-MM-DD as links and
    scripts write it. Raises ValueError when it is neither."""
    text = text.strip()
    if _ISO_DAY.fullmatch(text):
        return date.fromisoformat(text)
    if not re.fullmatch(r"[0-9]{1,2}[./-][0-9]{1,2}[./-][0-9]{2,4}", text):
        raise ValueError(text)
    return parse_date(text, locale=(shown or display()).babel, format="short")


def when_iso(moment: datetime | None) -> str:
    """Machine-readable time for <time datetime=...>."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def deadline_words(due: datetime | None, now: datetime, shown: Display | None = None) -> str:
    """A deadline as people say it, by the reader's calendar days: "due in 3 days, 30 Nov 2026",
    "due today, 27 Nov 2026", "due tomorrow, 28 Nov 2026", "overdue by 2 days, 25 Nov 2026"."""
    if due is None:
        return "no deadline given"
    days = (local_day(due, shown) - local_day(now, shown)).days
    day = day_text(local_day(due, shown), shown)
    if days == 0:
        return f"due today, {day}"
    if days == 1:
        return f"due tomorrow, {day}"
    if days > 1:
        return f"due in {days} days, {day}"
    return f"overdue by {-days} day{'s' if days < -1 else ''}, {day}"


def duration(delay: timedelta) -> str:
    """A delay in its largest whole unit: 5 s, 5 min, 2 h."""
    seconds = int(delay.total_seconds())
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def in_words(items: list[str]) -> str:
    """Items as a sentence lists them: a, b and c."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def masked(account_number: str | None) -> str:
    """Account numbers are only ever shown masked in the dashboard."""
    return mask_account_number(account_number) if account_number else ""


_WORD = re.compile(r"[A-Z][a-z]*|[0-9]+")
_ACRONYMS = {"Id": "ID", "Url": "URL"}


def field_label(name: str) -> str:
    """An API field name for people: ProviderTransactionId -> Provider transaction ID."""
    words = [_ACRONYMS.get(w, w) for w in _WORD.findall(name)] or [name]
    return " ".join([words[0]] + [w if w.isupper() else w.lower() for w in words[1:]])


_CODE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def code_words(text: str | None) -> str:
    """A machine word for people: needs_response -> Needs response, product_not_received ->
    Product not received. Anything else (a transaction's Captured, a provider's own sentence)
    is shown as it is."""
    if text and _CODE.fullmatch(text):
        return code_in_words(text)
    return text or ""


def register(app: Flask) -> None:
    """Make the formatters available to every template: money() as a function, the rest as filters."""
    app.add_template_global(money, "money")
    app.add_template_global(money_of_minor, "money_minor")
    app.add_template_filter(when, "when")
    app.add_template_filter(clock_text, "clock")
    app.add_template_filter(when_lines, "when_lines")
    app.add_template_filter(when_iso, "when_iso")
    app.add_template_filter(day_text, "day")
    app.add_template_filter(day_input_text, "day_input")
    app.add_template_filter(retyped_day, "retyped_day")
    app.add_template_filter(number_text, "number")
    app.add_template_filter(percent_text, "percent")
    app.add_template_global(day_input_hint, "day_input_hint")
    app.add_template_global(display, "display")
    app.add_template_filter(masked, "masked")
    app.add_template_filter(field_label, "field_label")
    app.add_template_filter(code_words, "code_words")
    app.add_template_global(declines.explain, "decline_explained")
