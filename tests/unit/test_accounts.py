"""Account-number rules: NUBAN check digits, IBANs, mobile-money numbers, masking."""
from __future__ import annotations

import pytest

from app.payments.accounts import (
    AccountNumberError,
    iban_bank,
    iban_bank_mismatch,
    same_bank,
    mask_account_number,
    validate_account_number,
)

# NUBAN check digits, by hand. Weights 3,7,3,3,7,3,3,7,3,3,7,3 over bank code + 9-digit serial.
# Serial 012345678 takes the weights after the bank code's three (3,7,3,3,7,3,3,7,3):
#   0*3 + 1*7 + 2*3 + 3*3 + 4*7 + 5*3 + 6*3 + 7*7 + 8*3 = 0+7+6+9+28+15+18+49+24 = 156
# Bank 058: 0*3 + 5*7 + 8*3 = 59;  59 + 156 = 215;  10 - 5 = 5  -> 0123456785
# Bank 044: 0*3 + 4*7 + 4*3 = 40;  40 + 156 = 196;  10 - 6 = 4  -> 0123456784
# Bank 044, serial 000000000: 40;  40 mod 10 = 0;   10 - 0 = 10 -> 0 -> 0000000000
GTB_NUBAN = "0123456785"
ACCESS_NUBAN = "0123456784"
ACCESS_NUBAN_CHECK_ZERO = "0000000000"


def test_ten_digit_nuban_without_bank_code_is_accepted_as_is():
    assert validate_account_number("nuban", "0123456780") == "0123456780"


def test_nuban_with_spaces_is_normalised_to_its_digits():
    assert validate_account_number("nuban", " 0123 456 785 ", "058") == GTB_NUBAN


@pytest.mark.parametrize("value", ["012345678", "01234567850", "01234S6785", "", "０１２３４５６７８５"])
def test_nuban_that_is_not_ten_ascii_digits_is_rejected(value):
    with pytest.raises(AccountNumberError) as raised:
        validate_account_number("nuban", value)
    assert raised.value.message == "Account number must be a 10-digit NUBAN"


@pytest.mark.parametrize(("bank_code", "number"), [
    ("058", GTB_NUBAN),
    ("044", ACCESS_NUBAN),
    ("044", ACCESS_NUBAN_CHECK_ZERO),
])
def test_nuban_with_right_check_digit_for_its_bank_is_accepted(bank_code, number):
    assert validate_account_number("nuban", number, bank_code) == number


@pytest.mark.parametrize("number", ["0123456780", "0123456784", "0123456786", "0123456789"])
def test_nuban_with_wrong_check_digit_is_rejected(number):
    with pytest.raises(AccountNumberError) as raised:
        validate_account_number("nuban", number, "058")
    assert raised.value.message == "Account number is not a valid NUBAN for bank 058"


def test_nuban_valid_for_one_bank_is_rejected_for_another():
    with pytest.raises(AccountNumberError):
        validate_account_number("nuban", GTB_NUBAN, "044")


@pytest.mark.parametrize("bank_code", ["58", "0580", "ABC", ""])
def test_nuban_check_against_a_malformed_bank_code_is_refused(bank_code):
    with pytest.raises(AccountNumberError) as raised:
        validate_account_number("nuban", GTB_NUBAN, bank_code)
    assert "is not a 3-digit CBN bank code" in raised.value.message


@pytest.mark.parametrize(("value", "expected"), [
    ("DE89370400440532013000", "DE89370400440532013000"),
    ("DE89 3704 0044 0532 0130 00", "DE89370400440532013000"),
    ("de89370400440532013000", "DE89370400440532013000"),
    ("NL91ABNA0417164300", "NL91ABNA0417164300"),
    ("GB82 WEST 1234 5698 7654 32", "GB82WEST12345698765432"),
])
def test_valid_iban_is_accepted_in_compact_upper_case(value, expected):
    assert validate_account_number("iban", value) == expected


@pytest.mark.parametrize("value", [
    "DE89370400440532013001",  # last digit changed: ISO 13616 check digits no longer match
    "DE88370400440532013000",  # check digits changed
    "DE8937040044053201300",  # one digit short
    "XX89370400440532013000",  # no such country
    "DE89370400440532013!00",
    "",
])
def test_invalid_iban_is_rejected_with_the_reason(value):
    with pytest.raises(AccountNumberError) as raised:
        validate_account_number("iban", value)
    assert raised.value.message.startswith("Account number is not a valid IBAN: ")
    assert len(raised.value.message) > len("Account number is not a valid IBAN: ")


def test_iban_is_not_required_to_match_the_chosen_bic():
    iban = "DE89370400440532013000"
    assert validate_account_number("iban", iban, "ABNANL2A") == iban


# The account rule checks the IBAN alone; the bank chosen is checked against the IBAN's own
# bank separately (iban_bank_mismatch), by the services, with a message on Payment.Bank.
@pytest.mark.parametrize(("iban", "bank"), [
    ("DE89370400440532013000", "COBADEFF"),  # Commerzbank's IBAN, Commerzbank
    ("DE89370400440532013000", "cobadeffxxx"),  # its 11-character BIC, any case
    ("FR1420041010050500013M02606", "PSSTFRPP"),  # La Banque Postale: two branch BICs, one bank
    ("DE89370400440532013000", "COBADEDD"),  # Commerzbank Düsseldorf: another branch, same bank
    ("DE89370400440532013000", "COBADEHHXXX"),  # Commerzbank Hamburg, 11 characters
    ("MT84MALT011000012345MTLCAST001S", "VALLMTMT"),  # a bank code the registry does not know
])
def test_a_bank_that_is_the_ibans_own_or_unknown_is_not_refused(iban, bank):
    assert iban_bank_mismatch(iban, bank) is None


