"""New payouts from the dashboard: bank lists by method, the service's checks, masked accounts."""
from __future__ import annotations

import html
import json
import re
import uuid

import pytest
from sqlalchemy import select

from app.payments.schemas import max_length
from app.store.tables import audit_log, transactions
from tests.dashboard.conftest import Browserless, add_user

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


def test_a_method_without_bank_list_says_there_is_no_bank_to_choose(operator):
    response = operator.get("/payouts/banks?method=mobile-money-payout&currency=KES")
    assert ('<p class="hint" id="bank-none">None to choose: Mobile money payout pays straight to the '
            'mobile number.</p>') in response.text
    assert "does not support bank lists" not in response.text and 'name="bank"' not in response.text
    assert "Cache-Control" not in response.headers or "max-age" not in response.headers["Cache-Control"]


def test_sepa_reads_the_bank_from_the_iban_instead_of_a_list(operator):
    for url in ("/payouts/banks?method=sepa-payout&currency=EUR",
                "/payouts/new/destination?method=sepa-payout"):
        part = operator.get(url, headers={"HX-Request": "true"}).text
        assert re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", part.split('id="bank-picker"')[1].split("</div>")[0])
                      ).strip().endswith("Bank Read from the IBAN")
        assert 'name="bank"' not in part and 'name="country"' not in part
    form = operator.get("/payouts/new/destination?method=sepa-payout&account_number=DE89370400440532013000",
                        headers={"HX-Request": "true"}).text
    assert "This IBAN is at Commerzbank (COBADEFF)" in form
    assert 'value="DE89370400440532013000"' in form  # the account typed before the method changed


@pytest.mark.parametrize("method, currency, label", [
    ("sepa-payout", "EUR", "IBAN"),
    ("ng-bank-payout", "NGN", "Account number (NUBAN)"),
    ("mobile-money-payout", "KES", "Mobile number"),
])
def test_the_account_number_is_labelled_as_the_method_knows_it(operator, method, currency, label):
    part = operator.get(f"/payouts/new/destination?method={method}&currency={currency}",
                        headers={"HX-Request": "true"}).text
    assert re.search(rf'<span class="label-row"><label for="account_number">{re.escape(label)}</label>'
                     r'<span class="required-mark" aria-hidden="true">\*</span></span>', part)
    assert re.search(r'<input[^>]*aria-required="true"[^>]*id="account_number"', part)


def test_required_fields_are_marked_and_optional_ones_are_not(operator):
    page = operator.get("/payouts/new?method=ng-bank-payout").text
    required = set(re.findall(r'id="(\w+)"[^>]*aria-required="true"|aria-required="true"[^>]*id="(\w+)"', page))
    required = {a or b for a, b in required}
    assert required >= {"method", "currency", "bank", "account_number", "holder", "amount", "reference",
                        "statement_descriptor", "callback_url", "email", "customer_reference"}
    assert not required & {"country", "first_name", "last_name"}


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


def test_the_statement_text_input_holds_what_the_api_holds(operator):
    page = operator.get("/payouts/new").text
    limit = max_length("CreateTransactionRequest.statementDescriptor")
    assert re.search(rf'<input[^>]*maxlength="{limit}"[^>]*name="statement_descriptor"', page) or \
        re.search(rf'<input[^>]*name="statement_descriptor"[^>]*maxlength="{limit}"', page)


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


@pytest.mark.parametrize("step", ["/payouts/review", "/payouts"])
def test_outside_a_demo_a_live_simulator_payout_is_refused_as_by_the_api(real_money_server, merchant,
                                                                         app, step):
    operator = Browserless(real_money_server.url)
    operator.login(add_user(app, merchant.merchant_id, "payouts"))
    form = _form()
    response = operator.post(step, form)
    assert response.status_code == 422
    assert ("Payment method ng-bank-payout is served by the simulator, which moves no real money in "
            "live mode; connect a provider for it") in response.text
    with app.extensions["paydesk"].uow(write=False) as uow:
        made = uow.conn.execute(select(transactions.c.id).where(
            transactions.c.merchant_id == merchant.merchant_id,
            transactions.c.reference == form["reference"])).all()
    assert made == []


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
@pytest.mark.parametrize("step", ["/payouts/review", "/payouts"])
def test_field_errors_are_the_services_and_shown_inline(operator, overrides, message, step):
    response = operator.post(step, _form(**overrides))
    assert response.status_code == 422
    assert response.text.count(message) == 2  # the summary at the top and beside the field


