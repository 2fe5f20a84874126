"""A payment's refund numbers, as its row keeps them, for the caller's eyes."""
from __future__ import annotations

from app.payments.model import Caller, Transaction, TransactionNotFound
from app.payments.refundable import RefundArithmetic

from .unit_of_work import UnitOfWork


def refund_arithmetic(uow: UnitOfWork, caller: Caller, payment: Transaction) -> RefundArithmetic:
    """The refund numbers of one of the caller's payments, read from its row (the refund totals
    there move with its refunds, in the same database transactions)."""
    if (payment.merchant_id, payment.mode) != (caller.merchant_id, caller.mode):
        raise TransactionNotFound(payment.tx_no)
    return RefundArithmetic.of_payment(payment, uow.methods.of_transaction(payment))
