"""Outside a demo (DEMO_MODE), live money is never decided by the simulator, nor by the payer."""
from __future__ import annotations

import requests

from tests.api.test_create_and_status import payout_body
from tests.conftest import Api, payment_body


def refusal(method: str) -> dict:
    return {"error": f"Payment method {method} is served by the simulator, which moves no real money "
                     "in live mode; connect a provider for it"}


def test_a_live_payment_with_a_simulator_method_is_refused(real_money_server, merchant):
    live = Api(real_money_server.url, merchant.live_token)
    response = live.post("/transactions", payment_body())
    assert response.status_code == 400
    assert response.json() == refusal("card")


def test_a_live_payout_with_a_simulator_method_is_refused(real_money_server, merchant):
    live = Api(real_money_server.url, merchant.live_token)
    response = live.post("/transactions", payout_body())
    assert response.status_code == 400
    assert response.json() == refusal("ng-bank-payout")


def test_the_refusal_is_replayed_under_its_idempotency_key(real_money_server, merchant):
    live = Api(real_money_server.url, merchant.live_token)
    body, key = payment_body(), {"Idempotency-Key": "live-money-1"}
    first, again = live.post("/transactions", body, headers=key), live.post("/transactions", body, headers=key)
    assert (first.status_code, first.json()) == (400, refusal("card"))
    assert (again.status_code, again.content) == (400, first.content)
    assert again.headers["Idempotent-Replayed"] == "true"


def test_field_errors_come_before_the_refusal(real_money_server, merchant):
    live = Api(real_money_server.url, merchant.live_token)
    response = live.post("/transactions", payment_body(currency="XXX"))
    assert response.status_code == 400
    assert list(response.json()) == ["errors"]


def test_sandbox_is_unaffected(real_money_server, merchant):
    sandbox = Api(real_money_server.url, merchant.sandbox_token)
    response = sandbox.post("/transactions", payment_body())
    assert response.status_code == 200, response.text
    page = requests.get(response.json()["checkoutUrl"], timeout=10)  # the real-money server's own
    assert page.status_code == 200
    assert "Approve payment" in page.text and "Decline payment" in page.text


def test_a_live_payment_made_in_a_demo_cannot_be_decided_at_checkout(real_money_server, live):
    created = live.post("/transactions", payment_body(successUrl="https://shop.example/thanks")).json()
    demo_page = f"{live.base_url}/checkout/{created['transactionId']}"
    real_page = f"{real_money_server.url}/checkout/{created['transactionId']}"
    browser = requests.Session()
    offered = browser.get(demo_page, timeout=10)  # the demo's page, with its form and CSRF token
    assert "Approve payment" in offered.text
    token = offered.text.split('name="csrf_token" value="')[1].split('"')[0]

    page = browser.get(real_page, timeout=10)
    assert page.status_code == 410
    assert "This payment can no longer be completed. Please ask the merchant for a new one." in page.text
    assert "Approve" not in page.text and "Decline" not in page.text and "<form" not in page.text
    answer = browser.post(real_page, data={"decision": "approve", "csrf_token": token},
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 410
    assert "Location" not in answer.headers
    assert live.status(created["transactionId"])["Status"] == "Pending"


def test_a_live_payment_decided_in_a_demo_shows_where_it_stands(real_money_server, live):
    created = live.post("/transactions", payment_body()).json()
    browser = requests.Session()
    offered = browser.get(created["checkoutUrl"], timeout=10)
    token = offered.text.split('name="csrf_token" value="')[1].split('"')[0]
    browser.post(created["checkoutUrl"], data={"decision": "approve", "csrf_token": token}, timeout=10)
    real_page = f"{real_money_server.url}/checkout/{created['transactionId']}"

    page = browser.get(real_page, timeout=10)
    assert page.status_code == 200
    assert "This payment is Captured." in page.text and "<form" not in page.text
    answer = browser.post(real_page, data={"decision": "decline", "csrf_token": token},
                          allow_redirects=False, timeout=10)
    assert answer.status_code == 200
    assert "Payment Captured" in answer.text
    assert live.status(created["transactionId"])["Status"] == "Captured"