@pytest.mark.parametrize("step", ["/payouts/review", "/payouts"])
def test_a_reused_reference_names_the_existing_payout(operator, step):
    form = _form()
    operator.post("/payouts", form)
    again = operator.post(step, form)
    assert again.status_code == 422
    assert again.text.count(f"Transaction with reference {form['reference']} already exists") == 2


def _payouts_with_reference(app, merchant, reference: str) -> list[str]:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return list(uow.conn.execute(select(transactions.c.tx_no).where(
            transactions.c.merchant_id == merchant.merchant_id,
            transactions.c.reference == reference)).scalars())


def _request_key(page: str) -> str:
    return re.search(r'name="request_key" value="([^"]+)"', page).group(1)


def _confirm_form(review_page: str) -> dict:
    """The hidden inputs of the review's confirm form, as the browser would send them."""
    confirm = review_page.split('class="payout-review"')[1].split("</form>")[0]
    return {name: html.unescape(value) for name, value in
            re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', confirm)
            if name != "csrf_token"}


def test_the_form_asks_for_a_review_not_a_create(operator):
    page = operator.get("/payouts/new").text
    assert 'action="/payouts/review"' in page
    assert ">Review payout</button>" in page and "Create payout" not in page


def test_the_review_shows_what_would_be_sent_and_creates_nothing(operator, app, merchant):
    form = _form()
    response = operator.post("/payouts/review", form)
    assert response.status_code == 200
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.text))
    for shown in ("Review payout of 150,000.50 NGN", "Amount 150,000.50 NGN", "Payout method NGN bank payout",
                  "Bank Guaranty Trust Bank (058)", f"Account number (NUBAN) {form['account_number']}",
                  "Account holder Chinedu Okafor", "Name at the bank: CHINEDU OKAFOR", "Customer Chinedu Okafor",
                  "Customer e-mail chinedu@example.com", f"Reference {form['reference']}"):
        assert shown in text
    assert ">Confirm payout</button>" in response.text and ">Edit</button>" in response.text
    assert _payouts_with_reference(app, merchant, form["reference"]) == []
    assert _confirm_form(response.text) == {**form, "request_key": _request_key(response.text)}


def test_edit_gives_the_form_back_as_it_was_filled_in(operator, app, merchant):
    form = _form(holder="Ngozi Eze")
    response = operator.post("/payouts/review", {**form, "step": "edit"})
    assert response.status_code == 200
    assert ">Review payout</button>" in response.text
    for value in ("Ngozi Eze", form["account_number"], "150000.50", form["reference"], "chinedu@example.com"):
        assert f'value="{value}"' in response.text
    assert '<option selected value="ng-bank-payout">' in response.text
    assert '<option value="058" selected' in response.text
    assert _payouts_with_reference(app, merchant, form["reference"]) == []


def test_a_confirmation_sent_twice_creates_one_payout(operator, app, merchant):
    review = operator.post("/payouts/review", _form()).text
    confirm = _confirm_form(review)
    first = operator.post("/payouts", confirm)
    again = operator.post("/payouts", confirm)
    assert first.status_code == again.status_code == 303
    assert first.headers["Location"] == again.headers["Location"]
    created = _payouts_with_reference(app, merchant, confirm["reference"])
    assert len(created) == 1 and first.headers["Location"].endswith(created[0])
    with app.extensions["paydesk"].uow(write=False) as uow:
        audits = uow.conn.execute(select(audit_log).where(audit_log.c.target == created[0])).all()
    assert [a.action for a in audits] == ["payout.create"]


