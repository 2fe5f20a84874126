"""The dispute rules (app.payments.disputes), without Flask or a database."""
from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from app.payments.disputes import (
    Action,
    Dispute,
    DisputeRejected,
    DisputeStatus as D,
    can_move,
    check_can_act,
    payment_status_after,
)
from app.payments.model import Kind, Mode, Status, Transaction
from app.payments.refundable import RefundArithmetic

NOW = datetime(2026, 11, 27, tzinfo=UTC)
ALLOWED = {(D.NEEDS_RESPONSE, D.UNDER_REVIEW), (D.NEEDS_RESPONSE, D.WON), (D.NEEDS_RESPONSE, D.LOST),
           (D.NEEDS_RESPONSE, D.ACCEPTED), (D.UNDER_REVIEW, D.NEEDS_RESPONSE), (D.UNDER_REVIEW, D.WON),
           (D.UNDER_REVIEW, D.LOST)}


@pytest.mark.parametrize("current", list(D))
@pytest.mark.parametrize("target", list(D))
def test_a_dispute_moves_only_as_the_rules_say(current, target):
    assert can_move(current, target) is ((current, target) in ALLOWED)


@pytest.mark.parametrize("dispute_status, payment_status, left, expected", [
    (D.NEEDS_RESPONSE, Status.CAPTURED, Decimal(100), Status.CHARGEBACK),
    (D.UNDER_REVIEW, Status.CAPTURED, Decimal(100), Status.CHARGEBACK),
    (D.NEEDS_RESPONSE, Status.REFUNDED, Decimal(0), None),  # nothing left to take back
    (D.UNDER_REVIEW, Status.CHARGEBACK, Decimal(100), None),
    (D.WON, Status.CHARGEBACK, Decimal(100), Status.CAPTURED),
    (D.LOST, Status.CHARGEBACK, Decimal(70), Status.CAPTURED),  # the rest stays refundable
    (D.LOST, Status.CHARGEBACK, Decimal(0), None),
    (D.ACCEPTED, Status.CHARGEBACK, Decimal(0), None),
    (D.WON, Status.CAPTURED, Decimal(100), None),
])
def test_what_a_dispute_does_to_its_payment(dispute_status, payment_status, left, expected):
    assert payment_status_after(payment_status, dispute_status, left) is expected


def test_a_lost_disputes_amount_is_no_longer_refundable():
    payment = Transaction(merchant_id=1, mode=Mode.LIVE, tx_no="PAY-1", kind=Kind.PAYMENT,
                          status=Status.CAPTURED, amount=Decimal("100.00"), currency="EUR", reference="r",
                          payment_method="card", created_at=NOW, updated_at=NOW,
                          refund_reserved=Decimal("20.00"), refund_captured=Decimal("10.00"),
                          dispute_lost=Decimal("30.00"))
    assert RefundArithmetic.of_payment(payment, None).remaining == Decimal("50.00")


def dispute(status=D.NEEDS_RESPONSE, action=None) -> Dispute:
    return Dispute(dispute_no="DSP-1", merchant_id=1, mode="live", payment_id=1, provider="stripe",
                   provider_dispute_id="dp_1", amount=Decimal(10), currency="EUR", status=status,
                   created_at=NOW, updated_at=NOW, action=action)


@pytest.mark.parametrize("status", [D.UNDER_REVIEW, D.WON, D.LOST, D.ACCEPTED])
def test_only_a_dispute_that_needs_a_response_can_be_answered(status):
    with pytest.raises(DisputeRejected, match=f"Cannot accept dispute DSP-1: its status is {status}"):
        check_can_act(dispute(status), Action.ACCEPT)


@pytest.mark.parametrize("owed, words", [(Action.SUBMIT_EVIDENCE, "its evidence"),
                                         (Action.ACCEPT, "its acceptance")])
def test_one_answer_at_a_time(owed, words):
    with pytest.raises(DisputeRejected, match=f"{words} is still being sent to the provider"):
        check_can_act(dispute(action=owed), Action.ACCEPT)
