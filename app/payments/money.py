"""Exact money: Decimal amounts with the ISO 4217 minor digits of their currency."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import cache

import iso4217

# The largest amount accepted anywhere (major units). Far above any real card or
# payout, small enough that minor units fit a 64-bit integer for every currency.
MAX_AMOUNT = Decimal("1000000000")


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


def is_currency(code: object) -> bool:
    """True for an upper-case, active ISO 4217 code with minor digits."""
    if not isinstance(code, str) or len(code) != 3 or not code.isupper():
        return False
    try:
        minor_digits(code)
    except UnknownCurrency:
        return False
    return True


def decimal_places(amount: Decimal) -> int:
    """Digits after the point that carry a value (100.50 has 1, 100.00 has 0)."""
    normal = amount.normalize()
    exponent = normal.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def fits_currency(amount: Decimal, currency: str) -> bool:
    """True when the amount needs no more digits than the currency has."""
    return decimal_places(amount) <= minor_digits(currency)


def quantize(amount: Decimal, currency: str) -> Decimal:
    """The amount written with exactly the currency's minor digits (never rounds a value away)."""
    digits = minor_digits(currency)
    if decimal_places(amount) > digits:
        raise ValueError(f"{amount} has more decimals than {currency} allows")
    return amount.quantize(Decimal(1).scaleb(-digits))


def format_amount(amount: Decimal, currency: str) -> str:
    """The amount as the API writes it: 100.00 EUR, 100 JPY, 1.000 KWD."""
    return str(quantize(amount, currency))


def to_minor(amount: Decimal, currency: str) -> int:
    """Integer minor units for storage (100.00 EUR -> 10000)."""
    return int(quantize(amount, currency).scaleb(minor_digits(currency)))


def from_minor(minor: int, currency: str) -> Decimal:
    """Decimal amount from stored minor units, with the currency's digits."""
    return quantize(Decimal(minor).scaleb(-minor_digits(currency)), currency)


def parse_decimal(value: object) -> Decimal | None:
    """A finite Decimal from a JSON number already parsed exactly; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None
