"""Saved recipients in the dashboard: saving one (the create's checks, masked once saved), paying
one again through review and a one-time confirmation, archiving, approvals, roles."""
from __future__ import annotations

import html
import json
import re
import uuid

import pytest
from sqlalchemy import func, select

from app.payments import recipients
from app.payments.model import Caller, Mode
from app.payments.recipients import RecipientDetails
from app.store.tables import audit_log, transactions

from tests.conftest import payment_body

from .conftest import SANDBOX
from .test_payouts import nuban

ACCOUNT = nuban("058")


@pytest.fixture
def operator(dashboard, merchant):
    return dashboard(merchant.merchant_id, "payouts")


def _form(**overrides) -> dict:
    form = {"method": "ng-bank-payout", "currency": "NGN", "country": "", "bank": "058",
            "holder": "Chinedu Okafor", "account_number": ACCOUNT, "label": "Lagos supplier",
            "first_name": "Chinedu", "last_name": "Okafor", "email": "chinedu@example.com",
            "customer_reference": ""}
    form.update(overrides)
    return form


def _saved(app, merchant, mode=Mode.LIVE, **overrides) -> recipients.Recipient:
    fields = dict(payment_method="ng-bank-payout", currency="NGN", bank="058", holder="Chinedu Okafor",
                  account_number=ACCOUNT, first_name="Chinedu", last_name="Okafor",
                  email="chinedu@example.com")
    fields.update(overrides)
    caller = Caller(merchant.merchant_id, mode, "setup@shop.test")
    return recipients.save(app.extensions["paydesk"], caller, RecipientDetails(**fields)).recipient


def _text(response) -> str:
    return html.unescape(response.text)


def _audit(app, merchant, action: str) -> list:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return list(uow.conn.execute(select(audit_log).where(
            audit_log.c.merchant_id == merchant.merchant_id, audit_log.c.action == action)
            .order_by(audit_log.c.id)))


def _payouts_of(app, merchant) -> list:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return list(uow.conn.execute(select(transactions).where(
            transactions.c.merchant_id == merchant.merchant_id, transactions.c.kind == "payout")))


def test_an_operator_saves_a_recipient_and_sees_its_account_masked(operator, app, merchant):
    assert "Save recipient" in operator.get("/recipients/new").text
    response = operator.post("/recipients", _form())
    assert response.status_code == 303
    [entry] = _audit(app, merchant, "recipient.save")
    assert response.headers["Location"] == f"/recipients#{entry.target}"
    page = _text(operator.get("/recipients"))
    assert "Recipient Chinedu Okafor saved (account •••• " + ACCOUNT[-4:] + ")." in page
    assert "Lagos supplier" in page and "Guaranty Trust Bank" in page
    assert f'<td class="mono">•••• {ACCOUNT[-4:]}</td>' in page
    assert ACCOUNT not in page
    assert ACCOUNT not in operator.get(f"/recipients/{entry.target}/pay").text
    assert entry.actor.startswith("payouts-") and ACCOUNT not in entry.detail


def test_a_recipient_is_checked_as_a_payouts_destination_is(operator, app, merchant):
    response = operator.post("/recipients", _form(account_number="12345"))
    assert response.status_code == 422
    page = _text(response)
    assert "The recipient was not saved:" in page
    assert '<a href="#account_number">Account number must be a 10-digit NUBAN</a>' in page
    assert 'id="account_number-errors"' in page
    page = _text(operator.post("/recipients", _form(email="nope")))
    assert '<a href="#email">Customer e-mail must be a valid e-mail address</a>' in page
    assert _audit(app, merchant, "recipient.save") == []


def test_saving_an_account_again_leads_to_the_recipient_saved_first(operator, app, merchant):
    first = _saved(app, merchant)
    response = operator.post("/recipients", _form(holder="C. Okafor"))
    assert response.headers["Location"] == f"/recipients#{first.public_id}"
    assert "This account is saved already, as Chinedu Okafor." in _text(operator.get("/recipients"))


def test_the_list_searches_holders_and_is_a_fragment_for_htmx(operator, app, merchant):
    _saved(app, merchant)
    _saved(app, merchant, holder="Greta Schmidt", payment_method="sepa-payout", currency="EUR",
           bank="COBADEFF", country="DE", account_number="DE89370400440532013000",
           first_name="Greta", last_name="Schmidt", email="greta@example.com")
    response = operator.get("/recipients?q=schmidt", headers={"HX-Request": "true"})
    assert response.text.lstrip().startswith('<section id="recipient-results"')
    assert "Greta Schmidt" in response.text and "Chinedu Okafor" not in response.text
    assert "HX-Request" in response.headers["Vary"]
    assert "1 recipient, by holder matching “schmidt”." in _text(response)


