"""Why a payment was declined, in words support can read out: one entry per decline reason.

The reasons are the interface's common reasons (COMMON_DECLINE_REASONS), the only ones Paydesk
records: every provider's codes are mapped onto them (app/providers/*.py). Each has what it
means, what to tell the customer and whether trying again can help. The dashboard shows it under
a declined transaction, docs/api.md carries the same table (a test keeps them equal), and the
sandbox outcome helper takes no other reason.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decline:
    """A decline reason explained."""

    reason: str
    meaning: str  # what happened, for the merchant's staff
    tell_the_customer: str  # what support can say, in the customer's terms
    retry_helps: bool  # whether the same payment may succeed if tried again (later, or fixed)


DECLINES: dict[str, Decline] = {decline.reason: decline for decline in (
    Decline("Transaction Expired",
            "The customer did not finish the checkout in time (30 minutes unless configured).",
            "Your payment was not completed in time. Please start it again.", True),
    Decline("Payment Cancelled By User",
            "The customer, or the merchant on their behalf, cancelled the payment before it was paid.",
            "The payment was cancelled, so nothing was charged. You can pay again whenever you like.", True),
    Decline("Declined By Bank",
            "The card's bank refused the payment without giving a reason.",
            "Your bank declined the payment. Please contact your bank or use another card.", False),
    Decline("Insufficient Funds",
            "The account or card did not have enough money available.",
            "Your bank declined the payment for insufficient funds. Please use another card or try "
            "again once funds are available.", True),
    Decline("Provider Error",
            "The payment provider failed to process it (a fault on their side, not the customer's).",
            "Something went wrong on our side and you were not charged. Please try again in a few minutes.",
            True),
    Decline("Country Not Supported On Payment Method",
            "The payment method does not accept payments from the customer's country.",
            "This payment method is not available in your country. Please choose another one.", False),
    Decline("Currency Not Supported",
            "The payment method or provider does not take this currency.",
            "We cannot take this payment in this currency with this method. Please choose another method.",
            False),
    Decline("Payment Method Not Available",
            "The payment method is switched off or not available for this payment.",
            "This payment method is not available right now. Please choose another one.", False),
    Decline("Invalid Card Details",
            "The card number, expiry date, CVC or PIN was wrong.",
            "Some of the card details were not right. Please check them and try again.", True),
    Decline("Card Expired",
            "The card is past its expiry date.",
            "Your card has expired. Please use another card.", False),
    Decline("3DS Authentication Failed",
            "The customer did not pass their bank's identity check (3-D Secure).",
            "Your bank could not confirm it was you. Please try again and complete your bank's check, "
            "or contact your bank.", True),
    Decline("Suspected Fraud",
            "The bank or the provider's risk checks stopped it as likely fraud.",
            "The payment could not be completed. Please contact your bank.", False),
    Decline("Daily Limit Exceeded",
            "The card or account has reached its limit for the day.",
            "Your card has reached its daily limit. Please try again tomorrow or use another card.", True),
    Decline("Restricted Card",
            "The card cannot be used for this kind of payment (blocked, or restricted by its bank).",
            "Your card cannot be used for this payment. Please contact your bank or use another card.",
            False),
)}


def explain(reason: str | None) -> Decline | None:
    """The explanation of a decline reason, or None (no reason, or one stored before this table)."""
    return DECLINES.get(reason) if reason else None
