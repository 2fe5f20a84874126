"""What Paydesk asks of a payment provider, and what a provider answers: the interface every connector implements."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .model import PaymentMethod, Status, Transaction


@dataclass
class Outcome:
    """A provider's answer about a transaction: where it now stands and what it said."""

    status: Status
    provider_transaction_id: str | None = None
    provider_status: str | None = None
    provider_message: str | None = None
    decline_reason: str | None = None
    # When the provider has not decided yet: ask again at this time.
    check_again_at: datetime | None = None
    # The provider's hosted page the customer pays on (the checkout page redirects there).
    redirect_url: str | None = None
    # The provider's id of the payment behind provider_transaction_id, when it has a second
    # one (Stripe: the PaymentIntent of a Checkout Session), needed for refunds and disputes.
    provider_payment_id: str | None = None


@dataclass(frozen=True)
class Bank:
    """A bank a payout can be sent to: its routing code (CBN code or BIC) and display name."""

    code: str
    name: str


class BankListError(ValueError):
    """The bank list asked for does not exist; .message says why, in words for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ProviderUnavailable(Exception):
    """The provider could not be reached or answered with an error; try again later."""


# What a user reads when a provider that had to be asked first did not answer (API 502, dashboard).
UNREACHABLE = "The provider could not be reached; nothing was changed. Try again."


class ProviderDisconnected(ProviderUnavailable):
    """The merchant disconnected the provider account: it will not be asked again unless reconnected."""


class Provider(Protocol):
    """One external payment provider. Every call is idempotent on the transaction number."""

    # True when the provider answers from memory, without I/O (the simulator): it may be
    # asked inside a unit of work. A provider behind a network never is.
    in_process: bool

    def create(self, tx: Transaction, method: PaymentMethod) -> Outcome:
        """Open the transaction at the provider (a hosted checkout session, a payout order)."""

    def refund(self, refund: Transaction, original: Transaction, now: datetime) -> Outcome:
        """Ask for a refund; the answer may be final or Pending."""

    def status(self, tx: Transaction, original: Transaction | None, now: datetime) -> Outcome:
        """Where the provider says the transaction stands now."""

    def cancel(self, tx: Transaction) -> Outcome:
        """Void a Pending or Authorized payment where the provider can; then where it stands.

        Pending means the provider has nothing to void: the caller declines it in Paydesk.
        """

    def banks(self, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
        """The banks a payout method can send to, for the currency and country.

        Requests ask only a method without a provider account (the simulator's static data);
        a provider account's lists are fetched by the worker and read from the stored copy
        (app.payments.bank_lists).
        """

    def knows_bank(self, method: PaymentMethod, currency: str, code: str,
                   country: str | None) -> bool:
        """True when the code is in the method's bank list (for the country, when one is given);
        asked as banks() is."""


@runtime_checkable
class SendsTransfers(Protocol):
    """A provider that opens several payouts of one account with one request (Paystack's
    POST /transfer/bulk). Each payout keeps its own idempotent reference, as create() sends it."""

    # The most payouts one send_transfers call takes.
    max_transfers: int

    def send_transfers(self, payouts: list[Transaction], method: PaymentMethod) -> dict[str, Outcome]:
        """Open the payouts (never opened yet, all of `method`) together: each one's answer by
        its txNo, as create() would give it. ProviderUnavailable when the provider did not answer."""


class BankListSource(Protocol):
    """A provider account's connector, as the stored bank lists use it (app.payments.bank_lists).

    A list is kept per account, currency and country: bank_list_country says which one answers a
    request, without I/O; fetch_banks asks the provider for it, and only the worker calls it.
    """

    def bank_list_country(self, method: PaymentMethod, currency: str, country: str | None) -> str:
        """The alpha-2 country whose list answers (method, currency, country); BankListError
        when the method has none for them."""

    def fetch_banks(self, currency: str, country: str) -> list[Bank]:
        """The provider's banks for the currency and country, asked now (I/O: the worker's)."""


class AccountNotResolved(Exception):
    """The provider found no account for the number at the bank; .message is its words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@runtime_checkable
class AccountNameSource(Protocol):
    """A provider that tells whose a bank account is (Paystack's GET /bank/resolve, the simulator).

    A network provider is asked only by a worker (app.providers.account_resolutions); the
    simulator answers in process.
    """

    def resolve_account(self, account_number: str, bank_code: str) -> str:
        """The account holder's name at the bank; AccountNotResolved when the provider finds no
        such account, ProviderUnavailable when it could not be asked."""


class Providers(Protocol):
    """Finds the provider that serves a payment method (the simulator, or a merchant's account)."""

    def for_method(self, method: PaymentMethod, account: Any = None) -> Provider:
        """The method's provider; ProviderUnavailable when it cannot be used now (disconnected).
        `account`: the method's provider account as the caller has just read it, if it has."""

    def in_process_provider(self, method: PaymentMethod) -> Provider | None:
        """The method's provider when it answers in process (the simulator), found without I/O;
        None for any other (a provider behind a network is not looked up for this)."""


class ProvidersByName:
    """Providers chosen by the method's provider name alone: the simulator, and tests."""

    def __init__(self, by_name: Mapping[str, Provider]):
        self.by_name = dict(by_name)

    def for_method(self, method: PaymentMethod, account: Any = None) -> Provider:
        """The provider named by method.provider (no account is read: `account` is not used)."""
        try:
            return self.by_name[method.provider]
        except KeyError:
            raise ProviderUnavailable(f"no provider {method.provider!r} is configured") from None

    def in_process_provider(self, method: PaymentMethod) -> Provider | None:
        """The provider named by method.provider when it answers in process."""
        provider = self.for_method(method)
        return provider if provider.in_process else None
