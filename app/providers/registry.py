"""Which provider serves a payment method: the simulator, or the connector of a merchant's account."""
from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from app.payments.model import PaymentMethod
from app.payments.provider import Provider, ProviderDisconnected, ProvidersByName, ProviderUnavailable
from app.store.encryption import SecretBox, SecretBoxError
from app.store.provider_accounts import ProviderAccount
from app.webhooks.guard import AddressGuard

from .http import PUBLIC_ONLY, Timeouts
from .paystack import PAYSTACK_API, PaystackConnector
from .stripe import StripeConnector

Connector = PaystackConnector | StripeConnector
# Each provider's connector class: what its bank lists are is known without a key (bank_list_country).
CONNECTORS: dict[str, type[Connector]] = {"paystack": PaystackConnector, "stripe": StripeConnector}


class ProviderRegistry:
    """Providers by method: the simulator's by name, a provider account's built from its secrets.

    An account is read on every use, or just before it by the caller (a disconnect takes effect
    at once); its connector, with its HTTP session, is kept until the account's secrets change.
    """

    def __init__(self, simulators: ProvidersByName, read_account: Callable[[int], ProviderAccount | None],
                 box: SecretBox, *, return_url: str, timeouts: Timeouts,
                 clock: Callable[[], datetime], guard: AddressGuard = PUBLIC_ONLY):
        self.simulators = simulators
        self.read_account = read_account
        self.box = box
        self.return_url = return_url  # Paydesk's page customers come back to ("{tx_no}")
        self.timeouts = timeouts
        self.clock = clock
        self.guard = guard  # where connectors may connect (PROVIDER_ALLOWED_NETWORKS)
        self._connectors: dict[int, tuple[datetime, Connector]] = {}
        self._lock = threading.Lock()

    def for_method(self, method: PaymentMethod, account: ProviderAccount | None = None) -> Provider:
        """The method's provider; ProviderUnavailable when its account is disconnected.

        `account`: the method's account as the caller has just read it (a worker reads those of
        a batch of calls at once); read here otherwise.
        """
        if method.provider_account_id is None:
            return self.simulators.for_method(method)
        if account is None or account.id != method.provider_account_id:
            account = self.read_account(method.provider_account_id)
        return self.for_account(account)

    def in_process_provider(self, method: PaymentMethod) -> Provider | None:
        """The simulator serving the method when it answers in process; None for a provider
        account's method, whose connector is behind a network (its account is not read)."""
        if method.provider_account_id is not None:
            return None
        return self.simulators.in_process_provider(method)

    def account_connector(self, account_id: int) -> Connector:
        """The connector of a connected account by its id (the worker's bank list fetches)."""
        return self.for_account(self.read_account(account_id))

    def for_account(self, account: ProviderAccount | None) -> Connector:
        """The connector of a connected account (built once per version of its secrets)."""
        if account is None or not account.connected:
            raise ProviderDisconnected("The provider account is disconnected")
        with self._lock:
            known = self._connectors.get(account.id)
        if known and known[0] == account.updated_at:
            return known[1]
        try:
            secret_key = self.box.open(account.sealed_secret_key)
        except SecretBoxError as error:
            raise ProviderUnavailable(str(error)) from None
        connector = build_connector(account.provider, secret_key, account.base_url,
                                    timeouts=self.timeouts, return_url=self.return_url,
                                    guard=self.guard)
        with self._lock:
            self._connectors[account.id] = (account.updated_at, connector)
        return connector

    def webhook_secret(self, account: ProviderAccount) -> str:
        """The secret the account's webhooks are signed with: Stripe's whsec_, Paystack's secret key."""
        sealed = account.sealed_webhook_secret if account.provider == "stripe" else account.sealed_secret_key
        if not account.connected or sealed is None:
            raise ProviderUnavailable("The provider account has no webhook secret")
        return self.box.open(sealed)


def build_connector(provider: str, secret_key: str, base_url: str | None, *, timeouts: Timeouts,
                    return_url: str | None = None, guard: AddressGuard = PUBLIC_ONLY) -> Connector:
    """A connector for one account's key (and base URL, when not the provider's public API)."""
    if provider == "paystack":
        return PaystackConnector(secret_key, base_url or PAYSTACK_API, timeouts=timeouts,
                                 return_url=return_url, guard=guard)
    if provider == "stripe":
        return StripeConnector(secret_key, base_url, timeouts=timeouts, return_url=return_url,
                               guard=guard)
    raise ValueError(f"unknown provider {provider!r}")