def test_paying_a_recipient_reviews_then_makes_one_payout_with_its_details(operator, app, merchant):
    recipient = _saved(app, merchant)
    page = _text(operator.get(f"/recipients/{recipient.public_id}/pay"))
    reference = re.search(r'name="reference" type="text" value="(PO-\d{8}-[0-9A-F]{6})"', page).group(1)
    assert "Amount (NGN)" in page and "autofocus" in page
    form = {"amount": "25000", "reference": reference, "statement_descriptor": "SUPPLIER",
            "callback_url": "https://merchant.example/hooks"}
    review = _text(operator.post(f"/recipients/{recipient.public_id}/pay/review", form))
    assert "Review payout of 25,000.00 NGN" in re.sub(r"<[^>]+>", "", review) and "Confirm payout" in review
    assert f"•••• {ACCOUNT[-4:]}" in review and ACCOUNT not in review
    key = re.search(r'name="request_key" value="([^"]+)"', review).group(1)
    confirmed = operator.post(f"/recipients/{recipient.public_id}/pay", {**form, "request_key": key})
    assert confirmed.status_code == 303
    again = operator.post(f"/recipients/{recipient.public_id}/pay", {**form, "request_key": key})
    assert again.headers["Location"] == confirmed.headers["Location"]  # the first payout, not a second
    [payout] = _payouts_of(app, merchant)
    assert confirmed.headers["Location"] == f"/transactions/{payout.tx_no}"
    assert (payout.reference, payout.statement_descriptor, payout.amount_minor) == (reference, "SUPPLIER", 2500000)
    assert json.loads(payout.payment_details) == {"bank": "058", "holder": "Chinedu Okafor", "accountNumber": ACCOUNT}
    assert json.loads(payout.billing)["customerReference"] == recipient.public_id
    assert [e.target for e in _audit(app, merchant, "recipient.pay")] == [payout.tx_no]
    assert [e.target for e in _audit(app, merchant, "payout.create")] == [payout.tx_no]


def test_the_pay_form_shows_the_creates_refusals_in_its_words(operator, app, merchant):
    recipient = _saved(app, merchant)
    response = operator.post(f"/recipients/{recipient.public_id}/pay/review",
                             {"amount": "1.005", "reference": "", "statement_descriptor": "X",
                              "callback_url": "https://merchant.example/hooks"})
    assert response.status_code == 422
    page = _text(response)
    assert '<a href="#amount">Amount has more decimal places than NGN allows (2)</a>' in page
    assert '<a href="#reference">Reference is required</a>' in page
    assert 'aria-describedby="amount-errors"' in page


def test_a_used_reference_is_refused_on_review(operator, app, merchant):
    recipient = _saved(app, merchant)
    form = {"amount": "10", "reference": f"PO-{uuid.uuid4().hex[:8]}", "statement_descriptor": "X",
            "callback_url": "https://merchant.example/hooks"}
    review = operator.post(f"/recipients/{recipient.public_id}/pay/review", form).text
    key = re.search(r'name="request_key" value="([^"]+)"', review).group(1)
    assert operator.post(f"/recipients/{recipient.public_id}/pay", {**form, "request_key": key}).status_code == 303
    refused = operator.post(f"/recipients/{recipient.public_id}/pay/review", form)
    assert refused.status_code == 422
    assert f"Transaction with reference {form['reference']} already exists" in _text(refused)


def test_above_the_threshold_a_payout_to_a_recipient_waits_for_another_user(operator, dashboard, app, merchant):
    admin = dashboard(merchant.merchant_id, "admin")
    admin.get("/settings/approvals")
    assert admin.post("/settings/approvals/thresholds", {"currency": "NGN", "amount": "1000"}).status_code == 303
    recipient = _saved(app, merchant)
    form = {"amount": "5000", "reference": "PO-BIG", "statement_descriptor": "X",
            "callback_url": "https://merchant.example/hooks"}
    review = _text(operator.post(f"/recipients/{recipient.public_id}/pay/review", form))
    assert "Above the approval threshold of 1,000.00 NGN" in re.sub(r"<[^>]+>", "", review)
    assert "Request approval" in review
    key = re.search(r'name="request_key" value="([^"]+)"', review).group(1)
    asked = operator.post(f"/recipients/{recipient.public_id}/pay", {**form, "request_key": key})
    assert asked.status_code == 303 and asked.headers["Location"].startswith("/approvals#approval-")
    operator.post(f"/recipients/{recipient.public_id}/pay", {**form, "request_key": key})  # sent twice
    assert _payouts_of(app, merchant) == []
    [paid] = _audit(app, merchant, "recipient.pay")
    assert (paid.target, paid.amount_minor) == ("PO-BIG", 500000)
    assert json.loads(paid.detail)["recipient"] == recipient.public_id
    assert len(_audit(app, merchant, "approval.request")) == 1


