"""New payouts from the dashboard: bank lists by method, the service's checks, masked accounts."""
from __future__ import annotations

import re
import uuid

import pytest
from sqlalchemy import select

from app.store.tables import audit_log

NUBAN_WEIGHTS = (3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3)


def nuban(bank_code: str, serial: str = "123456789") -> str:
    """A valid 10-digit NUBAN for the bank (CBN check digit)."""
    total = sum(int(d) * w for d, w in zip(bank_code + serial, NUBAN_WEIGHTS, strict=True))
    return serial + str((10 - total % 10) % 10)


@pytest.fixture
def operator(dashboard, merchant):
    return dashboard(merchant.merchant_id, "payouts")


def _form(**overrides) -> dict:
    form = {
        "method": "ng-bank-payout", "currency": "NGN", "country": "", "bank": "058",
        "holder": "Chinedu Okafor", "account_number": nuban("058"), "amount": "150000.50",
        "reference": f"po-{uuid.uuid4().hex[:10]}", "statement_descriptor": "PAYDESK",
        "callback_url": "https://merchant.example/hooks", "first_name": "Chinedu",
        "last_name": "Okafor", "email": "chinedu@example.com", "customer_reference": "cust-7",
    }
    form.update(overrides)
    return form


def test_the_bank_list_is_a_cacheable_fragment_of_the_methods_banks(operator):
    response = operator.get("/payouts/banks?method=ng-bank-payout&currency=NGN",
                            headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "private, max-age=3600"
    assert "HX-Request" in response.headers["Vary"]
    assert '<option value="058" >Guaranty Trust Bank (058)</option>' in response.text
    assert 'data-filter-options="#bank"' in response.text


def test_a_method_without_bank_list_shows_the_services_message(operator):
    response = operator.get("/payouts/banks?method=mobile-money-payout&currency=KES")
    assert "Payment method mobile-money-payout does not support bank lists" in response.text
    assert "Cache-Control" not in response.headers or "max-age" not in response.headers["Cache-Control"]


def test_sepa_asks_for_a_country_before_listing_banks(operator):
    assert "Choose a country to list its banks." in operator.get(
        "/payouts/banks?method=sepa-payout&currency=EUR").text
    assert "banks for SEPA payout in DE" in operator.get(
        "/payouts/banks?method=sepa-payout&currency=EUR&country=DE").text


@pytest.mark.parametrize("account, bank, text", [
    ("DE89 3704 0044 0532 0130 00", "", "This IBAN is at Commerzbank (COBADEFF)"),
    ("DE89370400440532013000", "COBADEFF", "This IBAN is at Commerzbank (COBADEFF)"),
    ("DE89370400440532013000", "DEUTDEFF",
     "This IBAN is at Commerzbank (COBADEFF), not the bank chosen (DEUTDEFF)"),
    ("DE89 3704", "", ""),  # not an IBAN yet
    (nuban("058"), "058", ""),  # not an IBAN at all
])
def test_the_ibans_own_bank_is_named_as_it_is_typed(operator, account, bank, text):
    response = operator.get("/payouts/iban-bank", params={"account_number": account, "bank": bank},
                            headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert re.sub(r"<[^>]+>", "", response.text).strip() == text
    bic = re.search(r"\((\w{8})\)", text)
    assert ('data-bank="COBADEFF"' in response.text) is bool(bic)


def test_the_form_defaults_the_callback_url_to_the_merchants(operator, merchant):
    page = operator.get("/payouts/new").text
    assert f'value="{merchant.inbox_url}"' in page


def test_a_payout_is_created_and_its_page_shows_the_account_masked(operator, merchant, app):
    form = _form()
    response = operator.post("/payouts", form)
    assert response.status_code == 303
    page = operator.get(response.headers["Location"]).text
    assert "150,000.50" in page and "NGN" in page
    assert "•••• " + form["account_number"][-4:] in page
    assert form["account_number"] not in page
    assert "Guaranty Trust Bank" in page
    with app.extensions["paydesk"].uow(write=False) as uow:
        audit = uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant.merchant_id,
                                                         audit_log.c.action == "payout.create")).one()
    assert audit.actor.startswith("payouts-") and audit.amount_minor == 15000050


@pytest.mark.parametrize("overrides, message", [
    ({"account_number": "1234567890"}, "Account number is not a valid NUBAN for bank 058"),
    ({"account_number": "12345"}, "Account number must be a 10-digit NUBAN"),
    ({"bank": ""}, "Bank is required for payment method ng-bank-payout"),  # the form's words (issue 13)
    ({"bank": "999"}, "Bank 999 is not in the bank list of payment method ng-bank-payout"),
    ({"holder": ""}, "Account holder is required for payouts"),
    ({"amount": "1.234"}, "Amount has more decimal places than NGN allows (2)"),
    ({"amount": "10.000000000000000000000000000001"}, "Amount has too many decimal places"),
    ({"amount": "1e-1000000000"}, "Amount must be a number"),
    ({"amount": "1E+5"}, "Amount must be a number"),
    ({"amount": "1" * 5000}, "Amount must be at most 1000000000"),
    ({"email": "not-an-address"}, "Customer e-mail must be a valid e-mail address"),
])
def test_field_errors_are_the_services_and_shown_inline(operator, overrides, message):
    response = operator.post("/payouts", _form(**overrides))
    assert response.status_code == 422
    assert response.text.count(message) == 2  # the summary at the top and beside the field


def test_a_reused_reference_names_the_existing_payout(operator):
    form = _form()
    operator.post("/payouts", form)
    again = operator.post("/payouts", form)
    assert f"Transaction with reference {form['reference']} already exists" in again.text
