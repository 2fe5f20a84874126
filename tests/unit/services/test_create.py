"""Creating payments and payouts: the method's checks, the provider's opening answer, unique references."""
from __future__ import annotations

from decimal import Decimal

import pytest

from app.payments import services
from app.payments.model import DuplicateReference, FieldErrors, Kind, Status
from app.payments.provider import Outcome
from app.payments.requests import Billing, CreateRequest, PaymentDetails

from .fakes import CALLER, OTHER_MERCHANT

GTBANK_NUBAN = "0123456785"


def create_request(method="card", currency="EUR", reference="order-1", country=None,
                   action=None, **account) -> CreateRequest:
    return CreateRequest(
        amount=Decimal("25.00"), currency=currency, reference=reference, statement_descriptor="SHOP",
        callback_url="https://shop.example/hooks",
        billing=Billing("Ada", "Obi", "ada@example.com", "customer-1", country),
        payment=PaymentDetails(method, **account), transaction_action=action)


PAYOUT = dict(method="ng-bank-payout", currency="NGN", country="NG", action="PAYMENT",
              bank="058", holder="Ada Obi")


@pytest.fixture
def field_errors(deps, store, provider):
    """The FieldErrors a create is refused with, once it is shown it reached neither store nor provider."""
    def refused(request: CreateRequest) -> dict[str, list[str]]:
        commits = store.commits
        with pytest.raises(FieldErrors) as caught:
            services.create_transaction(deps, CALLER, request)
        assert (store.commits, provider.calls) == (commits, [])
        return caught.value.errors
    return refused


def test_a_payment_is_created_pending_with_the_providers_answer(deps, store, provider):
    provider.will_answer("create", Outcome(Status.PENDING, "cs_1", "OPEN", "Checkout session open"))
    created = services.create_transaction(deps, CALLER, create_request())
    stored = store.get(created)
    assert (stored.kind, stored.status, stored.amount) == (Kind.PAYMENT, Status.PENDING, Decimal("25.00"))
    assert (stored.provider_transaction_id, stored.provider_status) == ("cs_1", "OPEN")
    assert store.history_of(created) == [(None, Status.PENDING, CALLER.actor)]


def test_a_payout_is_created_with_its_checked_account_and_audited(deps, store):
    created = services.create_transaction(
        deps, CALLER, create_request(**PAYOUT, account_number="0123 456 785"))
    assert (created.kind, created.status) == (Kind.PAYOUT, Status.PENDING)
    assert store.get(created).payment_details == {"bank": "058", "holder": "Ada Obi",
                                                  "accountNumber": GTBANK_NUBAN}
    assert [(a.action, a.target) for a in store.committed.audit_log] == [("payout.create", created.tx_no)]


def test_an_unknown_method_is_refused(field_errors):
    assert field_errors(create_request(method="crypto")) == {
        "Payment.PaymentMethod": ["Payment method crypto not found"]}


def test_a_currency_the_method_does_not_take_is_refused(field_errors):
    assert field_errors(create_request(currency="GBP")) == {
        "Currency": ["Currency GBP is not supported by payment method card"]}


def test_payout_fields_on_a_payment_are_refused(field_errors):
    request = create_request(action="PAYMENT", bank="058", holder="Ada Obi", account_number=GTBANK_NUBAN)
    assert field_errors(request) == {
        "TransactionAction": ["TransactionAction applies to payout methods only"],
        "Payment.Bank": ["Payment.Bank applies to payout methods only"],
        "Payment.Holder": ["Payment.Holder applies to payout methods only"],
        "Payment.AccountNumber": ["Payment.AccountNumber applies to payout methods only"],
    }


def test_a_payout_without_its_fields_is_refused_with_all_of_them(field_errors):
    assert field_errors(create_request(method="ng-bank-payout", currency="NGN", country="GH")) == {
        "Billing.Country": ["Country GH is not supported by payment method ng-bank-payout"],
        "TransactionAction": ["TransactionAction must be PAYMENT for payout method ng-bank-payout"],
        "Payment.Holder": ["Payment.Holder is required for payouts"],
        "Payment.AccountNumber": ["Payment.AccountNumber is required for payouts"],
        "Payment.Bank": ["Payment.Bank is required for payment method ng-bank-payout"],
    }


def test_a_payout_to_a_bank_off_the_list_or_a_bad_account_is_refused(field_errors):
    errors = field_errors(create_request(**{**PAYOUT, "bank": "999"}, account_number="0123456789"))
    assert errors["Payment.Bank"] == ["Bank 999 is not in the bank list of payment method ng-bank-payout"]
    assert list(errors) == ["Payment.Bank", "Payment.AccountNumber"]


def test_a_reference_used_before_is_a_duplicate_naming_the_first_transaction(deps, store):
    first = services.create_transaction(deps, CALLER, create_request(reference="order-7"))
    with pytest.raises(DuplicateReference) as caught:
        services.create_transaction(deps, CALLER, create_request(reference="order-7"))
    assert str(caught.value) == "Transaction with reference order-7 already exists"
    assert caught.value.existing_tx_no == first.tx_no
    assert store.history_of(first) == [(None, Status.PENDING, CALLER.actor)]
    assert len(store.committed.transactions) == 1


def test_a_reference_is_unique_only_within_a_merchant(deps, store):
    services.create_transaction(deps, CALLER, create_request(reference="order-7"))
    theirs = services.create_transaction(deps, OTHER_MERCHANT, create_request(reference="order-7"))
    assert store.get(theirs).reference == "order-7"
