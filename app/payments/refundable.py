"""What a payment has left to refund: its original amount less its Captured and Pending refunds,
the refund requests awaiting approval and what its lost or accepted disputes took back (the
customer got that back through the dispute: app.payments.disputes). The one description of it in Python: the refund
rules' input (refund_state), the refund panel and the service fakes use it; the refund guard
(app.store.refund_guard) is its SQL counterpart, and a property test keeps the two agreeing."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .model import PaymentMethod, RefundState, Transaction


@dataclass(frozen=True)
class RefundArithmetic:
    """A payment's refund numbers: what the refund panel shows and the refund rules check."""

    original: Decimal
    refunded: Decimal  # Captured refunds
    pending: Decimal  # Pending refunds, which hold their amount until settled
    currency: str
    partial_refunds: bool
    awaiting_approval: Decimal = Decimal(0)  # refund requests awaiting a second user's approval
    lost_to_disputes: Decimal = Decimal(0)  # lost and accepted disputes' amounts

    @classmethod
    def of_payment(cls, payment: Transaction, method: PaymentMethod | None) -> "RefundArithmetic":
        """The numbers of a payment as its row keeps them; a method no longer configured allows
        partial refunds."""
        return cls(original=payment.amount, refunded=payment.refund_captured,
                   pending=payment.refund_reserved - payment.refund_captured,
                   currency=payment.currency,
                   partial_refunds=method.partial_refunds if method else True,
                   awaiting_approval=payment.refund_held, lost_to_disputes=payment.dispute_lost)

    @property
    def refunded_or_pending(self) -> Decimal:
        """What the refunds hold of the original (Failed and Declined ones free their amount),
        with what the requests awaiting approval hold."""
        return self.refunded + self.pending + self.awaiting_approval

    @property
    def remaining(self) -> Decimal:
        """Original minus Captured and Pending refunds, requests awaiting approval and lost or
        accepted disputes."""
        return self.original - self.refunded_or_pending - self.lost_to_disputes


def refund_state(payment: Transaction, arithmetic: RefundArithmetic) -> RefundState:
    """The input of the refund rules (app.payments.model.check_refund) for a payment and its numbers."""
    return RefundState(
        tx_no=payment.tx_no, kind=payment.kind, status=payment.status, amount=payment.amount,
        currency=payment.currency, remaining_refundable=arithmetic.remaining,
        partial_refunds=arithmetic.partial_refunds, payment_method=payment.payment_method,
    )
