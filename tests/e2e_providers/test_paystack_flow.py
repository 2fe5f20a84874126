"""Paystack end to end: Paydesk's API and checkout, a fake Paystack over HTTP, signed Paystack webhooks,
and Paydesk's own signed webhooks arriving at the merchant's receiver. Both databases."""
from __future__ import annotations

import json
import re

import requests
from standardwebhooks.webhooks import Webhook

from app.payments import settlement
from app.payments.accounts import _nuban_check_digit

from . import bodies
from .conftest import (
    PAYSTACK_SECRET,
    fetch_bank_lists,
    history,
    on_request,
    outgoing,
    payment_request,
    post_webhook,
    provider_events,
    stored,
)

RECEIVED = {"received": True}


def create_payment(live, server, deps, paystack_fake, receiver, amount=10500.50) -> tuple[str, dict]:
    """POST /api/v1/transactions with paystack-card, then a worker's round opens it at Paystack;
    returns the txNo and the request sent."""
    request = payment_request("paystack-card", "NGN", amount, receiver.url)
    paystack_fake.on("POST", "/transaction/initialize", {})  # replaced once the reference is known

    def answer_for_its_reference(seen):
        paystack_fake.on("POST", "/transaction/initialize", bodies.initialize_answer(seen.json["reference"]))

    on_request(paystack_fake, "POST", "/transaction/initialize", answer_for_its_reference)
    calls_before = len(paystack_fake.seen)
    created = live.post("/transactions", request)
    assert created.status_code == 200, created.text
    tx_no = created.json()["transactionId"]
    # The request answered Pending without calling Paystack; until a worker has opened the payment
    # there, the checkout URL is a page that reloads itself.
    assert created.json()["status"] == "PENDING"
    assert len(paystack_fake.seen) == calls_before
    page = requests.get(f"{server.url}/checkout/{tx_no}", allow_redirects=False, timeout=10)
    assert page.status_code == 200 and "Connecting you to the payment page" in page.text
    assert '<meta http-equiv="refresh"' in page.text
    assert settlement.run_due_provider_checks(deps) == 1  # the worker opens it at Paystack
    return tx_no, request


