"""Any JSON number as an amount is stored exactly or refused as an Amount field error.

The oracle reads the number's text with integer arithmetic (no Decimal, no context), so it
cannot share a rounding mistake with the code it checks.
"""
from __future__ import annotations

import json
import re
from decimal import Decimal

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.conftest import payment_body
from tests.support.strategies import json_numbers

MAX_AMOUNT_DIGITS = 10  # 1000000000, the largest amount: ten digits before the point
EUR_DIGITS = 2
FIELD_DIGITS = 4  # the finest any currency goes, checked before the currency is known
NUMBER = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?")


@st.composite
def storable_amounts(draw) -> str:
    """Text of an amount EUR can hold, written in the odd ways JSON allows (1250e-2, 0.1250E+2...)."""
    cents = draw(st.integers(1, 10**9 * 100))
    digits = str(cents) + "0" * draw(st.integers(0, 30))  # cents * 10**zeros
    zeros = len(digits) - len(str(cents))
    point = draw(st.integers(0, len(digits)))
    whole, fraction = digits[:point].lstrip("0") or "0", digits[point:]
    # whole.fraction is digits * 10**-len(fraction); the exponent brings it to cents / 100
    exponent = len(fraction) - zeros - 2
    return whole + (f".{fraction}" if fraction else "") + (f"e{exponent}" if exponent else "")


amount_texts = st.one_of(json_numbers(), storable_amounts())


def expected_error(text: str) -> str | None:
    """The Amount field error a number deserves as an EUR amount, from its text; None when storable."""
    sign, whole, fraction, exponent_text = NUMBER.fullmatch(text).groups()
    fraction = fraction or ""
    digits = (whole + fraction).lstrip("0")
    if sign or not digits:
        return "Amount must be greater than 0"
    significant = digits.rstrip("0")
    exponent = int(exponent_text or "0") - len(fraction) + len(digits) - len(significant)
    # value = int(significant) * 10**exponent, and 10**(length - 1) <= value < 10**length
    length = len(significant) + exponent
    if length > MAX_AMOUNT_DIGITS or (length == MAX_AMOUNT_DIGITS and significant != "1"):
        return "Amount must be at most 1000000000"
    places = max(0, -exponent)
    if places > FIELD_DIGITS:
        return "Amount has too many decimal places"
    if places > EUR_DIGITS:
        return f"Amount has more decimal places than EUR allows ({EUR_DIGITS})"
    return None


def exact(response) -> dict:
    """A response body with its numbers read exactly."""
    return json.loads(response.text, parse_float=Decimal)


def with_amount(body: dict, amount_text: str) -> bytes:
    """The body as JSON with the amount written as this exact number text."""
    return json.dumps({**body, "amount": 0}).replace('"amount": 0', f'"amount": {amount_text}').encode()


def test_the_oracle_reads_numbers_as_intended():
    assert expected_error("1000000000") is None
    assert expected_error("1000000000.00") is None
    assert expected_error("100000000.0e1") is None
    assert expected_error("100000000.001e1") == "Amount must be at most 1000000000"
    assert expected_error("1000000000.01") == "Amount must be at most 1000000000"
    assert expected_error("10000000000e-1") is None
    assert expected_error("1e-1000000000") == "Amount has too many decimal places"
    assert expected_error("10.000000000000000000000000000001") == "Amount has too many decimal places"
    assert expected_error("1.001") == "Amount has more decimal places than EUR allows (2)"
    assert expected_error("-0.0") == "Amount must be greater than 0"
    assert expected_error("0e99999999999999999999") == "Amount must be greater than 0"


PROPERTY = settings(max_examples=150, deadline=None,
                    # one merchant serves every example: each create has its own reference
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(text=amount_texts)
def test_a_created_amount_is_stored_exactly_or_refused(sandbox, text):
    note(f"amount: {text}")  # this pytest shows hypothesis's own example arguments blank
    response = sandbox.post("/transactions", data=with_amount(payment_body(), text))
    error = expected_error(text)
    if error is not None:
        assert (response.status_code, response.json()) == (400, {"errors": {"Amount": [error]}})
        return
    assert response.status_code == 200, response.text
    created = exact(response)
    assert created["amount"] == Decimal(text)
    stored = exact(sandbox.get(f"/transactions/{created['transactionId']}/status"))
    assert stored["Amount"] == Decimal(text)


@PROPERTY
@given(text=amount_texts)
def test_a_refunded_amount_is_stored_exactly_or_refused(sandbox, captured_payment, text):
    note(f"amount: {text}")
    tx_no = captured_payment(1000000000)  # the largest payment: any storable refund fits it
    response = sandbox.post("/transactions/refund", data=with_amount({"txNo": tx_no}, text))
    error = expected_error(text)
    if error is not None:
        assert (response.status_code, response.json()) == (400, {"errors": {"Amount": [error]}})
        assert sandbox.status(tx_no)["Status"] == "Captured"
        return
    assert response.status_code == 200, response.text
    refund = exact(response)
    assert (refund["amount"], refund["status"]) == (Decimal(text), "Captured")
    stored = exact(sandbox.get(f"/transactions/{refund['refundTxNo']}/status"))
    assert stored["Amount"] == Decimal(text)
    expected_status = "Refunded" if Decimal(text) == 1000000000 else "Captured"
    assert sandbox.status(tx_no)["Status"] == expected_status
