"""CSV cells a spreadsheet would run as formulas are written as text; the rest as they are."""
from __future__ import annotations

import csv
import io

import pytest

from app.dashboard.csv_export import csv_lines, spreadsheet_text


@pytest.mark.parametrize("cell", ["=1+1", "+44 20", "-5", "@SUM(A1)", "\tx", "\rx"])
def test_a_cell_starting_like_a_formula_gets_a_quote_in_front(cell):
    assert spreadsheet_text(cell) == "'" + cell


@pytest.mark.parametrize("cell, text", [("PAY-1", "PAY-1"), ("a=b", "a=b"), ("", ""), (None, ""),
                                        (12, "12"), ("100.00", "100.00"), ("a; b, c", "a; b, c")])
def test_other_cells_are_written_as_they_are(cell, text):
    assert spreadsheet_text(cell) == text


@pytest.mark.parametrize("cell, text", [
    ("x;=1+1;=cmd|' /C calc'!A0", "x;'=1+1;'=cmd|' /C calc'!A0"),
    ("a,+1", "a,'+1"),
    ("a; -1", "a; '-1"),
    ("one\n@SUM(A1)", "one\n'@SUM(A1)"),
    ("one\r\n=2", "one\r\n'=2"),
    ("tab\t=3", "tab\t'=3"),
    ("  =4", "  '=4"),
])
def test_a_formula_after_a_separator_inside_a_cell_is_text_too(cell, text):
    # A spreadsheet whose separator is ; (or one that ignores quotes) starts a new cell there.
    assert spreadsheet_text(cell) == text


def test_every_cell_is_quoted_and_the_bytes_are_exact():
    rows = [("x;=1+1;=cmd|' /C calc'!A0", 'say "hi"', None, 12)]
    text = "".join(csv_lines(("One", "Two", "Three", "Four"), rows))
    assert text == ('"One","Two","Three","Four"\r\n'
                    '"x;\'=1+1;\'=cmd|\' /C calc\'!A0","say ""hi""","","12"\r\n')


def test_lines_are_the_csv_modules_quoting_read_back_exactly():
    rows = [("a,b", 'say "hi"', "two\nlines"), ("=x", "", None)]
    text = "".join(csv_lines(("One", "Two", "Three"), rows))
    assert list(csv.reader(io.StringIO(text))) == [
        ["One", "Two", "Three"], ["a,b", 'say "hi"', "two\nlines"], ["'=x", "", ""]]
