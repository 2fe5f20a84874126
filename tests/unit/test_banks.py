"""Bank lists: the Nigerian CBN list, SEPA banks from schwifty, country resolution."""
from __future__ import annotations

import re

import pytest

from app.providers.banks import (
    SEPA_COUNTRIES,
    Bank,
    BankListError,
    bank_list,
    is_known_bank,
    nigerian_banks,
    resolve_country,
    sepa_banks,
)

BIC8 = re.compile(r"[A-Z]{6}[A-Z0-9]{2}")


def sort_key(bank: Bank) -> tuple[str, str]:
    return bank.name.lstrip("\"'„“ ").casefold(), bank.code


@pytest.mark.parametrize(("code", "name"), [
    ("044", "Access Bank"),
    ("058", "Guaranty Trust Bank"),
    ("011", "First Bank of Nigeria"),
    ("033", "United Bank for Africa"),
    ("057", "Zenith Bank"),
    ("070", "Fidelity Bank"),
    ("214", "First City Monument Bank"),
    ("035", "Wema Bank"),
    ("232", "Sterling Bank"),
    ("032", "Union Bank of Nigeria"),
    ("221", "Stanbic IBTC Bank"),
    ("082", "Keystone Bank"),
    ("050", "Ecobank Nigeria"),
    ("076", "Polaris Bank"),
    ("215", "Unity Bank"),
    ("301", "Jaiz Bank"),
    ("101", "Providus Bank"),
    ("068", "Standard Chartered Bank"),
    ("023", "Citibank Nigeria"),
    ("100", "Suntrust Bank"),
    ("102", "Titan Trust Bank"),
    ("103", "Globus Bank"),
    ("104", "Parallex Bank"),
    ("105", "PremiumTrust Bank"),
    ("302", "TAJBank"),
    ("303", "Lotus Bank"),
    ("559", "Coronation Merchant Bank"),
    ("501", "FSDH Merchant Bank"),
    ("502", "Rand Merchant Bank"),
])
def test_nigerian_list_has_the_bank_under_its_cbn_code(code, name):
    assert Bank(code, name) in nigerian_banks()


def test_nigerian_codes_are_unique_three_digit_cbn_codes():
    codes = [bank.code for bank in nigerian_banks()]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"[0-9]{3}", code) for code in codes)


def test_nigerian_list_is_sorted_by_name():
    banks = nigerian_banks()
    assert banks == sorted(banks, key=sort_key)


def test_changing_a_returned_list_does_not_change_the_next_one():
    nigerian_banks().clear()
    sepa_banks("DE").clear()
    assert nigerian_banks()
    assert sepa_banks("DE")


@pytest.mark.parametrize(("value", "alpha2"), [
    ("NG", "NG"),
    ("ng", "NG"),
    ("NGA", "NG"),
    ("nigeria", "NG"),
    ("Germany", "DE"),
    ("deu", "DE"),
    (" DE ", "DE"),
    ("Federal Republic of Germany", "DE"),  # official_name
    ("bolivia", "BO"),  # common_name
])
def test_country_resolves_from_code_or_english_name_in_any_case(value, alpha2):
    assert resolve_country(value) == alpha2


@pytest.mark.parametrize("value", ["Atlantis", "XX", "", "Nigeri"])
def test_unknown_country_is_an_error_naming_it(value):
    with pytest.raises(BankListError) as raised:
        resolve_country(value)
    assert raised.value.message == f"Unknown country {value}"


def test_sepa_countries_are_sepa_members_with_bank_data():
    assert {"DE", "NL", "FR", "AT", "BE", "IT", "ES"} <= set(SEPA_COUNTRIES)
    assert "NG" not in SEPA_COUNTRIES
    assert list(SEPA_COUNTRIES) == sorted(SEPA_COUNTRIES)