def test_payment_checkout_webhook_partial_refund_and_merchant_webhooks(
        server, live, merchant, deps, paystack_account, paystack_fake, receiver, deliver):
    tx_no, request = create_payment(live, server, deps, paystack_fake, receiver)

    # Created Pending; a worker asked Paystack to initialize with kobo, the txNo and Paydesk's return page.
    assert live.post("/transactions", request).status_code == 409  # the reference is taken
    [initialize] = paystack_fake.requests_to("POST", "/transaction/initialize")
    assert initialize.header("Authorization") == f"Bearer {PAYSTACK_SECRET}"
    assert initialize.json == {
        "email": "ada@example.com", "amount": 1050050, "currency": "NGN", "reference": tx_no,
        "metadata": {"txNo": tx_no, "reference": request["reference"]},
        "callback_url": f"{server.url}/checkout/{tx_no}/return"}
    status = live.status(tx_no)
    assert (status["Status"], status["ProviderMessage"], status["ProviderTransactionId"]) == (
        "Pending", "Authorization URL created", None)

    # The checkout URL sends the customer to Paystack's page.
    page = requests.get(f"{server.url}/checkout/{tx_no}", allow_redirects=False, timeout=10)
    assert (page.status_code, page.headers["Location"]) == (303, bodies.AUTHORIZATION_URL)
    # The simulator's buttons cannot move a payment Paystack serves.
    browser = requests.Session()
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"',
                      browser.get(f"{server.url}/login", timeout=10).text).group(1)
    assert browser.post(f"{server.url}/checkout/{tx_no}", data={"decision": "approve", "csrf_token": token},
                        allow_redirects=False, timeout=10).status_code == 404

    # Paystack reports the charge.
    answer = post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.charge_success(tx_no, 1050050), PAYSTACK_SECRET))
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    status = live.status(tx_no)
    assert {k: status[k] for k in ("Status", "DeclineReason", "ProviderTransactionId", "ProviderStatus",
                                   "ProviderMessage")} == {
        "Status": "Captured", "DeclineReason": None, "ProviderTransactionId": str(bodies.PAYSTACK_TX_ID),
        "ProviderStatus": "success", "ProviderMessage": "Successful"}
    assert history(deps, tx_no)[1:] == [("Pending", "Captured", "paystack webhook", "Successful")]
    [event] = provider_events(deps, paystack_account)
    assert {k: event[k] for k in ("event_type", "signature_valid", "result", "tx_no", "detail")} == {
        "event_type": "charge.success", "signature_valid": True, "result": "applied", "tx_no": tx_no,
        "detail": "Pending -> Captured"}

    # A partial refund through the API: answered Pending at once; a worker then asks Paystack
    # whether it was sent, then POST /refund.
    paystack_fake.on("GET", "/refund", bodies.refund_list())

    def refund_answer(seen):
        refund_tx_no = seen.json["merchant_note"].removeprefix("Paydesk refund ")
        paystack_fake.on("POST", "/refund", {
            "status": True, "message": "Refund has been queued for processing",
            "data": bodies.paystack_refund(tx_no, refund_tx_no, 250000, "pending",
                                           expected_at="2026-12-03T10:10:00.000Z")})
        paystack_fake.on("GET", f"/refund/{bodies.PAYSTACK_REFUND_ID}", {
            "status": True, "message": "Refund retrieved",
            "data": bodies.paystack_refund(tx_no, refund_tx_no, 250000, "processed")})

    on_request(paystack_fake, "POST", "/refund", refund_answer)
    refund = live.post("/transactions/refund", {"txNo": tx_no, "amount": 2500, "reason": "damaged"})
    assert refund.status_code == 200, refund.text
    refund_tx_no = refund.json()["refundTxNo"]
    assert refund.json() == {
        "refundTxNo": refund_tx_no, "originalTxNo": tx_no, "amount": 2500, "currency": "NGN",
        "status": "Pending", "message": "Refund is being processed",
        "providerRefundId": None, "createdAt": refund.json()["createdAt"]}
    assert paystack_fake.requests_to("GET", "/refund") == paystack_fake.requests_to("POST", "/refund") == []
    assert settlement.run_due_provider_checks(deps) == 1  # the worker submits it
    queued = live.status(refund_tx_no)
    assert (queued["Status"], queued["ProviderMessage"], queued["ProviderTransactionId"]) == (
        "Pending", "Refund has been queued for processing", str(bodies.PAYSTACK_REFUND_ID))
    [listed] = paystack_fake.requests_to("GET", "/refund")
    assert listed.query == {"transaction": [str(bodies.PAYSTACK_TX_ID)], "currency": ["NGN"],
                            "perPage": ["100"]}
    [posted] = paystack_fake.requests_to("POST", "/refund")
    assert posted.json == {"transaction": tx_no, "amount": 250000, "currency": "NGN",
                           "merchant_note": f"Paydesk refund {refund_tx_no}"}

    # Paystack's refund.processed names only the original: Paydesk asks Paystack about its refund.
    answer = post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.refund_event("refund.processed", tx_no, 250000, "processed"), PAYSTACK_SECRET))
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    assert [(s.method, s.path) for s in paystack_fake.seen][-1] == (
        "GET", f"/refund/{bodies.PAYSTACK_REFUND_ID}")
    refunded = live.status(refund_tx_no)
    assert {k: refunded[k] for k in ("Status", "ProviderTransactionId", "ProviderStatus", "Reference",
                                     "UserDefinedField1")} == {
        "Status": "Captured", "ProviderTransactionId": str(bodies.PAYSTACK_REFUND_ID),
        "ProviderStatus": "processed", "Reference": request["reference"], "UserDefinedField1": "damaged"}
    assert live.status(tx_no)["Status"] == "Captured"  # partial: the original stays Captured
    assert provider_events(deps, paystack_account)[-1]["result"] == "applied"
    detail = provider_events(deps, paystack_account)[-1]["detail"]
    assert detail.startswith(f"Asked Paystack: {refund_tx_no} ") and detail.endswith("Captured"), detail

    # Paydesk's own webhooks reach the merchant, signed with the live secret.
    assert deliver() == 2
    deliveries = receiver.wait_for(2)
    verified = [Webhook(merchant.live_webhook_secret).verify(d.body, d.headers) for d in deliveries]
    by_tx = {payload["txNo"]: payload for payload in verified}
    assert by_tx[tx_no] == {
        "txNo": tx_no, "status": "Captured", "amount": 10500.5, "currency": "NGN",
        "transactionType": "Payment", "originalTxNo": None,
        "providerTransactionId": str(bodies.PAYSTACK_TX_ID), "providerStatus": "success",
        "providerMessage": "Successful", "createdAt": status["CreatedAt"]}
    assert by_tx[refund_tx_no] == {
        "txNo": refund_tx_no, "status": "Captured", "amount": 2500, "currency": "NGN",
        "transactionType": "Refund", "originalTxNo": tx_no,
        "providerTransactionId": str(bodies.PAYSTACK_REFUND_ID), "providerStatus": "processed",
        "providerMessage": "Refund retrieved", "createdAt": refund.json()["createdAt"]}
    assert any('"amount": 10500.50' in d.body for d in deliveries)  # exact, the currency's digits
    assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.captured"]
    assert [e for e, _ in outgoing(deps, refund_tx_no)] == ["refund.captured"]


