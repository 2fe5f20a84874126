"""Money: exact Decimals with ISO 4217 minor digits."""
from __future__ import annotations

from decimal import Decimal

import pytest

from app.payments.money import (
    UnknownCurrency,
    decimal_places,
    fits_currency,
    format_amount,
    from_minor,
    is_currency,
    minor_digits,
    parse_decimal,
    quantize,
    to_minor,
)


@pytest.mark.parametrize("currency,digits", [("EUR", 2), ("JPY", 0), ("KWD", 3), ("NGN", 2), ("CLF", 4)])
def test_minor_digits_follow_iso_4217(currency, digits):
    assert minor_digits(currency) == digits


@pytest.mark.parametrize("code", ["XAU", "XXX", "ABC", "eur", "EURO", "", 978, None])
def test_non_payment_currencies_are_not_currencies(code):
    assert is_currency(code) is False


def test_unknown_currency_raises():
    with pytest.raises(UnknownCurrency):
        minor_digits("ABC")


@pytest.mark.parametrize("amount,currency,written", [
    (Decimal("100"), "EUR", "100.00"), (Decimal("100"), "JPY", "100"), (Decimal("1"), "KWD", "1.000"),
    (Decimal("0.1"), "EUR", "0.10"), (Decimal("12.500"), "EUR", "12.50"),
])
def test_amounts_are_written_with_the_currency_digits(amount, currency, written):
    assert format_amount(amount, currency) == written


def test_quantize_never_rounds_a_value_away():
    with pytest.raises(ValueError):
        quantize(Decimal("10.005"), "EUR")


def test_minor_units_round_trip_exactly():
    for text in ("0.01", "0.10", "99999999.99", "1000000000.00"):
        amount = Decimal(text)
        assert from_minor(to_minor(amount, "EUR"), "EUR") == amount
    assert to_minor(Decimal("1.5"), "EUR") == 150
    assert to_minor(Decimal("7"), "JPY") == 7


def test_decimal_places_ignore_trailing_zeros():
    assert decimal_places(Decimal("1.500")) == 1
    assert decimal_places(Decimal("1E+3")) == 0
    assert fits_currency(Decimal("10.10"), "EUR")
    assert not fits_currency(Decimal("10.001"), "EUR")


@pytest.mark.parametrize("value", [True, False, "1", 1.5, None, [], Decimal("NaN"), Decimal("Infinity")])
def test_parse_decimal_takes_only_exact_finite_numbers(value):
    assert parse_decimal(value) is None


def test_parse_decimal_keeps_ints_and_decimals_exact():
    assert parse_decimal(3) == Decimal(3)
    assert parse_decimal(Decimal("0.1")) == Decimal("0.1")