@pytest.mark.parametrize("country", ["DE", "NL"])
def test_sepa_list_of_a_country_has_unique_eight_character_bics(country):
    banks = sepa_banks(country)
    codes = [bank.code for bank in banks]
    assert banks
    assert all(BIC8.fullmatch(code) for code in codes)
    assert len(codes) == len(set(codes))
    assert all(bank.name for bank in banks)
    assert banks == sorted(banks, key=sort_key)


def test_sepa_list_names_the_institution_not_a_branch():
    # Commerzbank has hundreds of German bank codes; most rows name it plainly.
    assert Bank("COBADEFF", "Commerzbank") in sepa_banks("DE")
    assert Bank("ABNANL2A", "ABN AMRO BANK N.V.") in sepa_banks("NL")


def test_sepa_country_code_is_accepted_in_lower_case():
    assert sepa_banks("nl") == sepa_banks("NL")


def test_sepa_country_without_bank_data_is_an_error():
    with pytest.raises(BankListError) as raised:
        sepa_banks("VA")
    assert raised.value.message == "No SEPA bank data for country VA"


def test_country_outside_sepa_has_no_sepa_list():
    with pytest.raises(BankListError) as raised:
        sepa_banks("NG")
    assert raised.value.message == "Country NG is not supported by this payment method"


def test_ng_bank_list_is_the_nigerian_list_with_or_without_country():
    assert bank_list("ng", "NGN", None) == nigerian_banks()
    assert bank_list("ng", "NGN", "Nigeria") == nigerian_banks()
    assert bank_list("ng", "NGN", "NGA") == nigerian_banks()


def test_ng_bank_list_for_another_country_is_refused():
    with pytest.raises(BankListError) as raised:
        bank_list("ng", "NGN", "Germany")
    assert raised.value.message == "Country DE is not supported by this payment method"


def test_bank_list_for_an_unknown_country_is_refused():
    with pytest.raises(BankListError) as raised:
        bank_list("sepa", "EUR", "Atlantis")
    assert raised.value.message == "Unknown country Atlantis"


def test_sepa_bank_list_for_a_country_is_that_countrys_list():
    assert bank_list("sepa", "EUR", "deu") == sepa_banks("DE")
    assert bank_list("sepa", "EUR", "Netherlands") == sepa_banks("NL")


def test_sepa_bank_list_without_country_covers_every_sepa_country():
    banks = bank_list("sepa", "EUR", None)
    codes = {bank.code for bank in banks}
    assert len(codes) == len(banks)
    assert {bank.code for bank in sepa_banks("DE")} <= codes
    assert {bank.code for bank in sepa_banks("NL")} <= codes
    assert banks == sorted(banks, key=sort_key)


def test_bank_list_in_a_currency_the_source_does_not_pay_is_refused():
    with pytest.raises(BankListError) as raised:
        bank_list("ng", "EUR", None)
    assert raised.value.message == "Currency EUR is not supported by this payment method"
    with pytest.raises(BankListError):
        bank_list("sepa", "NGN", "DE")


def test_unknown_bank_list_source_is_a_programming_error_not_a_user_error():
    with pytest.raises(ValueError) as raised:
        bank_list("ach", "USD", None)
    assert not isinstance(raised.value, BankListError)
    with pytest.raises(ValueError):
        is_known_bank("ach", "021000021")


@pytest.mark.parametrize(("source", "code", "country", "known"), [
    ("ng", "058", None, True),
    ("ng", "058", "Nigeria", True),
    ("ng", "999", None, False),
    ("ng", "058", "Germany", False),
    ("sepa", "COBADEFF", None, True),
    ("sepa", "COBADEFF", "DE", True),
    ("sepa", "cobadeffxxx", "DE", True),
    ("sepa", "COBADEFF", "NL", False),
    ("sepa", "ZZZZDEFF", "DE", False),
    ("sepa", "COBADEFF", "Atlantis", False),
])
def test_known_bank_is_a_code_in_the_sources_list(source, code, country, known):
    assert is_known_bank(source, code, country) is known