def test_the_customer_back_from_paystack_is_sent_on_by_what_paystack_says(
        server, live, deps, paystack_account, paystack_fake, receiver):
    """The return page hands the question to a worker and reloads itself; once the worker has
    recorded Paystack's answer, the reload sends the customer on."""
    tx_no, _request = create_payment(live, server, deps, paystack_fake, receiver, amount=500)
    verify = f"/transaction/verify/{tx_no}"
    paystack_fake.on("GET", verify, bodies.verify_answer(tx_no, 50000))

    back = requests.get(f"{server.url}/checkout/{tx_no}/return", allow_redirects=False, timeout=10)

    # The request itself asked Paystack nothing: it answers a page that reloads itself.
    assert back.status_code == 200
    assert "Confirming your payment with the provider" in back.text
    reload_url = re.search(r'<meta http-equiv="refresh" content="\d+; url=([^"]+)">', back.text).group(1)
    assert "asked=" in reload_url
    assert paystack_fake.requests_to("GET", verify) == []
    assert live.status(tx_no)["Status"] == "Pending"
    assert settlement.run_due_provider_checks(deps) == 1  # the worker asks Paystack
    assert len(paystack_fake.requests_to("GET", verify)) == 1
    back = requests.get(f"{server.url}{reload_url.replace('&amp;', '&')}", allow_redirects=False, timeout=10)
    assert (back.status_code, back.headers["Location"]) == (303, "https://shop.example/paid")
    assert live.status(tx_no)["Status"] == "Captured"
    assert history(deps, tx_no)[1:] == [("Pending", "Captured", "worker", "Successful")]
    # Paystack's webhook arriving afterwards changes nothing and sends nothing more.
    answer = post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.charge_success(tx_no, 50000), PAYSTACK_SECRET))
    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    assert provider_events(deps, paystack_account)[-1]["result"] == "no change"
    assert len(history(deps, tx_no)) == 2
    assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.captured"]
    # Paid: the checkout URL no longer sends anyone to Paystack.
    page = requests.get(f"{server.url}/checkout/{tx_no}", allow_redirects=False, timeout=10)
    assert page.status_code == 200