def test_a_confirmation_cannot_be_reused_for_another_payout(operator, app, merchant):
    confirm = _confirm_form(operator.post("/payouts/review", _form()).text)
    operator.post("/payouts", confirm)
    other = {**confirm, "reference": f"po-{uuid.uuid4().hex[:10]}", "amount": "99"}
    response = operator.post("/payouts", other)
    assert response.status_code == 422
    assert "This confirmation was already used for another payout; review the payout again." in response.text
    assert _payouts_with_reference(app, merchant, other["reference"]) == []


def test_htmx_steps_swap_the_payout_part_and_the_confirm_loads_the_payouts_page(operator, app, merchant):
    htmx = {"HX-Request": "true"}
    review = operator.post("/payouts/review", _form(), headers=htmx)
    assert review.status_code == 200 and "HX-Request" in review.headers["Vary"]
    assert review.text.lstrip().startswith('<div id="payout">') and "<html" not in review.text
    assert 'id="confirm-payout" data-focus-after-swap' in review.text
    confirm = _confirm_form(review.text)
    created = operator.post("/payouts", confirm, headers=htmx)
    assert created.status_code == 204
    (tx_no,) = _payouts_with_reference(app, merchant, confirm["reference"])
    assert created.headers["HX-Redirect"] == f"/transactions/{tx_no}"
    refused = operator.post("/payouts/review", _form(holder=""), headers=htmx)
    assert refused.status_code == 422 and refused.text.lstrip().startswith('<div id="payout">')
    assert 'id="error-summary" tabindex="-1" data-focus-after-swap' in refused.text


def test_a_provider_bank_list_not_stored_yet_is_being_fetched_and_asked_again(app, operator, merchant):
    from app.payments.bank_lists import ListKey
    from app.payments.provider import Bank
    from app.store import bank_lists as stored_lists
    from app.store.tables import bank_lists
    from app.util import utcnow
    from tests.conftest import connect_paystack

    account_id = connect_paystack(app, merchant.merchant_id)
    url = "/payouts/banks?method=paystack-bank-payout&currency=NGN&country=NG"

    fetching = operator.get(url, headers={"HX-Request": "true"})

    assert fetching.status_code == 200
    assert "The bank list is being fetched from the provider; try again in a moment." in fetching.text
    assert 'hx-trigger="load delay:2s"' in fetching.text and "max-age" not in fetching.headers.get(
        "Cache-Control", "")
    review = operator.post("/payouts/review", _form(method="paystack-bank-payout", country="NG"))
    assert review.status_code == 422
    assert "The bank list is being fetched from the provider; try again in a moment." in html.unescape(
        review.text)
    # Once a worker has stored it, the picker lists its banks.
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        list_id = uow.conn.execute(select(bank_lists.c.id).where(
            bank_lists.c.provider_account_id == account_id, bank_lists.c.currency == "NGN")).scalar_one()
        stored_lists.save_fetched(uow.conn, list_id, [Bank("058", "Guaranty Trust Bank")], utcnow(), utcnow())
        uow.commit()
        assert uow.bank_lists.get(ListKey(account_id, "NGN", "NG")).banks == [Bank("058", "Guaranty Trust Bank")]
    listed = operator.get(url, headers={"HX-Request": "true"})
    assert '<option value="058" >Guaranty Trust Bank (058)</option>' in listed.text
    assert "hx-trigger" not in listed.text.split(">")[0]


def _text(html_text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html_text)).strip()


