"""The provider interface: what Paydesk asks of any external payment provider."""
from __future__ import annotations

from datetime import datetime
from typing import Protocol

from app.payments.model import Outcome, PaymentMethod, Transaction

from .banks import Bank


class ProviderUnavailable(Exception):
    """The provider could not be reached or answered with an error; try again later."""


class Provider(Protocol):
    """One external payment provider. Every call is idempotent on the transaction number."""

    def create(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        """Open the transaction at the provider (a hosted checkout session, a payout order)."""

    def refund(self, refund: Transaction, original: Transaction, now: datetime) -> Outcome:
        """Ask for a refund; the answer may be final or Pending."""

    def status(self, tx: Transaction, original: Transaction | None, now: datetime) -> Outcome:
        """Where the provider says the transaction stands now."""

    def banks(self, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
        """The banks a payout method can send to, for the currency and country."""
