"""Small shared helpers."""
from __future__ import annotations

import pytest

from app.util import MAX_JSON_DEPTH, json_too_deep, whole_number


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


@pytest.mark.parametrize("text, too_deep", [
    ("[" * 64 + "]" * 64, False),
    ("[" * 65 + "]" * 65, True),
    ('{"a": ' * 65 + "1" + "}" * 65, True),
    ("[" + "[]," * 500 + "[]]", False),  # many arrays side by side: wide, not deep
    ('["' + "[" * 100 + '"]', False),  # brackets inside a string do not count
    ('["\\"' + ", " + "[" * 65 + "]" * 65 + "]", True),  # an escaped backslash ends no string early
    ('["\\""' + "[" * 10 + "]", False),  # nor does an escaped quote: no JSON, counted loosely
    (b"[" * 100_000 + b"1" + b"]" * 100_000, True),
    ("", False),
])
def test_json_too_deep(text, too_deep):
    assert MAX_JSON_DEPTH == 64
    assert json_too_deep(text) is too_deep

