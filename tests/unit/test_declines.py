"""The declines table: every common reason explained once, and docs/api.md shows the same words."""
from __future__ import annotations

from pathlib import Path

from app.payments.declines import DECLINES, explain
from app.payments.model import COMMON_DECLINE_REASONS

API_DOCS = Path(__file__).parents[2] / "docs" / "api.md"


def test_every_common_reason_is_explained_in_the_interfaces_order():
    assert tuple(DECLINES) == COMMON_DECLINE_REASONS


def test_each_explanation_says_what_happened_and_what_to_tell_the_customer():
    for decline in DECLINES.values():
        assert decline.meaning.endswith(".") and decline.tell_the_customer.endswith(".")
        assert decline.meaning != decline.tell_the_customer


def test_a_reason_outside_the_table_or_none_has_no_explanation():
    assert explain("Insufficient Funds") is DECLINES["Insufficient Funds"]
    assert explain("Something else") is None and explain(None) is None


def test_the_api_docs_carry_the_same_table():
    rows = [line for line in API_DOCS.read_text().splitlines() if line.startswith("| `")]
    documented = {line.split("|")[1].strip().strip("`"): [cell.strip() for cell in line.split("|")[2:5]]
                  for line in rows if line.split("|")[1].strip().strip("`") in DECLINES}
    assert list(documented) == list(DECLINES)
    for reason, decline in DECLINES.items():
        assert documented[reason] == [decline.meaning, decline.tell_the_customer,
                                      "yes" if decline.retry_helps else "no"]