@pytest.mark.parametrize(("bank", "message"), [
    ("DEUTDEFF", "Bank DEUTDEFF (Deutsche Bank) is not the bank of this IBAN, which belongs to "
                 "Commerzbank (COBADEFF)"),
    # Another institution code in the BIC is another bank, even one the registry names after it.
    ("DRESDEFF", "Bank DRESDEFF (Commerzbank vormals Dresdner Bank) is not the bank of this IBAN, "
                 "which belongs to Commerzbank (COBADEFF)"),
    # The same institution code in another country is another bank.
    ("COBANL2X", "Bank COBANL2X (COMMERZBANK) is not the bank of this IBAN, which belongs to "
                 "Commerzbank (COBADEFF)"),
    ("QQQQDEFF", "Bank QQQQDEFF is not the bank of this IBAN, which belongs to Commerzbank (COBADEFF)"),
])
def test_a_bank_that_is_not_the_ibans_own_is_refused_naming_both_banks(bank, message):
    assert iban_bank_mismatch("DE89370400440532013000", bank) == message


@pytest.mark.parametrize(("bic", "other", "same"), [
    ("COBADEFF", "COBADEDD", True),
    ("COBADEFF", "cobadeffxxx", True),
    ("COBADEFF", "COBANL2X", False),
    ("COBADEFF", "DEUTDEFF", False),
    ("COBA", "COBA", False),  # no BIC at all
])
def test_two_bics_name_the_same_bank_when_institution_and_country_agree(bic, other, same):
    assert same_bank(bic, other) is same


def test_an_ibans_bank_is_found_with_its_primary_bic_first():
    bank = iban_bank("DE89 3704 0044 0532 0130 00")
    assert (bank.name, bank.bic) == ("Commerzbank", "COBADEFF")
    assert iban_bank("DE89 3704") is None


@pytest.mark.parametrize(("value", "expected"), [
    ("+254712345678", "+254712345678"),
    ("+254 712 345 678", "+254712345678"),
    ("+234 (803) 123-4567", "+2348031234567"),
    ("+12345678", "+12345678"),
    ("+123456789012345", "+123456789012345"),
])
def test_phone_number_in_international_format_is_accepted(value, expected):
    assert validate_account_number("msisdn", value) == expected


@pytest.mark.parametrize("value", [
    "0712345678",  # national format, no country code
    "254712345678",  # no plus
    "+0712345678",  # country codes never start with 0
    "+1234567",  # 7 digits
    "+1234567890123456",  # 16 digits, longer than E.164 allows
    "+25471234567a",
    "",
])
def test_phone_number_not_in_international_format_is_rejected(value):
    with pytest.raises(AccountNumberError) as raised:
        validate_account_number("msisdn", value)
    assert raised.value.message == (
        "Account number must be a phone number in international format, e.g. +254712345678"
    )


def test_account_number_error_is_a_value_error():
    with pytest.raises(ValueError):
        validate_account_number("nuban", "123")


def test_unknown_rule_is_a_programming_error_not_a_user_error():
    with pytest.raises(ValueError) as raised:
        validate_account_number("routing", "123456789")
    assert not isinstance(raised.value, AccountNumberError)


@pytest.mark.parametrize(("value", "expected"), [
    ("0123456789", "•••• 6789"),
    ("DE89 3704 0044 0532 0130 00", "•••• 3000"),
    ("+254712345678", "•••• 5678"),
    ("12345", "•••• 2345"),
])
def test_masked_account_number_shows_only_the_last_four(value, expected):
    assert mask_account_number(value) == expected


@pytest.mark.parametrize("value", ["1234", "12", ""])
def test_masking_a_number_of_four_or_fewer_characters_shows_none_of_it(value):
    assert mask_account_number(value) == "••••"


@pytest.mark.parametrize(("bank", "number", "normalised"), [
    ("058", "0123 456 785", "0123456785"),  # a CBN code: the check digit is checked
    ("50211", "1234567890", "1234567890"),  # Paystack's longer codes (microfinance): length only
])
def test_paystack_payouts_in_naira_take_a_nuban(bank, number, normalised):
    assert validate_account_number("nuban-for-ngn", number, bank, "NGN") == normalised


@pytest.mark.parametrize(("bank", "number", "message"), [
    ("058", "0123456789", "Account number is not a valid NUBAN for bank 058"),
    ("50211", "12345", "Account number must be a 10-digit NUBAN"),
])
def test_paystack_payouts_in_naira_refuse_what_is_no_nuban(bank, number, message):
    with pytest.raises(AccountNumberError, match=message):
        validate_account_number("nuban-for-ngn", number, bank, "NGN")


def test_paystack_payouts_in_other_currencies_have_no_rule_here_and_are_only_trimmed():
    assert validate_account_number("nuban-for-ngn", " 1234 5678 ", "GH010", "GHS") == "12345678"
