"""A payout batch through Paystack: the worker opens its payouts with one POST /transfer/bulk,
each transfer under its own reference, and records each answer as a single transfer's."""
from __future__ import annotations

import uuid

from sqlalchemy import select

from app.payments import batches
from app.providers.calls import CallSettings, ProviderCalls
from app.store.tables import transactions
from tests.api.test_create_and_status import nuban
from tests.providers.fake_provider import Answer

from . import bodies
from .conftest import fetch_bank_lists, on_request, payment_request, stored

ACCOUNTS = [nuban("058", f"01234567{n}") for n in range(3)]


def payout_row(reference: str, account: str, amount: int) -> dict:
    return {"paymentMethod": "paystack-bank-payout", "amount": amount, "currency": "NGN", "bank": "058",
            "holder": "Ada Obi", "accountNumber": account, "reference": reference, "email": "ada@example.com",
            "statementDescriptor": "SALARIES NOV"}


def bulk_answer(transfers: list[dict]) -> dict:
    """POST /transfer/bulk as Paystack answers it: each transfer it queued."""
    return {"status": True, "message": f"{len(transfers)} transfers queued.", "data": [
        {"reference": t["reference"], "recipient": t["recipient"], "amount": t["amount"],
         "transfer_code": f"TRF_{t['reference'][-10:]}", "currency": "NGN", "status": "received"}
        for t in transfers]}


def test_a_batchs_payouts_go_to_paystack_in_one_bulk_request(
        server, live, merchant, deps, paystack_account, paystack_fake, receiver):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    paystack_fake.on("POST", "/transferrecipient", bodies.recipient_answer("Ada Obi", ACCOUNTS[0], "058"))
    prefix = uuid.uuid4().hex[:8]
    created = live.post("/payouts/batches", {"rows": [
        payout_row(f"{prefix}-{n}", account, 1000 * (n + 1)) for n, account in enumerate(ACCOUNTS)]})
    assert created.status_code == 201, created.text
    assert created.json()["state"] == "running"
    assert batches.run_due_batches(deps) == 3
    rows = live.get(f"/payouts/batches/{created.json()['id']}").json()["rows"]
    tx_nos = [row["txNo"] for row in rows]
    # A single payout made meanwhile goes on its own, as any payout does.
    single = live.post("/transactions", payment_request(
        "paystack-bank-payout", "NGN", 500, receiver.url, transactionAction="PAYMENT",
        payment={"paymentMethod": "paystack-bank-payout", "bank": "058", "holder": "Ada Obi",
                 "accountNumber": ACCOUNTS[0]})).json()["transactionId"]
    paystack_fake.on("POST", "/transfer", {"status": True, "message": "Transfer has been queued",
                                           "data": bodies.transfer_object(single, 50000, "pending")})

    def answer_bulk(seen):
        paystack_fake.on("POST", "/transfer/bulk", bulk_answer(seen.json["transfers"]))

    on_request(paystack_fake, "POST", "/transfer/bulk", answer_bulk)
    with ProviderCalls(deps, CallSettings(poll_interval=30.0), merchant_id=merchant.merchant_id) as calls:
        assert calls.run_until_idle() == 4

    [bulk] = paystack_fake.requests_to("POST", "/transfer/bulk")
    assert {k: v for k, v in bulk.json.items() if k != "transfers"} == {"currency": "NGN", "source": "balance"}
    # In the order the worker claimed them; each row's own amount, recipient and reference.
    assert sorted(bulk.json["transfers"], key=lambda t: t["amount"]) == [
        {"amount": 1000 * (n + 1) * 100, "recipient": bodies.RECIPIENT_CODE, "reference": tx_no.lower(),
         "reason": "SALARIES NOV"} for n, tx_no in enumerate(tx_nos)]
    [one] = paystack_fake.requests_to("POST", "/transfer")
    assert one.json["reference"] == single.lower()
    assert len(paystack_fake.requests_to("POST", "/transferrecipient")) == 4  # 3 accounts, then the single's
    for tx_no in tx_nos:
        status = live.status(tx_no)
        assert {k: status[k] for k in ("Status", "ProviderStatus", "ProviderMessage", "ProviderTransactionId")} == {
            "Status": "Pending", "ProviderStatus": "received", "ProviderMessage": "3 transfers queued.",
            "ProviderTransactionId": f"TRF_{tx_no.lower()[-10:]}"}
        assert stored(deps, tx_no)["provider_check_at"] is not None  # asked again later, as any transfer
    assert live.status(single)["ProviderStatus"] == "pending"


def test_a_refused_bulk_is_sent_again_one_transfer_at_a_time(
        server, live, merchant, deps, paystack_account, paystack_fake, receiver):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    paystack_fake.on("POST", "/transferrecipient", bodies.recipient_answer("Ada Obi", ACCOUNTS[0], "058"))
    prefix = uuid.uuid4().hex[:8]
    created = live.post("/payouts/batches", {"rows": [
        payout_row(f"{prefix}-{n}", account, 1000) for n, account in enumerate(ACCOUNTS[:2])]})
    assert batches.run_due_batches(deps) == 2
    tx_nos = [row["txNo"] for row in live.get(f"/payouts/batches/{created.json()['id']}").json()["rows"]]
    # The first transfer reached Paystack before (its answer lost): the bulk is refused for it.
    paystack_fake.on("POST", "/transfer/bulk", Answer(400, {
        "status": False, "message": "Duplicate Transfer Reference", "type": "validation_error",
        "code": "duplicate_reference"}))

    def answer_single(seen):
        if seen.json["reference"] == tx_nos[0].lower():
            paystack_fake.on("POST", "/transfer", Answer(400, {
                "status": False, "message": "Duplicate Transfer Reference", "type": "validation_error",
                "code": "duplicate_reference"}))
        else:
            paystack_fake.on("POST", "/transfer", {"status": True, "message": "Transfer has been queued",
                                                   "data": bodies.transfer_object(tx_nos[1], 100000, "pending")})

    on_request(paystack_fake, "POST", "/transfer", answer_single)
    paystack_fake.on("GET", f"/transfer/verify/{tx_nos[0].lower()}", {
        "status": True, "message": "Transfer retrieved", "data": bodies.transfer_object(tx_nos[0], 100000, "success")})
    with ProviderCalls(deps, CallSettings(poll_interval=30.0), merchant_id=merchant.merchant_id) as calls:
        assert calls.run_until_idle() == 2

    assert len(paystack_fake.requests_to("POST", "/transfer/bulk")) == 1
    assert sorted(seen.json["reference"] for seen in paystack_fake.requests_to("POST", "/transfer")) == sorted(
        t.lower() for t in tx_nos)
    assert (live.status(tx_nos[0])["Status"], live.status(tx_nos[1])["Status"]) == ("Captured", "Pending")
    with deps.uow(write=False) as uow:
        made = uow.conn.execute(select(transactions.c.tx_no).where(
            transactions.c.reference.like(f"{prefix}-%"))).scalars().all()
    assert sorted(made) == sorted(tx_nos)
