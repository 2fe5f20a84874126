"""The benchmark's rows carry the customer e-mail and name the search finds, as the app writes them."""
from __future__ import annotations

import json
from datetime import UTC, datetime

from app.payments.model import searchable_customer
from bench.seed import TX_COLUMNS, _Generator


def test_every_seeded_row_has_the_customer_columns_of_its_billing():
    generator = _Generator(2000, [1, 2], 1, datetime(2026, 11, 1, tzinfo=UTC), seed=7)
    rows = [dict(zip(TX_COLUMNS, row, strict=True)) for row in generator.rows_iter()]
    assert len(rows) == 2000
    for row in rows:
        if row["kind"] == "refund":
            assert (row["billing"], row["customer_email"], row["customer_name"]) == (None, None, None)
        else:
            assert (row["customer_email"], row["customer_name"]) == searchable_customer(json.loads(row["billing"]))
    terms = generator.search_terms()
    assert terms["customer e-mail"] and all("@example.com" in t for t in terms["customer e-mail"])
    assert terms["customer name"] and all(" " in t for t in terms["customer name"])


def test_refunded_payments_carry_their_refund_totals():
    generator = _Generator(3000, [1], 1, datetime(2026, 11, 1, tzinfo=UTC), seed=11)
    rows = [dict(zip(TX_COLUMNS, row, strict=True)) for row in generator.rows_iter()]
    refunded = {row["original_id"]: row["amount_minor"] for row in rows if row["kind"] == "refund"}
    assert refunded
    for row in rows:
        expected = refunded.get(row["id"], 0)
        assert (row["refund_reserved_minor"], row["refund_captured_minor"]) == (expected, expected)
