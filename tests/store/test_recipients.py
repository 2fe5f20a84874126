"""Saved recipients on both databases: checked as a payout's destination is, saved once per
account, scoped to merchant and mode, archived not paid, and every save, archive and payment audited."""
from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from app.payments import recipients
from app.payments.model import Caller, FieldErrors, Kind, Mode, Status
from app.payments.recipients import RecipientArchived, RecipientDetails, RecipientNotFound
from app.store.merchants import create_merchant
from app.store.tables import audit_log
from app.store.tables import recipients as recipient_rows
from tests.dashboard.test_payouts import nuban

IBAN = "DE89370400440532013000"


@pytest.fixture
def deps(app):
    return app.extensions["paydesk"]


@pytest.fixture
def caller(merchant) -> Caller:
    return Caller(merchant.merchant_id, Mode.SANDBOX, "payouts@shop.test", "127.0.0.1")


def ngn(**overrides) -> RecipientDetails:
    fields = dict(payment_method="ng-bank-payout", currency="NGN", bank="058", holder="Chinedu Okafor",
                  account_number=nuban("058"), first_name="Chinedu", last_name="Okafor",
                  email="chinedu@example.com", label="Lagos supplier")
    fields.update(overrides)
    return RecipientDetails(**fields)


def sepa(**overrides) -> RecipientDetails:
    fields = dict(payment_method="sepa-payout", currency="EUR", country="DE", bank="COBADEFF",
                  holder="Greta Schmidt", account_number="DE89 3704 0044 0532 0130 00",
                  first_name="Greta", last_name="Schmidt", email="greta@example.com")
    fields.update(overrides)
    return RecipientDetails(**fields)


def audit_rows(deps, caller, action: str) -> list:
    with deps.uow(write=False) as uow:
        return list(uow.conn.execute(select(audit_log).where(
            audit_log.c.merchant_id == caller.merchant_id, audit_log.c.action == action)
            .order_by(audit_log.c.id)))


def test_a_saved_recipient_keeps_the_destination_as_the_create_normalises_it(deps, caller):
    saved = recipients.save(deps, caller, sepa())
    assert saved.created
    recipient = saved.recipient
    assert recipient.public_id.startswith("rcp_") and len(recipient.public_id) == 24
    assert (recipient.account_number, recipient.bank, recipient.country) == (IBAN, "COBADEFF", "DE")
    assert recipient.masked_account_number == "•••• 3000"
    assert recipient.customer_reference == recipient.public_id  # none given: its own id
    assert recipients.get(deps, caller, recipient.public_id) == recipient
    [entry] = audit_rows(deps, caller, "recipient.save")
    assert (entry.target, entry.actor, entry.mode, entry.ip) == (
        recipient.public_id, "payouts@shop.test", "sandbox", "127.0.0.1")
    assert json.loads(entry.detail) == {"method": "sepa-payout", "holder": "Greta Schmidt",
                                        "account": "•••• 3000"}
    assert IBAN not in entry.detail


def test_saving_an_account_twice_gives_the_first_recipient(deps, caller):
    first = recipients.save(deps, caller, sepa())
    again = recipients.save(deps, caller, sepa(account_number=IBAN, holder="G. Schmidt"))
    assert (again.created, again.recipient) == (False, first.recipient)
    assert [r.public_id for r in recipients.list_recipients(deps, caller)] == [first.recipient.public_id]
    assert len(audit_rows(deps, caller, "recipient.save")) == 1


def test_saves_of_one_account_at_once_make_one_recipient(deps, caller):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: recipients.save(deps, caller, ngn()), range(4)))
    assert len({result.recipient.public_id for result in results}) == 1
    assert sum(result.created for result in results) == 1
    with deps.uow(write=False) as uow:
        assert uow.conn.execute(select(func.count()).select_from(recipient_rows).where(
            recipient_rows.c.merchant_id == caller.merchant_id)).scalar_one() == 1


