"""How the dashboard writes amounts and times for people."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from flask import Flask
from markupsafe import Markup

from app.payments import declines
from app.payments.accounts import mask_account_number
from app.payments.money import format_amount, from_minor


def amount_text(amount: Decimal, currency: str) -> str:
    """The amount with the currency's digits and thousands separators: 1,234.56 (JPY 1,235; KWD 1.000)."""
    whole, point, fraction = format_amount(amount, currency).partition(".")
    sign = "-" if whole.startswith("-") else ""
    return f"{sign}{int(whole.lstrip('-')):,}{point}{fraction}"


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


def when(moment: datetime | None) -> str:
    """A moment in UTC to the second: 2026-11-22 10:00:05 UTC."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def when_iso(moment: datetime | None) -> str:
    """Machine-readable time for <time datetime=...>."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def deadline_words(due: datetime | None, now: datetime) -> str:
    """A deadline as people say it, by UTC calendar days: "due in 3 days, 30 Nov", "due today,
    27 Nov", "due tomorrow, 28 Nov", "overdue by 2 days, 25 Nov"."""
    if due is None:
        return "no deadline given"
    due = due.astimezone(UTC)
    days = (due.date() - now.astimezone(UTC).date()).days
    day = f"{due.day} {due:%b}"
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


def register(app: Flask) -> None:
    """Make the formatters available to every template: money() as a function, the rest as filters."""
    app.add_template_global(money, "money")
    app.add_template_global(money_of_minor, "money_minor")
    app.add_template_filter(when, "when")
    app.add_template_filter(when_iso, "when_iso")
    app.add_template_filter(masked, "masked")
    app.add_template_filter(field_label, "field_label")
    app.add_template_global(declines.explain, "decline_explained")
