"""Creating payments and payouts, and reading their stored status."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app.store.tables import transactions

from tests.conftest import payment_body


def test_create_returns_pending_in_upper_case_with_checkout_url(sandbox, server):
    body = payment_body(amount=100, reference="order-create-1")
    response = sandbox.post("/transactions", body)
    assert response.status_code == 200
    created = response.json()
    tx_no = created["transactionId"]
    assert created == {
        "transactionId": tx_no,
        "reference": "order-create-1",
        "currency": "EUR",
        "amount": 100.00,
        "status": "PENDING",
        "message": "Transaction created",
        "checkoutUrl": f"{server.url}/checkout/{tx_no}",
    }
    assert '"amount": 100.00' in response.text


def test_status_response_is_pascal_case_and_stored(sandbox):
    body = payment_body(amount=12.3, currency="USD", successUrl="https://shop.example/ok",
                        pendingUrl="https://shop.example/wait", failureUrl="https://shop.example/ko",
                        userDefinedField1="a", userDefinedField2="b", userDefinedField3="c")
    tx_no = sandbox.post("/transactions", body).json()["transactionId"]
    status = sandbox.status(tx_no)
    assert status == {
        "TransactionId": tx_no,
        "Status": "Pending",
        "Amount": 12.30,
        "Currency": "USD",
        "Reference": body["reference"],
        "DeclineReason": None,
        "CreatedAt": status["CreatedAt"],
        "ProviderTransactionId": f"sim_{tx_no}",
        "ProviderStatus": "CREATED",
        "ProviderMessage": "Awaiting customer at checkout",
        "SuccessUrl": "https://shop.example/ok",
        "PendingUrl": "https://shop.example/wait",
        "FailureUrl": "https://shop.example/ko",
        "UserDefinedField1": "a",
        "UserDefinedField2": "b",
        "UserDefinedField3": "c",
    }
    assert status["CreatedAt"].endswith("Z")


def test_unknown_tx_no_is_404(sandbox):
    response = sandbox.get("/transactions/NOPE-404/status")
    assert response.status_code == 404
    assert response.json() == {"error": "Transaction with TxNo NOPE-404 not found"}


@pytest.mark.parametrize("currency,amount,written", [("JPY", 100, "100"), ("KWD", 1, "1.000"),
                                                     ("EUR", 100, "100.00")])
def test_amounts_use_the_currency_minor_digits(sandbox, currency, amount, written):
    response = sandbox.post("/transactions", payment_body(amount=amount, currency=currency))
    assert f'"amount": {written},' in response.text


def test_more_decimals_than_the_currency_allows_is_a_field_error(sandbox):
    response = sandbox.post("/transactions", payment_body(amount=1.5, currency="JPY"))
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": ["Amount has more decimal places than JPY allows (0)"]}}


def test_duplicate_reference_is_409_with_existing_id(sandbox):
    first = sandbox.post("/transactions", payment_body(reference="dup-ref")).json()
    second = sandbox.post("/transactions", payment_body(reference="dup-ref"))
    assert second.status_code == 409
    assert second.json() == {"error": "Transaction with reference dup-ref already exists",
                             "transactionId": first["transactionId"]}


def test_reference_is_unique_per_mode_not_across_modes(sandbox, live):
    assert sandbox.post("/transactions", payment_body(reference="both-modes")).status_code == 200
    assert live.post("/transactions", payment_body(reference="both-modes")).status_code == 200


def test_unknown_payment_method(sandbox):
    response = sandbox.post("/transactions", payment_body(payment={"paymentMethod": "bitcoin"}))
    assert response.status_code == 400
    assert response.json() == {"errors": {"Payment.PaymentMethod": ["Payment method bitcoin not found"]}}


def test_currency_the_method_does_not_take(sandbox):
    response = sandbox.post("/transactions", payment_body(currency="CHF"))
    assert response.json() == {"errors": {"Currency": ["Currency CHF is not supported by payment method card"]}}


def test_missing_required_fields_are_all_reported(sandbox):
    response = sandbox.post("/transactions", {"billing": {}, "payment": {}})
    assert response.status_code == 400
    assert response.json() == {"errors": {
        "Amount": ["Amount is required"],
        "Currency": ["Currency is required"],
        "Reference": ["Reference is required"],
        "StatementDescriptor": ["StatementDescriptor is required"],
        "CallbackUrl": ["CallbackUrl is required"],
        "Billing.FirstName": ["Billing.FirstName is required"],
        "Billing.LastName": ["Billing.LastName is required"],
        "Billing.Email": ["Billing.Email is required"],
        "Billing.CustomerReference": ["Billing.CustomerReference is required"],
        "Payment.PaymentMethod": ["Payment.PaymentMethod is required"],
    }}


def nuban(bank_code: str, serial: str) -> str:
    """A valid NUBAN for the bank: serial plus the CBN check digit."""
    weights = [3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3]
    total = sum(int(d) * w for d, w in zip(bank_code + serial, weights))
    return serial + str((10 - total % 10) % 10)


def payout_body(**payment) -> dict:
    details = {"paymentMethod": "ng-bank-payout", "bank": "058", "holder": "Chidi Okafor",
               "accountNumber": nuban("058", "012345678")}
    details.update(payment)
    return payment_body(amount=5000, currency="NGN", transactionAction="PAYMENT", payment=details)


def test_payout_is_created_and_paid_by_the_worker(sandbox, app):
    response = sandbox.post("/transactions", payout_body())
    assert response.status_code == 200, response.text
    created = response.json()
    assert created["transactionId"].startswith("POU-")
    assert created["message"] == "Payout created"
    assert sandbox.status(created["transactionId"])["Status"] == "Pending"


def test_payout_needs_payment_action(sandbox):
    body = payout_body()
    del body["transactionAction"]
    response = sandbox.post("/transactions", body)
    assert response.json() == {"errors": {
        "TransactionAction": ["TransactionAction must be PAYMENT for payout method ng-bank-payout"]}}


def test_payout_bank_must_come_from_the_list(sandbox):
    response = sandbox.post("/transactions", payout_body(bank="999"))
    assert response.status_code == 400
    assert response.json()["errors"]["Payment.Bank"] == [
        "Bank 999 is not in the bank list of payment method ng-bank-payout"]


def test_payout_account_number_is_checked_by_the_method_rule(sandbox):
    response = sandbox.post("/transactions", payout_body(accountNumber="0123456789"))
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["Payment.AccountNumber"]


def test_payout_requires_holder_account_and_bank(sandbox):
    body = payment_body(amount=5000, currency="NGN", transactionAction="PAYMENT",
                        payment={"paymentMethod": "ng-bank-payout"})
    response = sandbox.post("/transactions", body)
    assert response.json() == {"errors": {
        "Payment.Holder": ["Payment.Holder is required for payouts"],
        "Payment.AccountNumber": ["Payment.AccountNumber is required for payouts"],
        "Payment.Bank": ["Payment.Bank is required for payment method ng-bank-payout"],
    }}


def test_a_country_the_method_refuses_is_not_also_a_bank_off_its_list(sandbox):
    body = payout_body()
    body["billing"]["country"] = "GH"
    response = sandbox.post("/transactions", body)
    assert response.json() == {"errors": {
        "Billing.Country": ["Country GH is not supported by payment method ng-bank-payout"]}}


def test_method_and_account_errors_come_in_one_answer(sandbox):
    body = payout_body(accountNumber="12345")
    del body["transactionAction"]
    response = sandbox.post("/transactions", body)
    assert response.json() == {"errors": {
        "TransactionAction": ["TransactionAction must be PAYMENT for payout method ng-bank-payout"],
        "Payment.AccountNumber": ["Account number must be a 10-digit NUBAN"]}}


def test_sepa_payout_with_iban(sandbox):
    body = payment_body(amount=10, currency="EUR", transactionAction="PAYMENT",
                        payment={"paymentMethod": "sepa-payout", "bank": "COBADEFF",
                                 "holder": "Max Mustermann", "accountNumber": "DE89 3704 0044 0532 0130 00"})
    response = sandbox.post("/transactions", body)
    assert response.status_code == 200, response.text


def test_sepa_payout_to_a_bank_that_is_not_the_ibans_is_refused(sandbox):
    body = payment_body(amount=10, currency="EUR", transactionAction="PAYMENT",
                        payment={"paymentMethod": "sepa-payout", "bank": "DEUTDEFF",
                                 "holder": "Max Mustermann", "accountNumber": "DE89 3704 0044 0532 0130 00"})
    response = sandbox.post("/transactions", body)
    assert response.status_code == 400
    assert response.json() == {"errors": {"Payment.Bank": [
        "Bank DEUTDEFF (Deutsche Bank) is not the bank of this IBAN, which belongs to Commerzbank (COBADEFF)"]}}


def _sepa_payout(**payment) -> dict:
    return payment_body(amount=10, currency="EUR", transactionAction="PAYMENT",
                        payment={"paymentMethod": "sepa-payout", "holder": "Max Mustermann", **payment})


def _stored_bank(app, tx_no: str) -> str | None:
    with app.extensions["paydesk"].uow(write=False) as uow:
        details = uow.conn.execute(select(transactions.c.payment_details).where(
            transactions.c.tx_no == tx_no)).scalar_one()
    return (json.loads(details) if isinstance(details, str) else details)["bank"]


def test_sepa_payout_to_another_branch_of_the_ibans_bank_is_accepted(sandbox, app):
    # COBADEDD is Commerzbank in Düsseldorf; the IBAN's bank code names Commerzbank (COBADEFF).
    response = sandbox.post("/transactions", _sepa_payout(bank="COBADEDD",
                                                          accountNumber="DE89370400440532013000"))
    assert response.status_code == 200, response.text
    assert _stored_bank(app, response.json()["transactionId"]) == "COBADEDD"


def test_sepa_payout_without_a_bank_is_sent_to_the_ibans_bank(sandbox, app):
    response = sandbox.post("/transactions", _sepa_payout(accountNumber="DE89 3704 0044 0532 0130 00"))
    assert response.status_code == 200, response.text
    assert _stored_bank(app, response.json()["transactionId"]) == "COBADEFF"


def test_sepa_payout_without_a_bank_needs_one_when_the_ibans_bank_is_unknown(sandbox):
    response = sandbox.post("/transactions", _sepa_payout(accountNumber="MT84MALT011000012345MTLCAST001S"))
    assert response.status_code == 400
    assert response.json() == {"errors": {"Payment.Bank": [
        "Payment.Bank is required for payment method sepa-payout"]}}


def test_sepa_payout_without_a_bank_or_a_valid_iban_is_refused_on_the_account_alone(sandbox):
    response = sandbox.post("/transactions", _sepa_payout(accountNumber="DE00370400440532013000"))
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["Payment.AccountNumber"]


def test_sepa_payout_without_bank_or_account_asks_for_both(sandbox):
    response = sandbox.post("/transactions", _sepa_payout())
    assert response.json() == {"errors": {
        "Payment.AccountNumber": ["Payment.AccountNumber is required for payouts"],
        "Payment.Bank": ["Payment.Bank is required for payment method sepa-payout"]}}


def test_mobile_money_payout_takes_no_bank(sandbox):
    body = payment_body(amount=100, currency="KES", transactionAction="PAYMENT",
                        payment={"paymentMethod": "mobile-money-payout", "holder": "Wanjiku",
                                 "accountNumber": "+254712345678"})
    assert sandbox.post("/transactions", body).status_code == 200


def test_payouts_cannot_be_refunded(sandbox):
    tx_no = sandbox.post("/transactions", payout_body()).json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    response = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 1})
    assert response.json() == {"error": f"Only payments can be refunded; transaction {tx_no} is a payout"}


def test_payment_methods_are_listed(sandbox):
    methods = {m["id"]: m for m in sandbox.get("/payment-methods").json()}
    assert set(methods) == {"card", "card-full-refund-only", "ng-bank-payout", "sepa-payout",
                            "mobile-money-payout"}
    assert methods["ng-bank-payout"]["bankList"] is True
    assert methods["mobile-money-payout"]["bankList"] is False
    assert methods["card-full-refund-only"]["partialRefunds"] is False
    assert methods["card"]["kind"] == "card"
