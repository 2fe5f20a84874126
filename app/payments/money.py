"""Exact money: Decimal amounts with the ISO 4217 minor digits of their currency.

Nothing here uses the decimal context (its 28 digits and exponent limits would round or
overflow): digits and exponents are read from `as_tuple()` and worked with as integers.
"""
from __future__ import annotations

from decimal import Decimal
from functools import cache

import iso4217

# The largest amount accepted anywhere (major units). Far above any real card or
# payout, small enough that minor units fit a 64-bit integer for every currency.
MAX_AMOUNT = Decimal("1000000000")
# Minor units are stored in 64-bit integer columns: no amount converts past this.
MAX_MINOR_UNITS = 2**63 - 1
_MAX_MINOR_DIGITS = len(str(MAX_MINOR_UNITS))


class UnknownCurrency(ValueError):
    """The code is not an active ISO 4217 currency."""


@cache
def minor_digits(currency: str) -> int:
    """Number of minor digits ISO 4217 gives the currency (EUR 2, JPY 0, KWD 3)."""
    try:
        found = iso4217.Currency(currency)
    except (ValueError, KeyError):
        raise UnknownCurrency(currency) from None
    exponent = found.exponent
    if exponent is None:  # funds and metals (XAU, XDR...) are not payment currencies
        raise UnknownCurrency(currency)
    return exponent


@cache
def currencies_by_minor_digits() -> dict[int, frozenset[str]]:
    """Every currency minor_digits() knows, grouped by its digits ({0: JPY..., 2: EUR..., 3: KWD...})."""
    groups: dict[int, set[str]] = {}
    for currency in iso4217.Currency:
        if currency.exponent is not None:
            groups.setdefault(currency.exponent, set()).add(currency.code)
    return {digits: frozenset(codes) for digits, codes in sorted(groups.items())}


def is_currency(code: object) -> bool:
    """True for an upper-case, active ISO 4217 code with minor digits."""
    if not isinstance(code, str) or len(code) != 3 or not code.isupper():
        return False
    try:
        minor_digits(code)
    except UnknownCurrency:
        return False
    return True


def _significant(amount: Decimal) -> tuple[int, str, int]:
    """The amount as (sign, digits, exponent) with trailing zeros moved into the exponent:
    exactly (-1)**sign * int(digits) * 10**exponent. Zero is (sign, "0", 0)."""
    if not amount.is_finite():
        raise ValueError(f"{amount} is not a finite amount")
    sign, digit_tuple, exponent = amount.as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    if not digits:
        return sign, "0", 0
    return sign, digits, exponent + len(digit_tuple) - len(digits)


def decimal_places(amount: Decimal) -> int:
    """Digits after the point that carry a value (100.50 has 1, 100.00 has 0), counted exactly."""
    _sign, _digits, exponent = _significant(amount)
    return max(0, -exponent)


def fits_currency(amount: Decimal, currency: str) -> bool:
    """True when the amount needs no more digits than the currency has."""
    return decimal_places(amount) <= minor_digits(currency)


class _TooManyDecimals(ValueError):
    """Finer than the units asked for."""


class _TooLarge(ValueError):
    """Past a 64-bit number of units."""


def to_minor(amount: Decimal, currency: str) -> int:
    """Integer minor units for storage (100.00 EUR -> 10000); ValueError rather than rounding,
    and for amounts past what minor units can hold."""
    try:
        return to_units(amount, minor_digits(currency))
    except _TooManyDecimals:
        raise ValueError(f"{amount} has more decimals than {currency} allows") from None
    except _TooLarge:
        raise ValueError(f"{amount} is beyond any amount in {currency}") from None


def to_units(amount: Decimal, places: int) -> int:
    """The amount as a whole number of 10**-places units (places 2: 1.50 -> 150), exactly;
    ValueError for a finer amount or one past a 64-bit integer."""
    sign, digits, exponent = _significant(amount)
    if -exponent > places:
        raise _TooManyDecimals(f"{amount} is finer than {places} decimal places")
    if digits == "0":
        return 0
    shift = exponent + places  # >= 0: the amount is a whole number of units
    if len(digits) + shift > _MAX_MINOR_DIGITS:  # checked before 10**shift is built
        raise _TooLarge(f"{amount} is past a 64-bit number of units")
    units = int(digits) * 10**shift
    if units > MAX_MINOR_UNITS:
        raise _TooLarge(f"{amount} is past a 64-bit number of units")
    return -units if sign else units


def from_minor(minor: int, currency: str) -> Decimal:
    """Decimal amount from stored minor units, written with exactly the currency's digits."""
    sign, digits, _exponent = Decimal(minor).as_tuple()
    return Decimal((sign, digits, -minor_digits(currency)))


def quantize(amount: Decimal, currency: str) -> Decimal:
    """The amount written with exactly the currency's minor digits (never rounds a value away)."""
    return from_minor(to_minor(amount, currency), currency)


def format_amount(amount: Decimal, currency: str) -> str:
    """The amount as the API writes it: 100.00 EUR, 100 JPY, 1.000 KWD."""
    return str(quantize(amount, currency))


def parse_decimal(value: object) -> Decimal | None:
    """A finite Decimal from a JSON number already parsed exactly; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    amount = Decimal(value)  # exact for int and Decimal alike
    return amount if amount.is_finite() else None