@pytest.mark.parametrize("details, errors", [
    (ngn(account_number="12345"), {"Payment.AccountNumber": ["Account number must be a 10-digit NUBAN"]}),
    (ngn(bank="999"), {"Payment.Bank": ["Bank 999 is not in the bank list of payment method ng-bank-payout"],
                       "Payment.AccountNumber": ["Account number is not a valid NUBAN for bank 999"]}),
    (ngn(bank=None), {"Payment.Bank": ["Payment.Bank is required for payment method ng-bank-payout"]}),
    (ngn(email="not-an-address"), {"Billing.Email": ["Billing.Email must be a valid e-mail address"]}),
    (ngn(holder=""), {"Payment.Holder": ["Payment.Holder is required for payouts"]}),
    (ngn(currency="EUR"), {"Currency": ["Currency EUR is not supported by payment method ng-bank-payout"]}),
    (sepa(account_number="DE00 3704 0044 0532 0130 00"),
     {"Payment.AccountNumber": ["Account number is not a valid IBAN: invalid checksum digits"]}),
    (ngn(label="x" * 101), {"Label": ["Label must be at most 100 characters"]}),
    (ngn(payment_method="card"), {"TransactionAction": ["TransactionAction applies to payout methods only"],
                                  "Payment.Bank": ["Payment.Bank applies to payout methods only"],
                                  "Payment.Holder": ["Payment.Holder applies to payout methods only"],
                                  "Payment.AccountNumber": ["Payment.AccountNumber applies to payout methods only"]}),
])
def test_a_recipient_is_checked_by_the_creates_own_rules(deps, caller, details, errors):
    with pytest.raises(FieldErrors) as refused:
        recipients.save(deps, caller, details)
    assert refused.value.errors == errors
    assert recipients.list_recipients(deps, caller) == []


def test_recipients_are_the_callers_merchant_and_mode_alone(deps, caller, app):
    saved = recipients.save(deps, caller, ngn()).recipient
    with deps.uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    strangers = [Caller(other.merchant_id, Mode.SANDBOX, "x@other.test"),
                 Caller(caller.merchant_id, Mode.LIVE, caller.actor)]
    for stranger in strangers:
        assert recipients.list_recipients(deps, stranger) == []
        with pytest.raises(RecipientNotFound, match=f"Recipient {saved.public_id} not found"):
            recipients.get(deps, stranger, saved.public_id)
        with pytest.raises(RecipientNotFound):
            recipients.archive(deps, stranger, saved.public_id)
        with pytest.raises(RecipientNotFound):
            recipients.payout_to(deps, stranger, saved.public_id, Decimal("10"), "NGN", "x")
        with deps.uow(write=False) as uow:
            assert recipients.find(uow, stranger, saved.public_id) is None
    # The same account in the other mode is a recipient of its own.
    live = recipients.save(deps, strangers[1], ngn())
    assert live.created and live.recipient.public_id != saved.public_id


def test_the_list_is_by_holder_and_searched_by_holder_or_label(deps, caller):
    recipients.save(deps, caller, sepa())
    recipients.save(deps, caller, ngn(label="Lagos 100%_office"))
    recipients.save(deps, caller, ngn(holder="Adaeze Nwosu", account_number=nuban("058", "987654321"),
                                      label=None))
    holders = lambda search="": [r.holder for r in recipients.list_recipients(deps, caller, search)]  # noqa: E731
    assert holders() == ["Adaeze Nwosu", "Chinedu Okafor", "Greta Schmidt"]
    assert holders("SCHMIDT") == ["Greta Schmidt"]
    assert holders("100%_") == ["Chinedu Okafor"]  # wildcards are literal
    assert holders("x%") == []


