"""Which banks a payout method pays to, for a currency (and country), and whether a bank is one.

Two sources, one rule for each request: a method without a provider account (the simulator's)
answers from its static data in process; a provider account's list (Paystack's GET /bank) is
read only from the copy a worker stored (app.providers.bank_refresh). No request asks Paystack
or Stripe for banks, so a slow provider never slows a bank list, a payout or the bank picker.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .countries import resolve_country
from .deps import Deps
from .model import BankListNotReady, BankListRefused, Caller, PaymentMethod
from .provider import Bank, BankListError, BankListSource, ProviderUnavailable

# A stored list is fetched again this long after it was fetched (the interface's advised cache
# time); until then, and while a refresh is pending or failing, the stored copy is served.
REFRESH_AFTER = timedelta(hours=1)


@dataclass(frozen=True)
class ListKey:
    """Which stored list: one provider account's banks for a currency and (alpha-2) country."""

    provider_account_id: int
    currency: str
    country: str


def list_banks(deps: Deps, caller: Caller, payment_method: str, currency: str,
               country: str | None) -> list[Bank]:
    """The banks of a payout method for a currency (and country).

    BankListRefused when the method has no such list; BankListNotReady while a provider
    account's list has no stored copy yet (it is then due for the workers).
    """
    with deps.uow(write=False) as uow:
        method = uow.methods.get(caller, payment_method)
    if method is None:
        raise BankListRefused("Payment method not found. Please check your payment method from request")
    if not method.bank_list:
        raise BankListRefused(f"Payment method {method.method_id} does not support bank lists")
    if currency not in method.currencies:
        raise BankListRefused(
            f"Currency {currency} is not supported by payment method {method.method_id}")
    alpha2 = None
    if country is not None:
        try:
            alpha2 = resolve_country(country)
        except BankListError as error:
            raise BankListRefused(error.message) from None
        if method.countries and alpha2 not in method.countries:
            raise BankListRefused(
                f"Country {alpha2} is not supported by payment method {method.method_id}")
    try:
        if method.provider_account_id is None:
            return deps.providers.for_method(method).banks(method, currency, alpha2)
        return stored_banks(deps, method, currency, alpha2)
    except BankListError as error:
        raise BankListRefused(error.message) from None
    except (ProviderUnavailable, BankListNotReady):
        raise
    except Exception as error:  # whatever a provider's code raises: it failed to give the list
        raise ProviderUnavailable(f"bank list of {method.method_id} failed: {error!r}") from error


def knows_bank(deps: Deps, method: PaymentMethod, currency: str, code: str,
               country: str | None) -> bool:
    """The code is in the method's bank list for the currency (and country): a payout's bank check.

    BankListNotReady while a provider account's list has no stored copy yet.
    """
    if method.provider_account_id is None:
        return deps.providers.for_method(method).knows_bank(method, currency, code, country)
    try:
        banks = stored_banks(deps, method, currency, country)
    except BankListError:  # no list for this currency and country: no bank is in it
        return False
    return any(bank.code == code for bank in banks)


def stored_banks(deps: Deps, method: PaymentMethod, currency: str, country: str | None) -> list[Bank]:
    """A provider account's list as a worker stored it, however old; never the provider's answer.

    A copy older than REFRESH_AFTER is due by its own schedule (fetched_at + REFRESH_AFTER), so
    serving it asks nothing more: a worker is refreshing it. Without a copy the list is asked for
    (due now, unless already scheduled: a failing provider keeps its backoff) and
    BankListNotReady raised. BankListError when the method has no list for currency and country.
    """
    source: BankListSource = deps.providers.for_method(method)  # reads the account, no I/O
    key = ListKey(method.provider_account_id, currency,
                  source.bank_list_country(method, currency, country))
    with deps.uow(write=False) as uow:
        stored = uow.bank_lists.get(key)
    if stored is not None and stored.banks is not None:
        return stored.banks
    if stored is None:
        with deps.uow() as uow:
            uow.bank_lists.ask_for(key, deps.clock())
            uow.commit()
    raise BankListNotReady()
