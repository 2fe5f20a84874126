"""Money: exact Decimals with ISO 4217 minor digits."""
from __future__ import annotations

from decimal import Context, Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# The default decimal context keeps 28 digits and exponents down to -999999: none of
# that may decide an amount. These are the examples and their relatives.
@pytest.mark.parametrize("text,places", [
    ("10.000000000000000000000000000001", 30),
    ("99.999999999999999999999999999999", 30),
    ("9.99999999999999999999999999999999", 32),
    ("1e-1000000000", 1000000000),
    ("1E-999999999999999999", 999999999999999999),
    ("1." + "0" * 5000, 0),
    ("0.5" + "0" * 5000, 1),
    ("0E-1000000000", 0),
    ("1E+999999999999999999", 0),
])
def test_decimal_places_are_counted_exactly(text, places):
    assert decimal_places(Decimal(text)) == places


@pytest.mark.parametrize("text", [
    "10.000000000000000000000000000001", "99.999999999999999999999999999999", "1e-1000000000",
    "0.001", "1E+999999999999999999", "-1E+999999999999999999", "1" * 5000,
])
def test_minor_units_are_never_rounded_and_never_huge(text):
    """An amount the currency cannot hold exactly, or one past any stored amount, is refused
    at once (no 10**n is built for a huge exponent)."""
    with pytest.raises(ValueError):
        to_minor(Decimal(text), "EUR")
    with pytest.raises(ValueError):
        format_amount(Decimal(text), "EUR")


def test_minor_units_of_long_writings_of_plain_amounts():
    assert to_minor(Decimal("12.3" + "0" * 5000), "EUR") == 1230
    assert to_minor(Decimal("0E+999999999999999999"), "EUR") == 0
    assert to_minor(Decimal("1E+9"), "EUR") == 100000000000
    assert format_amount(Decimal("1E+3"), "JPY") == "1000"


def test_money_does_not_depend_on_the_decimal_context():
    with localcontext(Context(prec=3, Emin=-5, Emax=5, traps=[])):
        assert decimal_places(Decimal("10.000000000000000000000000000001")) == 30
        assert to_minor(Decimal("123456789.12"), "EUR") == 12345678912
        assert from_minor(12345678912, "EUR") == Decimal("123456789.12")
        assert format_amount(Decimal("999999999.99"), "EUR") == "999999999.99"
        assert format_amount(Decimal("0.1"), "KWD") == "0.100"
        assert str(from_minor(0, "CLF")) == "0.0000"


# Any finite Decimal: up to 60 digits (well past the context's 28), exponents either side of
# the minor digits. Fraction is the oracle: exact, and blind to any decimal context.
def decimal_of(sign: int, digits: list[int], exponent: int) -> Decimal:
    return Decimal((sign, tuple(digits), exponent))


any_decimal = st.builds(decimal_of, st.integers(0, 1),
                        st.lists(st.integers(0, 9), min_size=1, max_size=60), st.integers(-70, 30))


@given(amount=any_decimal, currency=st.sampled_from(["EUR", "JPY", "KWD", "CLF"]))
def test_minor_units_are_the_exact_value_or_refused(amount, currency):
    scaled = Fraction(amount) * 10 ** minor_digits(currency)
    exact = scaled.denominator == 1 and abs(scaled) < 2 ** 63
    assert fits_currency(amount, currency) == (scaled.denominator == 1)
    if exact:
        assert to_minor(amount, currency) == scaled
        assert Fraction(from_minor(to_minor(amount, currency), currency)) == Fraction(amount)
        assert Decimal(format_amount(amount, currency)) == amount
    else:
        with pytest.raises(ValueError):
            to_minor(amount, currency)
