"""A payment's refund numbers, added up from its stored refunds."""
from __future__ import annotations

from app.payments.model import Caller, Transaction, TransactionNotFound
from app.payments.money import from_minor
from app.payments.refunds import RefundArithmetic

from .repository import UnitOfWork


def refund_arithmetic(uow: UnitOfWork, caller: Caller, payment: Transaction) -> RefundArithmetic:
    """The refund numbers of one of the caller's payments (its refunds share its merchant and mode)."""
    if (payment.merchant_id, payment.mode) != (caller.merchant_id, caller.mode):
        raise TransactionNotFound(payment.tx_no)
    captured, pending = uow.transactions.refund_totals(payment.id)
    return RefundArithmetic.of_payment(
        payment,
        refunded=from_minor(captured, payment.currency),
        pending=from_minor(pending, payment.currency),
        method=uow.methods.of_transaction(payment),
    )
