"""Countries as a request may name them: alpha-2, alpha-3 or the English name, in any case."""
from __future__ import annotations

from functools import cache

import pycountry

from .provider import BankListError


class UnknownCountry(BankListError):
    """No ISO 3166-1 country has this code or name (a bank list cannot be given for it)."""


@cache
def _country_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for country in pycountry.countries:
        for attribute in ("alpha_2", "alpha_3", "name", "common_name", "official_name"):
            value = getattr(country, attribute, None)
            if value:
                index.setdefault(value.casefold(), country.alpha_2)
    return index


def resolve_country(value: str) -> str:
    """The ISO alpha-2 code for an alpha-2, alpha-3 or English country name in any case."""
    found = _country_index().get(value.strip().casefold())
    if found is None:
        raise UnknownCountry(f"Unknown country {value}")
    return found
