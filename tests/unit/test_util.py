"""Small shared helpers."""
from __future__ import annotations

import pytest

from app.util import whole_number


@pytest.mark.parametrize("text,max_digits,expected", [
    ("0", 3, 0),
    ("42", 3, 42),
    ("007", 3, 7),
    ("1000", 3, None),  # too many digits
    ("", 3, None),
    ("-1", 3, None),
    ("+1", 3, None),
    (" 1", 3, None),
    ("1.0", 3, None),
    ("١٢", 3, None),  # Arabic-Indic digits: isdigit() alone would take them
    ("²", 3, None),  # a superscript: isdigit() is True, int() refuses it
    ("9" * 19, 19, 9_999_999_999_999_999_999),
])
def test_whole_number(text, max_digits, expected):
    assert whole_number(text, max_digits) == expected
