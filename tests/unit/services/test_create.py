"""Creating payments and payouts: the method's checks, the provider's opening answer (asked for by a
worker), unique references."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from app.payments import create, settlement
from app.payments.model import DuplicateReference, FieldErrors, Kind, Status
from app.payments.provider import Outcome, ProviderUnavailable
from app.payments.schemas import Billing
from app.payments.schemas import CreateTransactionRequest as CreateRequest
from app.payments.schemas import Payment as PaymentDetails

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
            create.create_transaction(deps, CALLER, request)
        assert (store.commits, provider.calls) == (commits, [])
        return caught.value.errors
    return refused


def test_a_payment_is_created_pending_with_the_providers_answer(deps, store, provider):
    provider.will_answer("create", Outcome(Status.PENDING, "cs_1", "OPEN", "Checkout session open"))
    created = create.create_transaction(deps, CALLER, create_request())
    assert (created.status, created.provider_transaction_id, provider.calls) == (Status.PENDING, None, [])
    assert settlement.run_due_provider_checks(deps) == 1
    stored = store.get(created)
    assert (stored.kind, stored.status, stored.amount) == (Kind.PAYMENT, Status.PENDING, Decimal("25.00"))
    assert (stored.provider_transaction_id, stored.provider_status) == ("cs_1", "OPEN")
    assert store.history_of(created) == [(None, Status.PENDING, CALLER.actor)]


def test_a_payout_is_created_with_its_checked_account_and_audited(deps, store):
    created = create.create_transaction(
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
    first = create.create_transaction(deps, CALLER, create_request(reference="order-7"))
    with pytest.raises(DuplicateReference) as caught:
        create.create_transaction(deps, CALLER, create_request(reference="order-7"))
    assert str(caught.value) == "Transaction with reference order-7 already exists"
    assert caught.value.existing_tx_no == first.tx_no
    assert store.history_of(first) == [(None, Status.PENDING, CALLER.actor)]
    assert len(store.committed.transactions) == 1


def test_a_reference_is_unique_only_within_a_merchant(deps, store):
    create.create_transaction(deps, CALLER, create_request(reference="order-7"))
    theirs = create.create_transaction(deps, OTHER_MERCHANT, create_request(reference="order-7"))
    assert store.get(theirs).reference == "order-7"


def test_a_network_provider_is_asked_only_by_the_worker_after_the_pending_transaction_is_committed(
        deps, store, provider, clock):
    provider.will_answer("create", Outcome(Status.PENDING, None, None, "Authorization URL created",
                                           redirect_url="https://checkout.paystack.com/abc"))
    created = create.create_transaction(deps, CALLER, create_request())
    assert provider.calls == []  # not on the request's thread
    assert store.get(created).provider_check_at == clock()  # handed to the workers, due at once
    assert settlement.run_due_provider_checks(deps) == 1
    [call] = provider.calls
    assert (call.operation, call.write_units_open, call.committed_status) == ("create", 0, Status.PENDING)
    stored = store.get(created)
    assert (stored.provider_redirect_url, stored.provider_check_at) == ("https://checkout.paystack.com/abc", None)


def test_a_provider_that_cannot_answer_leaves_the_payment_pending_for_the_worker(deps, store, provider, clock):
    provider.will_answer("create", ProviderUnavailable("Paystack answered HTTP 502"))
    created = create.create_transaction(deps, CALLER, create_request())
    assert provider.calls == []
    assert settlement.run_due_provider_checks(deps) == 1
    stored = store.get(created)
    assert (stored.status, stored.provider_message) == (Status.PENDING, "Paystack answered HTTP 502")
    assert stored.provider_check_at == clock() + settlement.CLAIM_FOR
    assert not stored.opened_at_provider
    clock.advance(seconds=31)
    provider.will_answer("create", Outcome(Status.PENDING, None, None, "Authorization URL created",
                                           redirect_url="https://checkout.paystack.com/abc"))
    assert settlement.run_due_provider_checks(deps) == 1
    assert provider.asked() == [created.tx_no, created.tx_no]  # opened again, never asked its status
    assert store.get(created).provider_redirect_url == "https://checkout.paystack.com/abc"


def test_a_refusal_on_create_fails_the_payment_with_the_providers_words_once_the_worker_asked(
        deps, store, provider):
    provider.will_answer("create", Outcome(Status.FAILED, None, "HTTP 400", "Invalid Email Address Passed",
                                           decline_reason="Provider Error"))
    created = create.create_transaction(deps, CALLER, create_request())
    assert (created.status, provider.calls) == (Status.PENDING, [])
    assert settlement.run_due_provider_checks(deps) == 1
    stored = store.get(created)
    assert (stored.status, stored.decline_reason, stored.provider_message) == (
        Status.FAILED, "Provider Error", "Invalid Email Address Passed")
    assert store.history_of(created) == [(None, Status.PENDING, CALLER.actor),
                                         (Status.PENDING, Status.FAILED, "worker")]
    assert store.webhooks_of(created) == ["payment.failed"]


@pytest.mark.parametrize(("waited", "delay"), [
    (timedelta(seconds=0), timedelta(seconds=30)),
    (timedelta(minutes=10), timedelta(minutes=2, seconds=30)),
    (timedelta(days=2), timedelta(hours=1)),
])
def test_an_unreachable_provider_is_asked_again_later_the_longer_it_has_waited(waited, delay):
    assert settlement.retry_delay(waited) == delay


def test_check_create_refuses_what_the_create_refuses_and_writes_nothing(deps, store, provider):
    request = create_request(**{**PAYOUT, "bank": "999"}, account_number="12345")
    with pytest.raises(FieldErrors) as checked:
        create.check_create(deps, CALLER, request)
    with pytest.raises(FieldErrors) as created:
        create.create_transaction(deps, CALLER, request)
    assert checked.value.errors == created.value.errors
    assert list(checked.value.errors) == ["Payment.Bank", "Payment.AccountNumber"]
    assert (store.commits, store.committed.transactions, provider.calls) == (0, {}, [])


def test_check_create_refuses_a_reference_used_before(deps, store):
    first = create.create_transaction(deps, CALLER, create_request(reference="order-7"))
    commits = store.commits
    with pytest.raises(DuplicateReference) as caught:
        create.check_create(deps, CALLER, create_request(reference="order-7"))
    assert caught.value.existing_tx_no == first.tx_no
    assert store.commits == commits


def test_check_create_gives_the_payouts_checked_account(deps, store):
    checked = create.check_create(deps, CALLER, create_request(**PAYOUT, account_number="0123 456 785"))
    assert checked.method.method_id == "ng-bank-payout"
    assert checked.payment_details == {"bank": "058", "holder": "Ada Obi", "accountNumber": GTBANK_NUBAN}
    assert store.committed.transactions == {}


def _body(**payment) -> dict:
    return {"amount": Decimal("25.00"), "currency": "NGN", "reference": "order-1", "statementDescriptor": "SHOP",
            "callbackUrl": "https://shop.example/hooks", "transactionAction": "PAYMENT",
            "billing": {"firstName": "Ada", "lastName": "Obi", "email": "ada@example.com",
                        "customerReference": "customer-1"},
            "payment": {"paymentMethod": "ng-bank-payout", "bank": "058", "holder": "Ada Obi",
                        "accountNumber": GTBANK_NUBAN, **payment}}


def test_check_create_body_gives_the_request_and_its_checked_payout(deps, store):
    request, checked = create.check_create_body(deps, CALLER, _body())
    assert (request.reference, checked.payment_details) == (
        "order-1", {"bank": "058", "holder": "Ada Obi", "accountNumber": GTBANK_NUBAN})


def test_check_create_body_shows_the_bodys_errors_and_the_payouts_at_once(deps, store):
    body = _body(bank="999", accountNumber="12345", holder=None)
    body["billing"]["email"] = "not-an-address"
    body["amount"] = Decimal("1.234")
    with pytest.raises(FieldErrors) as refused:
        create.check_create_body(deps, CALLER, body)
    errors = refused.value.errors
    # parse_create alone stops at the body's own errors (the amount, the e-mail).
    assert set(errors) == {"Amount", "Billing.Email", "Payment.Holder", "Payment.Bank",
                           "Payment.AccountNumber"}
    assert errors["Payment.Bank"] == ["Bank 999 is not in the bank list of payment method ng-bank-payout"]
    assert errors["Payment.AccountNumber"] == ["Account number must be a 10-digit NUBAN"]
    assert errors["Payment.Holder"] == ["Payment.Holder is required for payouts"]
    assert store.commits == 0


def test_check_create_body_keeps_a_fields_own_error_first(deps, store):
    body = _body(holder="x" * 141)
    with pytest.raises(FieldErrors) as refused:
        create.check_create_body(deps, CALLER, body)
    assert list(refused.value.errors) == ["Payment.Holder"]
    assert len(refused.value.errors["Payment.Holder"]) == 1


def test_check_create_body_of_an_unknown_method_names_it_beside_the_bodys_errors(deps):
    body = _body(paymentMethod="crypto")
    body["amount"] = "x"
    with pytest.raises(FieldErrors) as refused:
        create.check_create_body(deps, CALLER, body)
    assert refused.value.errors["Payment.PaymentMethod"] == ["Payment method crypto not found"]
    assert "Amount" in refused.value.errors
