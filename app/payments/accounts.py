"""Payout account numbers: the NUBAN, IBAN and mobile-money rules, and masking for display."""
from __future__ import annotations

import re
from dataclasses import dataclass

from schwifty import BIC, IBAN, registry
from schwifty.exceptions import SchwiftyException

# CBN NUBAN weights over the 3-digit bank code followed by the 9-digit serial number.
_NUBAN_WEIGHTS = (3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3)
_NUBAN = re.compile(r"[0-9]{10}")
_CBN_BANK_CODE = re.compile(r"[0-9]{3}")
# E.164: a country code never starts with 0, and the whole number is at most 15 digits.
_E164 = re.compile(r"\+[1-9][0-9]{7,14}")
# Separators people type inside phone numbers; they carry no digits.
_PHONE_SEPARATORS = re.compile(r"[\s\-.()]")


class AccountNumberError(ValueError):
    """The account number breaks its rule; .message says how, in words for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def validate_account_number(rule: str, value: str, bank_code: str | None = None,
                            currency: str | None = None) -> str:
    """The account number normalised under the rule: "nuban", "iban", "msisdn", or
    "nuban-for-ngn" (a NUBAN when paid in NGN, checked against the bank when its code is a
    3-digit CBN code; other currencies' bank accounts have no rule here and are only trimmed)."""
    if rule == "nuban":
        return _validate_nuban(value, bank_code)
    if rule == "nuban-for-ngn":
        if currency != "NGN":
            return "".join(value.split())
        cbn_code = bank_code if bank_code and _CBN_BANK_CODE.fullmatch(bank_code) else None
        return _validate_nuban(value, cbn_code)
    if rule == "iban":
        return _validate_iban(value)
    if rule == "msisdn":
        return _validate_msisdn(value)
    raise ValueError(f"Unknown account number rule {rule!r}")


def _validate_nuban(value: str, bank_code: str | None) -> str:
    number = "".join(value.split())
    if not _NUBAN.fullmatch(number):
        raise AccountNumberError("Account number must be a 10-digit NUBAN")
    if bank_code is not None:
        if not _CBN_BANK_CODE.fullmatch(bank_code):
            raise AccountNumberError(f"Bank code {bank_code!r} is not a 3-digit CBN bank code")
        if _nuban_check_digit(bank_code, number[:9]) != int(number[9]):
            raise AccountNumberError(f"Account number is not a valid NUBAN for bank {bank_code}")
    return number


def _nuban_check_digit(bank_code: str, serial: str) -> int:
    total = sum(int(digit) * weight
                for digit, weight in zip(bank_code + serial, _NUBAN_WEIGHTS, strict=True))
    return (10 - total % 10) % 10


def same_bank(bic: str, other: str) -> bool:
    """Whether two BICs (8 or 11 characters) name the same bank.

    A BIC is institution code (4 letters), country (2), location (2) and branch (3). Banks give
    their branches and regional offices BICs of their own (Commerzbank: COBADEFF in Frankfurt,
    COBADEDD in Düsseldorf, COBADEHH in Hamburg), all with the institution code and country of
    the bank, so the bank is the first 6 characters: COBADE. A payout names the bank; the IBAN
    routes it to the account within that bank, whatever branch BIC was chosen.
    """
    first, second = bic.strip().upper(), other.strip().upper()
    return len(first) >= 6 and first[:6] == second[:6]


def bic_bank_name(bic: str) -> str | None:
    """The name schwifty's registry gives the bank of a BIC (8 or 11 characters), or None."""
    try:
        names = BIC(bic.strip().upper()).bank_names
    except SchwiftyException:
        return None
    return names[0] if names else None


@dataclass(frozen=True)
class IbanBank:
    """The bank an IBAN's bank code names in schwifty's registry: its name and 8-character BICs."""

    name: str
    bics: tuple[str, ...]

    @property
    def bic(self) -> str:
        """The BIC the bank is shown with, and a payout without a bank is sent with."""
        return self.bics[0]

    def is_chosen(self, bank_code: str) -> bool:
        """Whether the bank chosen (an 8- or 11-character BIC) is this bank, at any branch of it."""
        return any(same_bank(bank_code, bic) for bic in self.bics)


def iban_bank(value: str) -> IbanBank | None:
    """The IBAN's own bank, or None when the value is not a valid IBAN or its bank code is
    one the registry does not know. Its primary BIC (the registry's main entry) comes first."""
    try:
        parsed = IBAN("".join(value.split()))
        banks = registry.get_banks_by_code(parsed.country_code, parsed.bank_code)
    except SchwiftyException:
        return None
    found = [bank for bank in banks if bank.bic and bank.name]
    if not found:
        return None
    found.sort(key=lambda bank: (not bank.primary, bank.bic.upper()))
    bics = tuple(dict.fromkeys(bank.bic[:8].upper() for bank in found))
    return IbanBank(found[0].name, bics)


def iban_bank_mismatch(iban: str, bank_code: str) -> str | None:
    """Why the bank chosen (an 8- or 11-character BIC) is not the IBAN's own bank, or None.

    A bank chosen from the list must be the bank the IBAN's bank code names, at any of its
    branches (same_bank), or the transfer would be sent to one bank for an account at another.
    The message names both banks by name. An IBAN whose bank code the registry does not know is
    not refused.
    """
    bank = iban_bank(iban)
    if bank is None or bank.is_chosen(bank_code):
        return None
    chosen = bank_code.strip().upper()
    chosen_name = bic_bank_name(chosen)
    named = f"{chosen} ({chosen_name})" if chosen_name else chosen
    return f"Bank {named} is not the bank of this IBAN, which belongs to {bank.name} ({bank.bic})"


def _validate_iban(value: str) -> str:
    # Only the ISO 13616 structure and check digits are verified here, since national BBAN
    # checks exist for some countries only and warn for the others; the bank chosen is
    # checked against the IBAN's bank by iban_bank_mismatch.
    try:
        return IBAN("".join(value.split())).compact
    except SchwiftyException as error:
        reason = str(error)
        raise AccountNumberError(
            f"Account number is not a valid IBAN: {reason[:1].lower()}{reason[1:]}"
        ) from None


def _validate_msisdn(value: str) -> str:
    number = _PHONE_SEPARATORS.sub("", value)
    if not _E164.fullmatch(number):
        raise AccountNumberError(
            "Account number must be a phone number in international format, e.g. +254712345678"
        )
    return number


def mask_account_number(value: str) -> str:
    """The account number with all but its last 4 characters hidden: "•••• 6789"."""
    compact = "".join(value.split())
    # Showing the last 4 of a number that short would show all of it.
    if len(compact) <= 4:
        return "••••"
    return f"•••• {compact[-4:]}"
