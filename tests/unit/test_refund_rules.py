"""The refund rules of the interface, in its order, without a web server or database."""
from __future__ import annotations

from decimal import Decimal

import pytest

from app.payments.model import (
    FieldErrors,
    Kind,
    RefundRejected,
    RefundState,
    Status,
    can_move,
    check_refund,
    original_after_refunds,
)


def original(status=Status.CAPTURED, amount="100", refunded="0", partial=True, kind=Kind.PAYMENT,
             currency="EUR") -> RefundState:
    return RefundState(tx_no="PAY-1", kind=kind, status=status, amount=Decimal(amount), currency=currency,
                       remaining_refundable=Decimal(amount) - Decimal(refunded), partial_refunds=partial,
                       payment_method="card-x")


def rejection(state, amount) -> str:
    with pytest.raises(RefundRejected) as caught:
        check_refund(state, "PAY-1", Decimal(amount))
    return str(caught.value)


def test_rule_1_original_must_exist():
    assert rejection(None, "10") == "Original transaction with TxNo PAY-1 not found"


@pytest.mark.parametrize("status", [s for s in Status if s is not Status.CAPTURED])
def test_rule_2_original_must_be_captured(status):
    assert rejection(original(status=status), "10") == (
        f"Transaction must be in Captured status to be refunded. Current status: {status.value}")


def test_rule_2_comes_before_the_amount_rules():
    assert rejection(original(status=Status.PENDING), "1000").startswith("Transaction must be in Captured")


def test_rule_4_amount_must_not_exceed_original():
    assert rejection(original(), "100.01") == (
        "Refund amount (100.01) cannot exceed original transaction amount (100.00)")


def test_rule_4_comes_before_rule_5():
    assert rejection(original(refunded="90"), "150").startswith("Refund amount (150.00) cannot exceed original")


def test_rule_5_amount_must_not_exceed_remaining():
    assert rejection(original(refunded="80"), "25") == (
        "Refund amount (25.00) exceeds remaining refundable amount (20.00)")


def test_exactly_the_remaining_amount_is_allowed():
    check_refund(original(refunded="80"), "PAY-1", Decimal("20"))


def test_only_payments_are_refundable():
    assert rejection(original(kind=Kind.PAYOUT), "1") == (
        "Only payments can be refunded; transaction PAY-1 is a payout")


def test_methods_without_partial_refunds_take_only_the_full_amount():
    assert rejection(original(partial=False), "30") == (
        "Partial refunds are not supported for payment method card-x")
    check_refund(original(partial=False), "PAY-1", Decimal("100"))


def test_amount_with_more_digits_than_the_currency_is_a_field_error():
    with pytest.raises(FieldErrors) as caught:
        check_refund(original(currency="JPY", amount="100"), "PAY-1", Decimal("1.5"))
    assert caught.value.errors == {"Amount": ["Amount has more decimal places than JPY allows (0)"]}


def test_amounts_in_messages_use_currency_digits():
    assert rejection(original(currency="KWD", amount="5"), "6") == (
        "Refund amount (6.000) cannot exceed original transaction amount (5.000)")


def test_full_refund_makes_the_original_refunded_partial_keeps_it_captured():
    assert original_after_refunds(Decimal("100"), Decimal("100")) is Status.REFUNDED
    assert original_after_refunds(Decimal("100"), Decimal("99.99")) is Status.CAPTURED


def test_allowed_moves():
    assert can_move(Kind.PAYMENT, Status.PENDING, Status.CAPTURED)
    assert can_move(Kind.REFUND, Status.PENDING, Status.DECLINED)
    assert not can_move(Kind.REFUND, Status.CAPTURED, Status.FAILED)
    assert not can_move(Kind.PAYMENT, Status.DECLINED, Status.CAPTURED)
    assert not can_move(Kind.PAYMENT, Status.CAPTURED, Status.REFUNDED)  # only through refunds