def test_a_payout_to_a_recipient_carries_its_stored_destination_and_is_audited(deps, caller):
    recipient = recipients.save(deps, caller, ngn()).recipient
    payout = recipients.payout_to(deps, caller, recipient.public_id, Decimal("25000"), "NGN", "PO-1",
                                  "SUPPLIER JUNE")
    assert payout.body["payment"] == {"paymentMethod": "ng-bank-payout", "bank": "058",
                                      "holder": "Chinedu Okafor", "accountNumber": nuban("058")}
    assert payout.body["billing"] == {"firstName": "Chinedu", "lastName": "Okafor",
                                      "email": "chinedu@example.com",
                                      "customerReference": recipient.public_id}
    assert payout.body["statementDescriptor"] == "SUPPLIER JUNE"
    tx = recipients.pay(deps, caller, payout)
    assert (tx.kind, tx.status, tx.amount, tx.currency) == (Kind.PAYOUT, Status.PENDING, Decimal("25000"), "NGN")
    assert tx.payment_details == {"bank": "058", "holder": "Chinedu Okafor", "accountNumber": nuban("058")}
    [paid] = audit_rows(deps, caller, "recipient.pay")
    assert (paid.target, paid.amount_minor, paid.currency) == (tx.tx_no, 2500000, "NGN")
    assert json.loads(paid.detail) == {"recipient": recipient.public_id, "holder": "Chinedu Okafor",
                                       "account": recipient.masked_account_number}
    assert [row.target for row in audit_rows(deps, caller, "payout.create")] == [tx.tx_no]


def test_a_payout_to_a_recipient_defaults_to_the_merchants_name_and_callback(deps, caller, merchant):
    recipient = recipients.save(deps, caller, sepa()).recipient
    payout = recipients.payout_to(deps, caller, recipient.public_id, Decimal("10.50"), None, "PO-2")
    with deps.uow(write=False) as uow:
        name, callback = uow.recipients.payout_defaults(caller)
    assert (payout.body["statementDescriptor"], payout.body["callbackUrl"]) == (name[:22], callback)
    assert payout.request.amount == Decimal("10.50") and payout.request.currency == "EUR"
    assert payout.body["billing"]["country"] == "DE"


@pytest.mark.parametrize("amount, currency, errors", [
    (Decimal("10"), "EUR", {"Currency": ["Recipient {id} is paid in NGN"]}),
    (Decimal("0.001"), "NGN", {"Amount": ["Amount has more decimal places than NGN allows (2)"]}),
    (None, "NGN", {"Amount": ["Amount is required"]}),
])
def test_a_payout_to_a_recipient_is_checked_as_a_create(deps, caller, amount, currency, errors):
    recipient = recipients.save(deps, caller, ngn()).recipient
    with pytest.raises(FieldErrors) as refused:
        recipients.payout_to(deps, caller, recipient.public_id, amount, currency, "PO-3")
    assert refused.value.errors == {name: [m.format(id=recipient.public_id) for m in messages]
                                    for name, messages in errors.items()}


def test_an_archived_recipient_is_listed_apart_and_never_paid(deps, caller):
    recipient = recipients.save(deps, caller, ngn()).recipient
    archived = recipients.archive(deps, caller, recipient.public_id)
    assert archived.archived and archived.archived_by == caller.actor
    assert recipients.archive(deps, caller, recipient.public_id).archived_at == archived.archived_at
    assert recipients.list_recipients(deps, caller) == []
    assert [r.public_id for r in recipients.list_recipients(deps, caller, archived=True)] == [recipient.public_id]
    with pytest.raises(RecipientArchived, match=f"Recipient {recipient.public_id} is archived and cannot be paid"):
        recipients.payout_to(deps, caller, recipient.public_id, Decimal("10"), "NGN", "PO-4")
    with deps.uow(write=False) as uow:
        assert recipients.find(uow, caller, recipient.public_id) is None
    [entry] = audit_rows(deps, caller, "recipient.archive")
    assert (entry.target, json.loads(entry.detail)) == (
        recipient.public_id, {"holder": "Chinedu Okafor", "account": recipient.masked_account_number})
    # The account is free again: saving it makes a new recipient.
    again = recipients.save(deps, caller, ngn())
    assert again.created and again.recipient.public_id != recipient.public_id


def test_batches_find_a_live_recipient_inside_their_own_unit(deps, caller):
    recipient = recipients.save(deps, caller, sepa()).recipient
    with deps.uow(write=False) as uow:
        found = recipients.find(uow, caller, recipient.public_id)
        assert recipients.find(uow, caller, "rcp_unknown") is None
    assert found == recipient
    assert found.payment() == {"paymentMethod": "sepa-payout", "bank": "COBADEFF", "holder": "Greta Schmidt",
                               "accountNumber": IBAN}