def test_an_archived_recipient_is_listed_apart_and_cannot_be_paid(operator, app, merchant):
    recipient = _saved(app, merchant)
    response = operator.post(f"/recipients/{recipient.public_id}/archive")
    assert (response.status_code, response.headers["Location"]) == (303, "/recipients")
    page = _text(operator.get("/recipients"))
    assert "Recipient Chinedu Okafor archived; the payouts made to them are kept as they were." in page
    assert "No recipients yet" in page  # the card; its count is left to screen readers
    assert '<p class="muted visually-hidden" role="status">' in operator.get("/recipients").text
    assert recipient.public_id in operator.get("/recipients?archived=1").text
    form = {"amount": "10", "reference": "PO-X", "statement_descriptor": "X",
            "callback_url": "https://merchant.example/hooks", "request_key": "k" * 20}
    for answer in (operator.get(f"/recipients/{recipient.public_id}/pay"),
                   operator.post(f"/recipients/{recipient.public_id}/pay/review", form),
                   operator.post(f"/recipients/{recipient.public_id}/pay", form)):
        assert answer.status_code == 410
        assert "Chinedu Okafor was archived and cannot be paid." in _text(answer)
    assert _payouts_of(app, merchant) == []
    assert [e.target for e in _audit(app, merchant, "recipient.archive")] == [recipient.public_id]


def test_recipients_are_of_their_mode(operator, app, merchant):
    sandbox_one = _saved(app, merchant, Mode.SANDBOX)
    assert sandbox_one.public_id not in operator.get("/recipients").text
    assert operator.get(f"/recipients/{sandbox_one.public_id}/pay").status_code == 404
    assert sandbox_one.public_id in operator.get(f"{SANDBOX}/recipients").text
    assert operator.get(f"{SANDBOX}/recipients/{sandbox_one.public_id}/pay").status_code == 200


@pytest.mark.parametrize("role, sees", [("support", False), ("finance", False), ("payouts", True),
                                        ("admin", True)])
def test_only_payout_operators_and_admins_see_recipients(dashboard, merchant, app, role, sees):
    recipient = _saved(app, merchant)
    client = dashboard(merchant.merchant_id, role)
    assert ('href="/recipients"' in client.get("/transactions").text) is sees
    assert (client.get("/recipients").status_code == 200) is sees
    archived = client.post(f"/recipients/{recipient.public_id}/archive")
    assert archived.status_code == (303 if sees else 403)
    with app.extensions["paydesk"].uow(write=False) as uow:
        count = uow.conn.execute(select(func.count()).select_from(audit_log).where(
            audit_log.c.merchant_id == merchant.merchant_id,
            audit_log.c.action == "recipient.archive")).scalar_one()
    assert count == (1 if sees else 0)


def test_a_payouts_destination_is_saved_from_its_page(operator, dashboard, app, merchant):
    form = {"method": "ng-bank-payout", "currency": "NGN", "country": "", "bank": "058",
            "holder": "Chinedu Okafor", "account_number": ACCOUNT, "amount": "100",
            "reference": f"po-{uuid.uuid4().hex[:10]}", "statement_descriptor": "PAYDESK",
            "callback_url": "https://merchant.example/hooks", "first_name": "Chinedu",
            "last_name": "Okafor", "email": "chinedu@example.com", "customer_reference": "cust-7"}
    created = operator.post("/payouts", form)
    tx_no = created.headers["Location"].rsplit("/", 1)[1]
    page = operator.get(f"/transactions/{tx_no}").text
    assert f'action="/transactions/{tx_no}/save-recipient"' in page
    assert "Save as recipient" not in dashboard(merchant.merchant_id, "finance").get(f"/transactions/{tx_no}").text
    saved = operator.post(f"/transactions/{tx_no}/save-recipient")
    assert saved.status_code == 303
    [entry] = _audit(app, merchant, "recipient.save")
    assert saved.headers["Location"] == f"/recipients#{entry.target}"
    [recipient] = recipients.list_recipients(app.extensions["paydesk"],
                                             Caller(merchant.merchant_id, Mode.LIVE, "x"))
    assert (recipient.holder, recipient.account_number, recipient.customer_reference, recipient.email) == (
        "Chinedu Okafor", ACCOUNT, "cust-7", "chinedu@example.com")
    again = operator.post(f"/transactions/{tx_no}/save-recipient")
    assert again.headers["Location"] == saved.headers["Location"]
    assert "This account is saved already, as Chinedu Okafor." in _text(operator.get("/recipients"))


def test_only_a_payout_is_saved_as_a_recipient(operator, live):
    payment = live.post("/transactions", payment_body()).json()["transactionId"]
    for tx_no in (payment, "POU-NONE"):
        response = operator.post(f"/transactions/{tx_no}/save-recipient")
        assert response.status_code == 404
        assert "There is nothing here in this mode." in response.text
