"""How a machine word reads to people: one function for the dashboard's badges, the audit's
detail labels and the reconciliation's outcomes."""
import pytest

from app.payments.formats import code_in_words
from app.payments.reconcile import Outcome


@pytest.mark.parametrize(("code", "words"), [
    ("needs_response", "Needs response"),
    ("product_not_received", "Product not received"),
    ("sessionsEnded", "Sessions ended"),
    ("originalTxNo", "Original tx no"),
    ("sessions_ended", "Sessions ended"),
    ("won", "Won"),
    ("", ""),
])
def test_a_code_reads_as_words(code, words):
    assert code_in_words(code) == words


def test_reconciliation_outcomes_read_as_words_with_paydesk_named():
    assert [outcome.label for outcome in Outcome] == [
        "Matched", "Amount differs", "Unknown to Paydesk", "Missing from settlement"]
