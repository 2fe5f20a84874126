"""Payout bank lists: the CBN list for Nigeria, schwifty's registry for SEPA."""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from functools import cache
from importlib.resources import files

from schwifty import registry
from schwifty.domain import Bank as RegistryBank

from app.payments.countries import resolve_country
from app.payments.provider import Bank, BankListError

# The currency each bank list source pays out in.
SOURCE_CURRENCIES = {"ng": "NGN", "sepa": "EUR"}

# The EPC's SEPA scheme geographic scope: EU and EEA members, the non-EEA participants
# and the territories that are part of SEPA through them. Only those schwifty has bank
# data for can offer a bank list; the rest raise "No SEPA bank data". The countries the
# EPC admitted from 2024 on (Albania, Moldova, Montenegro, North Macedonia, Serbia) are
# left out until payouts there are confirmed to reach SEPA.
_SEPA_SCHEME = frozenset({
    # EU
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU",
    "IE", "IT", "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK",
    # EEA
    "IS", "LI", "NO",
    # Non-EEA participants
    "AD", "CH", "GB", "MC", "SM", "VA",
    # Territories: Åland, French overseas, Gibraltar, Crown Dependencies
    "AX", "BL", "GF", "GP", "MF", "MQ", "PM", "RE", "YT", "GI", "GG", "IM", "JE",
})

SEPA_COUNTRIES: tuple[str, ...] = tuple(sorted(_SEPA_SCHEME & set(registry.get_countries())))

_BIC = re.compile(r"[A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?")


@cache
def _nigerian_banks() -> tuple[Bank, ...]:
    rows = json.loads(files(__package__).joinpath("bank_data", "ng_banks.json").read_text("utf-8"))
    return tuple(sorted((Bank(row["code"], row["name"]) for row in rows), key=_by_name))


def nigerian_banks() -> list[Bank]:
    """The CBN/NIBSS Nigerian bank list (3-digit CBN codes), sorted by name.

    Source: the CBN bank codes used for NUBAN (commercial, merchant and non-interest banks),
    as published by the Central Bank of Nigeria and NIBSS. Only 3-digit CBN codes are listed:
    microfinance banks and payment-service banks route on 6-digit NIBSS institution codes.
    Access Bank (Diamond) keeps code 063 because legacy Diamond NUBANs check against it.
    """
    return list(_nigerian_banks())


def sepa_banks(country_alpha2: str) -> list[Bank]:
    """One SEPA country's banks from schwifty's registry: 8-character BIC and name, by name."""
    return list(_sepa_banks(_sepa_country(country_alpha2.strip().upper())))


def _sepa_country(alpha2: str) -> str:
    if alpha2 not in _SEPA_SCHEME:
        raise BankListError(f"Country {alpha2} is not supported by this payment method")
    if alpha2 not in SEPA_COUNTRIES:
        raise BankListError(f"No SEPA bank data for country {alpha2}")
    return alpha2


@cache
def _sepa_banks(alpha2: str) -> tuple[Bank, ...]:
    banks = _dedupe_by_bic(registry.get_banks_by_country(alpha2))
    if not banks:
        raise BankListError(f"No SEPA bank data for country {alpha2}")
    return banks


@cache
def _all_sepa_banks() -> tuple[Bank, ...]:
    rows = [row for country in SEPA_COUNTRIES for row in registry.get_banks_by_country(country)]
    return _dedupe_by_bic(rows)


def _dedupe_by_bic(rows: Iterable[RegistryBank]) -> tuple[Bank, ...]:
    # Registries list a BIC once per domestic bank code (and per branch BIC); the payout
    # only needs the institution, so rows collapse onto the 8-character BIC. Primary rows,
    # then rows from the BIC's own country, name it; among those the most frequent name
    # wins, since single rows carry branch names ("Commerzbank, CC SP").
    best: dict[str, tuple[tuple[bool, bool], Counter[str]]] = {}
    for row in rows:
        bic = (row.bic or "").strip().upper()
        name = (row.name or "").strip()
        if not name or not _BIC.fullmatch(bic):
            continue
        code = bic[:8]
        rank = (bool(row.primary), row.country_code == code[4:6])
        if code not in best or rank > best[code][0]:
            best[code] = (rank, Counter())
        if rank == best[code][0]:
            best[code][1][name] += 1
    banks = (Bank(code, _most_frequent(names)) for code, (_, names) in best.items())
    return tuple(sorted(banks, key=_by_name))


def _most_frequent(names: Counter[str]) -> str:
    return min(names, key=lambda name: (-names[name], len(name), name))


def _by_name(bank: Bank) -> tuple[str, str]:
    # Names quoted in the registry ("Achemos" kredito unija) sort by their first letter.
    return bank.name.lstrip("\"'„“ ").casefold(), bank.code


def _source_currency(source: str) -> str:
    try:
        return SOURCE_CURRENCIES[source]
    except KeyError:
        raise ValueError(f"Unknown bank list source {source!r}") from None


def _country_for(source: str, country: str | None) -> str | None:
    if country is None or not country.strip():
        return None
    alpha2 = resolve_country(country)
    if source == "ng":
        if alpha2 != "NG":
            raise BankListError(f"Country {alpha2} is not supported by this payment method")
        return None
    return _sepa_country(alpha2)


def _banks_for(source: str, alpha2: str | None) -> tuple[Bank, ...]:
    if source == "ng":
        return _nigerian_banks()
    return _all_sepa_banks() if alpha2 is None else _sepa_banks(alpha2)


def bank_list(source: str, currency: str, country: str | None) -> list[Bank]:
    """The banks of a bank list source ("ng" for NGN, "sepa" for EUR), optionally for one country.

    Without a country, "ng" gives the Nigerian list and "sepa" the banks of every SEPA
    country schwifty has data for, together, sorted by name. Raises BankListError for a
    currency the source does not pay out in or a country it does not cover, ValueError
    for an unknown source.
    """
    expected = _source_currency(source)
    if currency.strip().upper() != expected:
        raise BankListError(f"Currency {currency} is not supported by this payment method")
    return list(_banks_for(source, _country_for(source, country)))


@cache
def _codes(source: str, alpha2: str | None) -> frozenset[str]:
    return frozenset(bank.code for bank in _banks_for(source, alpha2))


def is_known_bank(source: str, code: str, country: str | None = None) -> bool:
    """True when the code is in the source's bank list (for the country, when one is given)."""
    _source_currency(source)
    try:
        alpha2 = _country_for(source, country)
        codes = _codes(source, alpha2)
    except BankListError:
        return False
    normalised = code.strip().upper()
    # A BIC may come with the branch suffix XXX, which names the institution's head office.
    if source == "sepa" and len(normalised) == 11 and normalised.endswith("XXX"):
        normalised = normalised[:8]
    return normalised in codes
