"""The payment methods every new merchant starts with, served by the simulator."""
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
