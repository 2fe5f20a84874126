"""Response bodies from the domain's values, in the shapes app.payments.schemas declares."""
from __future__ import annotations

from . import schemas
from .formats import iso_utc
from .model import Kind, PaymentMethod, StoredStatus, Transaction
from .money import quantize


def create_body(tx: Transaction, checkout_url: str) -> schemas.CreateTransactionResponse:
    """Create response; the interface writes the initial status in upper case."""
    what = "Payout" if tx.kind is Kind.PAYOUT else "Transaction"
    return {
        "transactionId": tx.tx_no,
        "reference": tx.reference,
        "currency": tx.currency,
        "amount": quantize(tx.amount, tx.currency),
        "status": "PENDING",
        "message": f"{what} created",
        "checkoutUrl": f"{checkout_url}/{tx.tx_no}",
    }


def status_body(tx: Transaction | StoredStatus) -> schemas.TransactionStatus:
    """Status response, PascalCase as the interface shows it."""
    return {
        "TransactionId": tx.tx_no,
        "Status": tx.status.value,
        "Amount": quantize(tx.amount, tx.currency),
        "Currency": tx.currency,
        "Reference": tx.reference,
        "DeclineReason": tx.decline_reason,
        "CreatedAt": iso_utc(tx.created_at),
        "ProviderTransactionId": tx.provider_transaction_id,
        "ProviderStatus": tx.provider_status,
        "ProviderMessage": tx.provider_message,
        "SuccessUrl": tx.success_url,
        "PendingUrl": tx.pending_url,
        "FailureUrl": tx.failure_url,
        "UserDefinedField1": tx.udf1,
        "UserDefinedField2": tx.udf2,
        "UserDefinedField3": tx.udf3,
    }


def refund_body(refund: Transaction) -> schemas.RefundResponse:
    """Refund response: the refund's state after the provider's immediate answer."""
    return {
        "refundTxNo": refund.tx_no,
        "originalTxNo": refund.original_tx_no,
        "amount": quantize(refund.amount, refund.currency),
        "currency": refund.currency,
        "status": refund.status.value,
        "message": refund.provider_message or "Refund is being processed",
        "providerRefundId": refund.provider_transaction_id,
        "createdAt": iso_utc(refund.created_at),
    }


def method_body(method: PaymentMethod) -> schemas.PaymentMethod:
    """An element of GET /payment-methods."""
    return {
        "id": method.method_id,
        "name": method.name,
        "kind": method.kind,
        "currencies": method.currencies,
        "countries": method.countries,
        "bankList": bool(method.bank_list),
        "partialRefunds": method.partial_refunds,
    }
