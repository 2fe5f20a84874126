"""Reading a listing's query parameters: times, word lists and exact amounts, with the API's messages."""
from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation

from flask import request

from app.payments.model import FieldErrors
from app.payments.money import to_minor

TIME_WORDS = "a date (2026-11-30) or a UTC time (2026-11-30T12:00:00Z)"
# An amount in a query string: digits with an optional fraction, as JSON writes a positive number.
_AMOUNT_TEXT = re.compile(r"(0|[1-9][0-9]{0,17})(\.[0-9]{1,6})?")


class Gathered:
    """A listing's parameters read one by one, every one's errors gathered to be raised together."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def read(self, reader, *args):
        """reader(*args), or None with its FieldErrors kept."""
        try:
            return reader(*args)
        except FieldErrors as error:
            self.errors.update(error.errors)
            return None

    def raise_any(self) -> None:
        """FieldErrors naming every parameter that could not be read, if any."""
        if self.errors:
            raise FieldErrors(self.errors)


def moment(name: str) -> datetime | None:
    """The parameter as an aware UTC time: a date is its midnight UTC; None when absent."""
    given = request.args.get(name)
    if given is None:
        return None
    try:
        if len(given) == 10:
            return datetime.combine(date.fromisoformat(given), time(), UTC)
        found = datetime.fromisoformat(given.replace("Z", "+00:00"))
    except ValueError:
        found = None
    if found is None or found.tzinfo is None:
        raise FieldErrors.one(_field(name), f"{_field(name)} must be {TIME_WORDS}")
    return found.astimezone(UTC)


def words(name: str, allowed: dict[str, object]) -> list | None:
    """The parameter's comma-separated words (repeating it adds more), each one of `allowed`'s keys,
    as their values; None when absent."""
    given = request.args.getlist(name)
    if not given:
        return None
    found = [word.strip() for text in given for word in text.split(",")]
    if not all(word in allowed for word in found):
        raise FieldErrors.one(_field(name), f"{_field(name)} must be one or more of "
                                            f"{', '.join(allowed)}, comma-separated")
    return list(dict.fromkeys(allowed[word] for word in found))


def minor_amount(name: str, currency: str | None) -> int | None:
    """The parameter as minor units of `currency`, read exactly (never through a float); None when
    absent. An amount needs a currency: units differ between currencies."""
    given = request.args.get(name)
    if given is None:
        return None
    field = _field(name)
    if currency is None:
        raise FieldErrors.one(field, f"{field} needs Currency: amounts are compared in one currency")
    if not _AMOUNT_TEXT.fullmatch(given):
        raise FieldErrors.one(field, f"{field} must be a positive amount such as 10.50")
    try:
        return to_minor(Decimal(given), currency)
    except (ValueError, InvalidOperation):
        raise FieldErrors.one(field, f"{field} has more decimals than {currency} allows") from None


def _field(name: str) -> str:
    """A parameter's name as the API's error messages write field names (createdFrom -> CreatedFrom)."""
    return name[:1].upper() + name[1:]
