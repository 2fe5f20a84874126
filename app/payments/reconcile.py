"""Reconciliation's rules: what a provider's settlement line is, and how it is matched to Paydesk.

A settlement is what a provider paid out to the merchant's bank on one day in one currency (a
Paystack settlement, a Stripe payout); its lines are the provider's transactions it carried. Each
line is matched to Paydesk's transaction and gets one outcome:

- matched: Paydesk knows the transaction, and the line's gross is its amount, in its currency;
- amount_differs: Paydesk knows it, but the provider settled another amount or currency;
- unknown_to_paydesk: no transaction of the merchant and mode has the line's provider id or
  reference.

A fourth outcome belongs to no line: missing_from_settlement, a Captured payment older than the
provider's settlement delay that no stored settlement carries (app/store/settlements.py finds
them with is_overdue's rule).

Amounts are minor units of the line's currency, signed as the provider reports them: a payment
adds to the settlement, a refund or a lost dispute takes from it (negative gross and net).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

from .formats import code_in_words

# How long after its capture a provider pays a payment out, at most (SETTLEMENT_DELAY_DAYS):
# Paystack settles the next business day (T+1), Stripe's default schedule is two business days.
DEFAULT_SETTLEMENT_DELAY = timedelta(days=2)


class LineType(StrEnum):
    """What moved the money in a settlement line."""

    PAYMENT = "payment"
    REFUND = "refund"
    DISPUTE = "dispute"
    OTHER = "other"  # fees, adjustments: nothing of Paydesk's to match


class Outcome(StrEnum):
    """A reconciliation result (see the module's docstring)."""

    MATCHED = "matched"
    AMOUNT_DIFFERS = "amount_differs"
    UNKNOWN_TO_PAYDESK = "unknown_to_paydesk"
    MISSING_FROM_SETTLEMENT = "missing_from_settlement"

    @property
    def label(self) -> str:
        """The outcome in words, as the dashboard and the CLI write it."""
        return code_in_words(self.value).replace("paydesk", "Paydesk")


# What a line of each type is matched against: the Paydesk transaction kind it names.
# A dispute's line names the disputed payment.
MATCHED_KIND = {LineType.PAYMENT: "payment", LineType.REFUND: "refund", LineType.DISPUTE: "payment"}


@dataclass(frozen=True)
class FetchedLine:
    """One line of a settlement as the provider reports it."""

    provider_transaction_id: str
    type: LineType
    gross_minor: int
    fee_minor: int
    net_minor: int
    currency: str
    reference: str | None = None  # Paydesk's txNo when the provider keeps it (Paystack's reference)


@dataclass(frozen=True)
class FetchedSettlement:
    """A settlement as the provider reports it, with its lines."""

    provider_settlement_id: str
    settled_on: date
    currency: str
    gross_minor: int
    fees_minor: int
    net_minor: int
    status: str  # the provider's own word (Paystack "success", Stripe "paid", ...)
    lines: list[FetchedLine] = field(default_factory=list)


@dataclass(frozen=True)
class KnownTransaction:
    """The Paydesk transaction a line names: what matching compares."""

    id: int
    tx_no: str
    kind: str
    amount_minor: int
    currency: str


def match(line: FetchedLine, known: KnownTransaction | None) -> Outcome:
    """The outcome of one line against the transaction it names (None when none does).

    A line is compared by its gross without its sign (a refund's line is negative) with the
    transaction's amount: the fee is the provider's, never part of Paydesk's amount.
    """
    if known is None:
        return Outcome.UNKNOWN_TO_PAYDESK
    if abs(line.gross_minor) != known.amount_minor or line.currency != known.currency:
        return Outcome.AMOUNT_DIFFERS
    return Outcome.MATCHED


def is_overdue(captured_at: datetime, now: datetime, delay: timedelta) -> bool:
    """Whether a Captured payment should be in a settlement by now (missing_from_settlement if not)."""
    return captured_at <= now - delay


@dataclass(frozen=True)
class Fee:
    """A provider's price per payment: a percentage of its amount plus a fixed part."""

    percent: Decimal
    fixed: Decimal  # in units of the payment's currency
    words: str

    def of(self, amount_minor: int, currency_digits: int) -> int:
        """The fee in minor units of a payment of amount_minor, rounded half up."""
        fixed_minor = self.fixed.scaleb(currency_digits)
        fee = Decimal(amount_minor) * self.percent / 100 + fixed_minor
        return int(fee.to_integral_value(ROUND_HALF_UP))


# What the simulator's daily sandbox settlements charge (documented in the README's sandbox table).
SANDBOX_FEE = Fee(Decimal("1.5"), Decimal("0.10"), "1.5% + 0.10 per payment, none on refunds")
