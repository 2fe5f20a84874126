"""Which banks a payout method pays to, for a currency (and country): its provider's list."""
from __future__ import annotations

from .countries import resolve_country
from .deps import Deps
from .model import BankListRefused, Caller
from .provider import Bank, BankListError, ProviderUnavailable


def list_banks(deps: Deps, caller: Caller, payment_method: str, currency: str,
               country: str | None) -> list[Bank]:
    """The banks of a payout method for a currency (and country); BankListRefused when it cannot."""
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
        return deps.providers.for_method(method).banks(method, currency, alpha2)
    except BankListError as error:
        raise BankListRefused(error.message) from None
    except ProviderUnavailable:
        raise
    except Exception as error:  # whatever a provider's code raises: it failed to give the list
        raise ProviderUnavailable(f"bank list of {method.method_id} failed: {error!r}") from error
