"""A sandbox refund's webhook travels through the outbox and a worker round into the merchant's inbox."""
from __future__ import annotations

import json
import time


from app.payments.model import Caller, Mode
from app.webhooks import log
from app.webhooks.dispatcher import start_delivery
from tests.conftest import payment_body

from .receiver import Receiver


def wait_for_inbox(deps, merchant, count: int, timeout: float = 10.0) -> list[log.InboxMessage]:
    deadline = time.monotonic() + timeout
    while True:
        with deps.uow(write=False) as uow:
            messages = log.list_inbox(uow.conn, Caller(merchant.merchant_id, Mode.SANDBOX, "test"))
        if len(messages) >= count or time.monotonic() > deadline:
            return messages
        time.sleep(0.05)


def test_sandbox_refund_arrives_in_the_inbox_signed_and_verified(app, sandbox, merchant, deps,
                                                                 worker_round):
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 25})
    assert (refund.status_code, refund.json()["status"]) == (200, "Captured")
    refund_tx_no = refund.json()["refundTxNo"]

    worker_round()
    [message] = wait_for_inbox(deps, merchant, 1)

    assert (message.signature_valid, message.mode, message.duplicate) == (True, Mode.SANDBOX, False)
    stored = sandbox.status(refund_tx_no)
    assert json.loads(message.body) == {
        "txNo": refund_tx_no,
        "status": "Captured",
        "amount": 25,
        "currency": "EUR",
        "transactionType": "Refund",
        "originalTxNo": "SBX-CAPTURED",
        "providerTransactionId": refund.json()["providerRefundId"],
        "providerStatus": stored["ProviderStatus"],
        "providerMessage": stored["ProviderMessage"],
        "createdAt": refund.json()["createdAt"],
    }
    [webhook] = sandbox.get(f"/webhooks?txNo={refund_tx_no}").json()["webhooks"]
    assert webhook["status"] == "Delivered"
    assert webhook["webhookId"] == message.webhook_id
    assert webhook["attempts"][0]["httpStatus"] == 204
    assert '"amount": 25.00' in message.body


def test_worker_delivers_to_a_receiver_of_the_merchants_own(app, sandbox, merchant, worker_round):
    with Receiver() as receiver:
        created = sandbox.post("/transactions", payment_body(callbackUrl=receiver.url)).json()
        sandbox.post(f"/sandbox/transactions/{created['transactionId']}/outcome",
                     {"status": "Declined", "declineReason": "Declined By Bank"})
        start_delivery(app)
        [delivery] = receiver.wait_for(1)
    body = json.loads(delivery.body)
    assert (body["txNo"], body["status"], body["transactionType"]) == (
        created["transactionId"], "Declined", "Payment")

