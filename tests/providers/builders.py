"""Minimal transactions and methods for connector tests: model objects, no database."""
from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from app.payments.model import Kind, Mode, PaymentMethod, Status, Transaction

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)

CARD = PaymentMethod("card", "Card", "card", ["NGN", "EUR", "GHS"], [], None, None, True)
NG_PAYOUT = PaymentMethod("ng-bank-payout", "NGN bank payout", "payout", ["NGN"], ["NG"], "ng",
                          "nuban", False)
MOBILE_MONEY = PaymentMethod("mobile-money-payout", "Mobile money payout", "payout",
                             ["KES", "GHS"], ["KE", "GH"], None, "msisdn", False)


def transaction(kind: Kind, tx_no: str, amount: str, currency: str, **fields) -> Transaction:
    """A transaction as stored, Pending unless fields say otherwise."""
    values = dict(merchant_id=1, mode=Mode.LIVE, tx_no=tx_no, kind=kind, status=Status.PENDING,
                  amount=Decimal(amount), currency=currency, reference=f"order-{tx_no[-6:].lower()}",
                  payment_method=CARD.method_id, created_at=NOW, updated_at=NOW)
    values.update(fields)
    return Transaction(**values)


def payment(tx_no: str = "PAY-9F2C41D07A3B5E68", amount: str = "10500.00", currency: str = "NGN",
            **fields) -> Transaction:
    """A card payment with a billing e-mail."""
    fields.setdefault("billing", {"email": "ada@example.com", "firstName": "Ada", "lastName": "Obi"})
    return transaction(Kind.PAYMENT, tx_no, amount, currency, **fields)


def captured(tx_no: str = "PAY-9F2C41D07A3B5E68", amount: str = "10500.00", currency: str = "NGN",
             **fields) -> Transaction:
    """A payment the provider has captured."""
    return payment(tx_no, amount, currency, status=Status.CAPTURED, **fields)


def refund_of(original: Transaction, amount: str, tx_no: str = "RFD-0A1B2C3D4E5F6789",
              **fields) -> Transaction:
    """A Pending refund of the original."""
    return transaction(Kind.REFUND, tx_no, amount, original.currency, original_id=original.id,
                       original_tx_no=original.tx_no, payment_method=original.payment_method, **fields)


def payout(tx_no: str = "POU-7E3A9C1B5D2F4680", amount: str = "25000.00", currency: str = "NGN",
           account: str = "0123456789", bank: str = "058", **fields) -> Transaction:
    """A bank payout with its checked destination account."""
    return transaction(Kind.PAYOUT, tx_no, amount, currency, payment_method=NG_PAYOUT.method_id,
                       payment_details={"bank": bank, "holder": "Ada Obi", "accountNumber": account},
                       **fields)