@pytest.mark.parametrize("args, text", [
    ({"bank": "058", "account_number": nuban("058"), "holder": ""}, "Name at the bank: CHINEDU OKAFOR"),
    ({"bank": "058", "account_number": nuban("058"), "holder": "okafor chinedu"},
     "Name at the bank: CHINEDU OKAFOR"),  # the bank's word order, any case: the same name
    ({"bank": "058", "account_number": nuban("058"), "holder": "Ngozi Eze"},
     "Name at the bank: CHINEDU OKAFOR (not the account holder typed)"),
    ({"bank": "058", "account_number": "0000000001"},
     "The bank did not confirm this account: Could not resolve account name. Check parameters or try again."),
    ({"bank": "058", "account_number": "12345"}, ""),  # not a NUBAN yet: nothing asked
    ({"bank": "", "account_number": nuban("058")}, ""),  # no bank chosen yet
])
def test_the_account_holders_name_is_shown_as_the_bank_has_it(operator, args, text):
    response = operator.get("/payouts/account-name", params={"method": "ng-bank-payout", "currency": "NGN",
                                                             **args}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert _text(response.text) == text
    assert ('data-holder="CHINEDU OKAFOR"' in response.text) is text.startswith("Name at the bank")


def test_an_account_the_bank_does_not_confirm_is_refused_on_the_account_number(operator):
    response = operator.post("/payouts/review", _form(account_number="0000000001"))
    assert response.status_code == 422
    message = ("The bank did not confirm this account: Could not resolve account name. "
               "Check parameters or try again.")
    assert response.text.count(message) == 2
    assert 'id="account_number-errors"' in response.text


def test_one_review_shows_every_error_of_the_form_at_once(operator):
    response = operator.post("/payouts/review", _form(amount="1.234", email="not-an-address", bank="999",
                                                      account_number="12345", reference=""))
    assert response.status_code == 422
    for message in ("Amount has more decimal places than NGN allows (2)",
                    "Customer e-mail must be a valid e-mail address",
                    "Bank 999 is not in the bank list of payment method ng-bank-payout",
                    "Account number must be a 10-digit NUBAN", "Reference is required"):
        assert response.text.count(message) == 2, message
    assert "The payout was not created: 5 problems to fix." in response.text


@pytest.mark.parametrize("step", ["/payouts/review", "/payouts"])
def test_the_confirm_step_also_shows_every_error_at_once(operator, step):
    response = operator.post(step, _form(amount="1.234", account_number="12345"))
    assert response.status_code == 422
    assert response.text.count("Amount has more decimal places than NGN allows (2)") == 2
    assert response.text.count("Account number must be a 10-digit NUBAN") == 2


def test_customer_names_left_blank_are_the_holders(operator, app, merchant):
    form = _form(first_name="", last_name="", holder="Ada Obi Chioma")
    review = operator.post("/payouts/review", form)
    assert review.status_code == 200
    assert "Customer Ada Obi Chioma" in _text(review.text)
    response = operator.post("/payouts", _confirm_form(review.text))
    assert response.status_code == 303
    with app.extensions["paydesk"].uow(write=False) as uow:
        billing = uow.conn.execute(select(transactions.c.billing).where(
            transactions.c.reference == form["reference"])).scalar_one()
    billing = json.loads(billing) if isinstance(billing, str) else billing
    assert (billing["firstName"], billing["lastName"]) == ("Ada Obi", "Chioma")


def test_a_sepa_payout_is_sent_to_the_bank_its_iban_names(operator, app, merchant):
    form = _form(method="sepa-payout", currency="EUR", bank="", holder="Max Mustermann", amount="1500",
                 account_number="DE89 3704 0044 0532 0130 00", first_name="", last_name="")
    review = operator.post("/payouts/review", form)
    assert review.status_code == 200, _text(review.text)[:500]
    text = _text(review.text)
    assert "Bank Commerzbank (COBADEFF)" in text and "IBAN DE89370400440532013000" in text
    assert "Name at the bank" not in text  # IBANs are not named by the simulator
    response = operator.post("/payouts", _confirm_form(review.text))
    assert response.status_code == 303
    with app.extensions["paydesk"].uow(write=False) as uow:
        details = uow.conn.execute(select(transactions.c.payment_details).where(
            transactions.c.reference == form["reference"])).scalar_one()
    details = json.loads(details) if isinstance(details, str) else details
    assert details["bank"] == "COBADEFF"


def test_a_sepa_iban_whose_bank_is_unknown_asks_for_a_bank_on_the_bank_line(operator):
    response = operator.post("/payouts/review", _form(method="sepa-payout", currency="EUR", bank="",
                                                      account_number="MT84MALT011000012345MTLCAST001S"))
    assert response.status_code == 422
    assert response.text.count("Bank is required for payment method sepa-payout") == 2
