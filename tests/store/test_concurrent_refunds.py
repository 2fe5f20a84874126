"""Concurrent refunds can never over-refund: 50 parallel requests against one payment, repeated."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from app.store.tables import transactions

REMAINING_ERROR = "Refund amount (10.00) exceeds remaining refundable amount (0.00)"


def active_refund_total(app, merchant, tx_no: str) -> Decimal:
    originals = transactions.alias()
    with app.extensions["paydesk"].uow(write=False) as uow:
        minor = uow.conn.execute(
            select(func.coalesce(func.sum(transactions.c.amount_minor), 0))
            .join(originals, originals.c.id == transactions.c.original_id)
            .where(originals.c.tx_no == tx_no, originals.c.merchant_id == merchant.merchant_id,
                   originals.c.mode == "sandbox", transactions.c.status.in_(["Pending", "Captured"]))
        ).scalar_one()
    return Decimal(minor) / 100


def fifty_refunds_of_ten(sandbox, tx_no: str):
    """Send 50 refund requests of 10.00 at once; (accepted, rejected) answers."""

    def send(_):
        return sandbox.session.post(f"{sandbox.base_url}/api/v1/transactions/refund",
                                    json={"txNo": tx_no, "amount": 10}, timeout=60)

    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(send, range(50)))
    codes = [a.status_code for a in answers]
    assert all(code < 500 for code in codes), codes
    accepted = [a for a in answers if a.status_code == 200]
    rejected = [a for a in answers if a.status_code != 200]
    assert {a.status_code for a in rejected} == {400}
    return accepted, rejected


@pytest.mark.parametrize("round_no", range(5))
def test_fifty_parallel_refunds_of_ten_accept_exactly_ten(sandbox, app, merchant, round_no):
    # SBX-REFUND-ASYNC keeps its refunds Pending, so the original stays Captured
    # throughout and every refusal is the remaining-amount rule (the merchant
    # fixture is new for each round, and with it this test transaction).
    accepted, rejected = fifty_refunds_of_ten(sandbox, "SBX-REFUND-ASYNC")
    assert len(accepted) == 10
    assert {a.json()["status"] for a in accepted} == {"Pending"}
    assert len(rejected) == 40
    assert {a.json()["error"] for a in rejected} == {REMAINING_ERROR}
    assert active_refund_total(app, merchant, "SBX-REFUND-ASYNC") == Decimal("100.00")
    assert sandbox.status("SBX-REFUND-ASYNC")["Status"] == "Captured"


@pytest.mark.parametrize("round_no", range(3))
def test_parallel_refunds_settled_at_once_never_over_refund(sandbox, captured_payment, app, merchant,
                                                           round_no):
    tx_no = captured_payment(100)
    accepted, rejected = fifty_refunds_of_ten(sandbox, tx_no)
    assert len(accepted) == 10
    assert {a.json()["status"] for a in accepted} == {"Captured"}
    # Once the tenth refund is Captured the original is Refunded, and rule 2
    # answers before rule 5 for the requests that arrive after that.
    assert {a.json()["error"] for a in rejected} <= {
        REMAINING_ERROR,
        "Transaction must be in Captured status to be refunded. Current status: Refunded",
    }
    assert active_refund_total(app, merchant, tx_no) == Decimal("100.00")
    assert sandbox.status(tx_no)["Status"] == "Refunded"
