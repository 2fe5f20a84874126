"""The simulator provider: answers like a real one, decided by the sandbox test numbers."""
from __future__ import annotations

import time
from datetime import datetime, timedelta

from app.payments.model import CANCELLABLE_STATUSES, CANCELLED, Kind, PaymentMethod, Status, Transaction
from app.payments.provider import AccountNotResolved, Outcome, ProvidersByName

from .banks import Bank, bank_list, is_known_bank

# How long asynchronous answers (SBX-REFUND-ASYNC refunds, payouts) take to settle.
SETTLE_AFTER = timedelta(seconds=2)

DECLINE_REFUNDS = "SBX-REFUND-DECLINED"
FAIL_REFUNDS = "SBX-REFUND-FAILED"
ASYNC_REFUNDS = "SBX-REFUND-ASYNC"

# Sandbox test accounts for account-name resolution (NUBANs, each valid for its bank's CBN code):
# (bank code, account number) -> the holder's name at the bank. UNRESOLVABLE_ACCOUNT is refused
# as Paystack refuses an account it cannot find; any other account is named after its last four
# digits, so every account has one name, the same every time (docs/api.md, Sandbox).
TEST_ACCOUNTS = {
    ("058", "1234567896"): "CHINEDU OKAFOR",
    ("058", "0123456785"): "ADA OBI",
    ("057", "1234567899"): "NGOZI ADEYEMI",
    ("044", "1234567895"): "TUNDE BAKARE",
}
UNRESOLVABLE_ACCOUNT = ("058", "0000000001")
NOT_RESOLVED = "Could not resolve account name. Check parameters or try again."


class SimulatorProvider:
    """A provider with no network: hosted checkout, refunds and payouts answered from rules."""

    name = "simulator"

    def __init__(self, latency: float = 0.0):
        # Seconds every refund call takes, to rehearse slow providers and crashes mid-call.
        self.latency = latency

    @property
    def in_process(self) -> bool:
        """No I/O: it may answer inside a unit of work. Not when it rehearses a slow provider
        (`latency`): then it is asked as a provider behind a network is, after the commit."""
        return not self.latency

    def create(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        """Open a checkout session (payments) or queue a payout that settles shortly."""
        if tx.kind is Kind.PAYOUT:
            return Outcome(
                Status.PENDING,
                provider_transaction_id=f"sim_{tx.tx_no}",
                provider_status="PROCESSING",
                provider_message="Payout accepted for processing",
                check_again_at=tx.created_at + SETTLE_AFTER,
            )
        return Outcome(
            Status.PENDING,
            provider_transaction_id=f"sim_{tx.tx_no}",
            provider_status="CREATED",
            provider_message="Awaiting customer at checkout",
        )

    def refund(self, refund: Transaction, original: Transaction, now: datetime) -> Outcome:
        """Captured at once, except for the sandbox numbers that decline, fail or answer later."""
        if self.latency:
            time.sleep(self.latency)
        provider_id = f"simr_{refund.tx_no}"
        if original.tx_no == DECLINE_REFUNDS:
            return Outcome(Status.DECLINED, provider_id, "DECLINED", "Refund declined by the issuer",
                           decline_reason="Declined By Bank")
        if original.tx_no == FAIL_REFUNDS:
            return Outcome(Status.FAILED, provider_id, "ERROR", "Refund could not be processed",
                           decline_reason="Provider Error")
        if original.tx_no == ASYNC_REFUNDS and now < refund.created_at + SETTLE_AFTER:
            return Outcome(Status.PENDING, provider_id, "PROCESSING", "Refund is being processed",
                           check_again_at=refund.created_at + SETTLE_AFTER)
        return Outcome(Status.CAPTURED, provider_id, "SUCCESS", "Refund processed successfully")

    def status(self, tx: Transaction, original: Transaction | None, now: datetime) -> Outcome:
        """Refunds answer as refund() does; payouts are paid once they have settled."""
        if tx.kind is Kind.REFUND:
            if original is None:
                raise ValueError(f"Refund {tx.tx_no} has no original to answer about")
            return self.refund(tx, original, now)
        if tx.kind is Kind.PAYOUT and tx.status is Status.PENDING:
            if now >= tx.created_at + SETTLE_AFTER:
                return Outcome(Status.CAPTURED, tx.provider_transaction_id, "PAID", "Payout paid")
            return Outcome(Status.PENDING, tx.provider_transaction_id, "PROCESSING",
                           "Payout accepted for processing", check_again_at=tx.created_at + SETTLE_AFTER)
        return Outcome(tx.status, tx.provider_transaction_id, tx.provider_status, tx.provider_message,
                       decline_reason=tx.decline_reason)

    def cancel(self, tx: Transaction) -> Outcome:
        """A payment not yet paid is voided at once; anything else stands as it is."""
        if tx.kind is Kind.PAYMENT and tx.status in CANCELLABLE_STATUSES:
            return Outcome(Status.DECLINED, tx.provider_transaction_id, "CANCELLED",
                           "Payment cancelled", decline_reason=CANCELLED)
        return self.status(tx, None, tx.updated_at)

    def banks(self, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
        """Real bank data for the method's bank list source."""
        return bank_list(method.bank_list, currency, country)

    def knows_bank(self, method: PaymentMethod, currency: str, code: str,
                   country: str | None) -> bool:
        """The code is in the method's bank data (checked against a cached set of codes)."""
        return is_known_bank(method.bank_list, code, country)

    def resolve_account(self, account_number: str, bank_code: str) -> str:
        """The holder's name of a sandbox account: a test account's (TEST_ACCOUNTS), else
        "SANDBOX ACCOUNT" and the last four digits; UNRESOLVABLE_ACCOUNT is refused."""
        if (bank_code, account_number) == UNRESOLVABLE_ACCOUNT:
            raise AccountNotResolved(NOT_RESOLVED)
        return TEST_ACCOUNTS.get((bank_code, account_number), f"SANDBOX ACCOUNT {account_number[-4:]}")


def providers(simulator_latency: float = 0.0) -> ProvidersByName:
    """The simulator, for the methods that name it (sandbox and demo)."""
    return ProvidersByName({"simulator": SimulatorProvider(latency=simulator_latency)})
