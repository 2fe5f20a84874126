"""The SEPA bank list is searchable by the national bank code printed on statements and cheques."""
from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.dashboard.conftest import add_user

from .conftest import htmx_settled, open_new_payout, sign_in


def _german_sepa_banks(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))
    open_new_payout(page)
    page.get_by_label("Payout method").select_option(label="SEPA payout")
    expect(page.get_by_label("Country").locator("option", has_text="Germany")).to_be_attached()
    htmx_settled(page)
    page.get_by_label("Country").select_option(label="Germany")
    banks = page.get_by_role("listbox", name="Bank")
    expect(banks).to_be_visible()
    htmx_settled(page)
    return banks


def test_a_german_bank_code_finds_its_bank(page: Page, server, merchant):
    banks = _german_sepa_banks(page, server, merchant)
    page.get_by_label("Search banks").fill("37040044")  # Commerzbank's Bankleitzahl in Cologne

    shown = banks.locator("option:not([hidden])")
    expect(shown).to_have_count(1)
    expect(shown).to_have_text("Commerzbank (COBADEFF)")
    expect(page.locator("#bank-count")).to_contain_text("1 of ")

    page.get_by_label("Search banks").press("Enter")
    expect(banks).to_have_value("COBADEFF")


def test_banks_of_the_same_name_are_told_apart_by_their_code(page: Page, server, merchant):
    banks = _german_sepa_banks(page, server, merchant)
    page.get_by_label("Search banks").fill("Commerzbank")

    labels = banks.locator("option:not([hidden])").all_inner_texts()
    assert len(labels) > 1, labels
    assert len(set(labels)) == len(labels), labels  # every same-named bank has its own label
    assert "Commerzbank (COBADEFF)" in labels, labels


def test_the_ibans_bank_is_shown_and_chosen_while_typing(page: Page, server, merchant):
    banks = _german_sepa_banks(page, server, merchant)
    page.get_by_label("Account number").fill("DE89 3704 0044 0532 0130 00")

    expect(page.locator("#iban-bank")).to_have_text("This IBAN is at Commerzbank (COBADEFF)")
    expect(banks).to_have_value("COBADEFF")


def test_a_chosen_bank_that_is_not_the_ibans_is_named_at_once(page: Page, server, merchant):
    banks = _german_sepa_banks(page, server, merchant)
    banks.select_option("DEUTDEFF")
    page.get_by_label("Account number").fill("DE89 3704 0044 0532 0130 00")

    expect(page.locator("#iban-bank")).to_have_text(
        "This IBAN is at Commerzbank (COBADEFF), not the bank chosen (DEUTDEFF)")
    expect(banks).to_have_value("DEUTDEFF")  # the user's choice is not changed behind their back


def test_an_incomplete_iban_shows_no_bank(page: Page, server, merchant):
    _german_sepa_banks(page, server, merchant)
    page.get_by_label("Account number").fill("DE89 3704")

    expect(page.locator("#iban-bank")).to_have_text("")