def test_bank_payout_from_the_bank_list_through_otp_to_captured(
        server, live, merchant, deps, paystack_account, paystack_fake, receiver, deliver):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    # Connecting made the account's bank lists due; a worker fetches and stores them.
    assert fetch_bank_lists(deps) == 4  # GHS, KES, NGN, ZAR
    fetched = len(paystack_fake.seen)

    banks = live.post("/transactions/banks", {"paymentMethod": "paystack-bank-payout", "currency": "NGN"})

    assert banks.status_code == 200, banks.text
    assert banks.json() == [{"code": "044", "name": "Access Bank"},
                            {"code": "011", "name": "First Bank of Nigeria"},
                            {"code": "058", "name": "Guaranty Trust Bank"}]
    [listed] = [seen for seen in paystack_fake.requests_to("GET", "/bank") if seen.query["currency"] == ["NGN"]]
    assert listed.query == {"country": ["nigeria"], "currency": ["NGN"], "perPage": ["100"],
                            "use_cursor": ["true"]}

    bank = banks.json()[2]["code"]
    account_number = "012345678" + str(_nuban_check_digit(bank, "012345678"))
    paystack_fake.on("POST", "/transferrecipient", bodies.recipient_answer("Ada Obi", account_number, bank))

    def otp_answer(seen):
        paystack_fake.on("POST", "/transfer", {
            "status": True, "message": "Transfer requires OTP to continue",
            "data": bodies.transfer_object(seen.json["reference"].upper(), 2500000, "otp")})

    on_request(paystack_fake, "POST", "/transfer", otp_answer)
    request = payment_request("paystack-bank-payout", "NGN", 25000, receiver.url,
                              transactionAction="PAYMENT",
                              payment={"paymentMethod": "paystack-bank-payout", "bank": bank,
                                       "holder": "Ada Obi", "accountNumber": account_number})
    created = live.post("/transactions", request)

    assert created.status_code == 200, created.text
    tx_no = created.json()["transactionId"]
    assert tx_no.startswith("POU-")
    assert created.json()["message"] == "Payout created"
    # The bank list and the bank check read the stored list, and the create sent nothing to
    # Paystack: a worker makes the transfer.
    assert len(paystack_fake.seen) == fetched
    assert live.status(tx_no)["Status"] == "Pending"
    assert settlement.run_due_provider_checks(deps) == 1
    [recipient] = paystack_fake.requests_to("POST", "/transferrecipient")
    assert recipient.json == {"type": "nuban", "name": "Ada Obi", "account_number": account_number,
                              "bank_code": bank, "currency": "NGN"}
    [transfer] = paystack_fake.requests_to("POST", "/transfer")
    assert transfer.json == {"source": "balance", "amount": 2500000, "recipient": bodies.RECIPIENT_CODE,
                             "reference": tx_no.lower(), "currency": "NGN", "reason": "PAYDESK E2E"}
    status = live.status(tx_no)
    assert {k: status[k] for k in ("Status", "ProviderStatus", "ProviderMessage", "ProviderTransactionId")} == {
        "Status": "Pending", "ProviderStatus": "otp", "ProviderMessage": "Transfer requires OTP to continue",
        "ProviderTransactionId": bodies.TRANSFER_CODE}
    assert stored(deps, tx_no)["provider_check_at"] is not None  # the worker asks again later

    answer = post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.transfer_event("transfer.success", tx_no, 2500000, "success"), PAYSTACK_SECRET))

    assert (answer.status_code, answer.json()) == (200, RECEIVED)
    status = live.status(tx_no)
    assert (status["Status"], status["ProviderStatus"], status["DeclineReason"]) == ("Captured", "success", None)
    assert history(deps, tx_no)[1:] == [("Pending", "Captured", "paystack webhook", None)]
    assert stored(deps, tx_no)["provider_check_at"] is None
    assert deliver() == 1
    [delivery] = receiver.wait_for(1)
    payload = Webhook(merchant.live_webhook_secret).verify(delivery.body, delivery.headers)
    assert (payload["txNo"], payload["status"], payload["transactionType"], payload["amount"]) == (
        tx_no, "Captured", "Payout", 25000)
    assert account_number not in delivery.body and account_number not in json.dumps(status)
