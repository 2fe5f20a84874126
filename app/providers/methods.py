"""The payment methods every new merchant starts with (the simulator's), and those a provider account adds."""
from __future__ import annotations

from app.payments.model import PaymentMethod

from .banks import SEPA_COUNTRIES

DEFAULT_METHODS = (
    PaymentMethod(
        method_id="card",
        name="Card",
        kind="card",
        currencies=["EUR", "USD", "GBP", "NGN", "KES", "JPY", "KWD"],
        countries=[],
        bank_list=None,
        account_rule=None,
        partial_refunds=True,
    ),
    PaymentMethod(
        method_id="card-full-refund-only",
        name="Card (acquirer without partial refunds)",
        kind="card",
        currencies=["EUR", "USD"],
        countries=[],
        bank_list=None,
        account_rule=None,
        partial_refunds=False,
    ),
    PaymentMethod(
        method_id="ng-bank-payout",
        name="NGN bank payout",
        kind="payout",
        currencies=["NGN"],
        countries=["NG"],
        bank_list="ng",
        account_rule="nuban",
        partial_refunds=False,
    ),
    PaymentMethod(
        method_id="sepa-payout",
        name="SEPA payout",
        kind="payout",
        currencies=["EUR"],
        countries=sorted(SEPA_COUNTRIES),
        bank_list="sepa",
        account_rule="iban",
        partial_refunds=False,
    ),
    PaymentMethod(
        method_id="mobile-money-payout",
        name="Mobile money payout",
        kind="payout",
        currencies=["KES", "GHS", "UGX", "TZS"],
        countries=["KE", "GH", "UG", "TZ"],
        bank_list=None,
        account_rule="msisdn",
        partial_refunds=False,
    ),
)

# Stripe settles these for most accounts; an account's other currencies can be added to the
# method by hand. Amounts go to Stripe in its own minor units (app/providers/stripe.py).
STRIPE_CURRENCIES = ["AUD", "CAD", "CHF", "DKK", "EUR", "GBP", "JPY", "NOK", "PLN", "SEK", "USD"]

# What connecting an account adds to the merchant in that mode, by provider; fixed ids.
PROVIDER_METHODS: dict[str, tuple[PaymentMethod, ...]] = {
    "paystack": (
        PaymentMethod(
            method_id="paystack-card",
            name="Card (Paystack)",
            kind="card",
            currencies=["GHS", "KES", "NGN", "USD", "ZAR"],
            countries=[],
            bank_list=None,
            account_rule=None,
            partial_refunds=True,
            provider="paystack",
        ),
        PaymentMethod(
            method_id="paystack-bank-payout",
            name="Bank payout (Paystack)",
            kind="payout",
            currencies=["GHS", "KES", "NGN", "ZAR"],
            countries=["GH", "KE", "NG", "ZA"],
            bank_list="paystack",  # Paystack's GET /bank for the currency's country
            account_rule="nuban-for-ngn",
            partial_refunds=False,
            provider="paystack",
        ),
    ),
    "stripe": (
        PaymentMethod(
            method_id="stripe-card",
            name="Card (Stripe)",
            kind="card",
            currencies=STRIPE_CURRENCIES,
            countries=[],
            bank_list=None,
            account_rule=None,
            partial_refunds=True,
            provider="stripe",
        ),
    ),
}
