"""Secrets stay secret: through a whole Paystack flow (successes, 4xx, 5xx, timeouts, refused webhooks,
payouts) logged at DEBUG, no log line holds the secret key (Paystack's webhook secret too), Stripe's
webhook secret or a full payout account number; the provider_accounts row holds no secret in clear."""
from __future__ import annotations

import json
import logging

import requests
from sqlalchemy import select

from app.payments import settlement
from app.payments.accounts import _nuban_check_digit
from app.payments.model import Mode
from app.store.encryption import SecretBox
from app.store.tables import audit_log
from tests.providers.fake_provider import Answer

from . import bodies
from .conftest import (
    ENCRYPTION_KEY,
    PAYSTACK_SECRET,
    READ_TIMEOUT,
    STRIPE_SECRET,
    STRIPE_WEBHOOK_SECRET,
    account_row,
    connect,
    fetch_bank_lists,
    later,
    on_request,
    payment_request,
    post_webhook,
)

ACCOUNT = "012345678" + str(_nuban_check_digit("058", "012345678"))
SECOND_ACCOUNT = "987654321" + str(_nuban_check_digit("058", "987654321"))


def run_paystack_flow(live, deps, paystack_account, paystack_fake, receiver, deliver) -> None:
    """Every kind of call and answer Paystack gives, through Paydesk's API, webhooks and worker."""
    fake = paystack_fake
    init = ("POST", "/transaction/initialize")
    fake.on(*init, {})
    unhook = on_request(fake, *init, lambda seen: fake.on(*init, bodies.initialize_answer(seen.json["reference"])))

    def by_a_worker(send) -> requests.Response:
        """send() asks Paydesk: it answers without calling Paystack, and a worker's round makes the call."""
        calls_before = len(fake.seen)
        sent = send()
        assert sent.status_code == 200, sent.text
        assert len(fake.seen) == calls_before
        assert settlement.run_due_provider_checks(deps) == 1
        return sent

    def pay(amount=100):
        return by_a_worker(lambda: live.post("/transactions", payment_request(
            "paystack-card", "NGN", amount, receiver.url))).json()["transactionId"]

    # Paid, refunded in part.
    tx_no = pay()
    unhook()
    assert post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.charge_success(tx_no, 10000), PAYSTACK_SECRET)).status_code == 200
    fake.on("GET", "/refund", bodies.refund_list())
    on_request(fake, "POST", "/refund", lambda seen: fake.on("POST", "/refund", {
        "status": True, "message": "Refund has been queued for processing",
        "data": bodies.paystack_refund(tx_no, seen.json["merchant_note"][15:], 4000, "pending")}))
    refund = by_a_worker(lambda: live.post("/transactions/refund", {"txNo": tx_no, "amount": 40}))
    assert (refund.status_code, refund.json()["status"]) == (200, "Pending")
    # Refused webhooks: a wrong key and a tampered body.
    assert post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.charge_success(tx_no, 10000), "sk_live_wrong")).status_code == 400
    # 4xx, 5xx and a timeout on initialize.
    fake.on(*init, Answer(401, {"status": False, "message": f"Invalid key {PAYSTACK_SECRET[:12]}"}))
    verify = on_request(fake, *init, lambda seen: fake.on(
        "GET", f"/transaction/verify/{seen.json['reference']}",
        Answer(401, {"status": False, "message": "Invalid key"})))
    assert live.status(pay())["Status"] == "Failed"
    verify()
    fake.on(*init, Answer(500, {"status": False, "message": "An error occurred"}))
    assert live.status(pay())["Status"] == "Pending"
    fake.on(*init, Answer(body={}, delay=READ_TIMEOUT + 0.5))
    assert live.status(pay())["Status"] == "Pending"
    # Payouts: the bank list, an account number Paystack echoes in a refusal, a 5xx, a timeout, OTP.
    fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)  # a worker stores the lists the account's connection made due
    assert live.post("/transactions/banks", {"paymentMethod": "paystack-bank-payout",
                                            "currency": "NGN"}).status_code == 200

    def payout(account):
        return by_a_worker(lambda: live.post("/transactions", payment_request(
            "paystack-bank-payout", "NGN", 250, receiver.url, transactionAction="PAYMENT",
            payment={"paymentMethod": "paystack-bank-payout", "bank": "058", "holder": "Ada Obi",
                     "accountNumber": account}))).json()["transactionId"]

    fake.on("POST", "/transferrecipient", Answer(400, {
        "status": False, "message": f"Account number {ACCOUNT} could not be resolved for bank 058",
        "type": "validation_error", "code": "invalid_bank_account"}))
    assert live.status(payout(ACCOUNT))["Status"] == "Failed"
    fake.on("POST", "/transferrecipient", Answer(500, {"status": False, "message": f"Account {ACCOUNT}: error"}))
    assert live.status(payout(ACCOUNT))["Status"] == "Pending"
    fake.on("POST", "/transferrecipient", Answer(body={}, delay=READ_TIMEOUT + 0.5))
    assert live.status(payout(SECOND_ACCOUNT))["Status"] == "Pending"
    fake.on("POST", "/transferrecipient", bodies.recipient_answer("Ada Obi", ACCOUNT, "058"))
    on_request(fake, "POST", "/transfer", lambda seen: fake.on("POST", "/transfer", {
        "status": True, "message": "Transfer requires OTP to continue",
        "data": bodies.transfer_object(seen.json["reference"].upper(), 25000, "otp")}))
    payout_tx_no = payout(ACCOUNT)
    assert post_webhook(paystack_account, *bodies.paystack_signed(
        bodies.transfer_event("transfer.success", payout_tx_no, 25000, "success"),
        PAYSTACK_SECRET)).status_code == 200
    assert live.status(payout_tx_no)["Status"] == "Captured"
    # The worker asks again (Paystack refuses everything now) and the merchant's webhooks go out.
    fake.routes.clear()
    assert settlement.run_due_provider_checks(later(deps, 31)) == 5  # 2 payments, 2 payouts, the refund
    assert deliver() == 4  # payment captured and failed, payout failed and captured


def sensitive(merchant) -> dict[str, str]:
    return {"Paystack secret key (its webhook secret)": PAYSTACK_SECRET, "account number": ACCOUNT,
            "second account number": SECOND_ACCOUNT,
            "merchant live webhook secret": merchant.live_webhook_secret}


def leaks(caplog, merchant) -> list[tuple[str, str]]:
    """(what, logger) for every log record that holds a sensitive text."""
    found = []
    for record in caplog.records:
        line = record.getMessage() + (record.exc_text or "")
        found += [(what, record.name) for what, text in sensitive(merchant).items() if text in line]
    return sorted(set(found))


def test_nothing_secret_is_logged_at_debug_through_a_whole_paystack_flow(
        live, merchant, deps, paystack_account, paystack_fake, receiver, deliver, caplog):
    caplog.set_level(logging.DEBUG)

    run_paystack_flow(live, deps, paystack_account, paystack_fake, receiver, deliver)

    # The flow did log, at every level, from every part (so the check below had lines to check).
    assert {"app.providers.paystack", "app.providers.inbound", "urllib3.connectionpool", "werkzeug"} <= {
        r.name for r in caplog.records}
    messages = caplog.text
    assert "Paystack POST /transaction/initialize: no answer in time (ReadTimeout)" in messages
    assert "Paystack POST /transaction/initialize: HTTP 500 An error occurred" in messages
    assert "Paystack POST /transaction/initialize refused: HTTP 401 Invalid key" in messages
    assert "Account number ****" in messages  # Paystack's echo of the number, cut to its last 4
    assert leaks(caplog, merchant) == []


def test_the_account_row_and_its_audit_hold_no_secret_in_clear(app, merchant, deps, stripe_fake):
    paystack = connect(app, merchant, Mode.LIVE, "paystack", "https://api.paystack.example")
    stripe = connect(app, merchant, Mode.SANDBOX, "stripe", stripe_fake.url)
    box = SecretBox(ENCRYPTION_KEY)

    for account, secrets in ((paystack, [PAYSTACK_SECRET]), (stripe, [STRIPE_SECRET, STRIPE_WEBHOOK_SECRET])):
        row = account_row(deps, account.id)
        text = json.dumps({k: str(v) for k, v in row.items()})
        for secret in secrets:
            assert secret not in text
            assert secret[8:-4] not in text  # not even the middle of it
        assert box.open(row["secret_key"]) == secrets[0]  # sealed, not dropped
        assert row["key_hint"] == f"{secrets[0][:8]}…{secrets[0][-4:]}"
    assert box.open(account_row(deps, stripe.id)["webhook_secret"]) == STRIPE_WEBHOOK_SECRET
    assert account_row(deps, paystack.id)["webhook_secret"] is None
    with deps.uow(write=False) as uow:
        audits = uow.conn.execute(select(audit_log.c.action, audit_log.c.detail)
                                  .where(audit_log.c.merchant_id == merchant.merchant_id)).all()
    connects = [a for a in audits if a.action == "provider.connect"]
    assert len(connects) == 2
    for audit in connects:
        assert not any(s in audit.detail for s in (PAYSTACK_SECRET, STRIPE_SECRET, STRIPE_WEBHOOK_SECRET))
    assert {json.loads(a.detail)["keyHint"] for a in connects} == {
        f"{PAYSTACK_SECRET[:8]}…{PAYSTACK_SECRET[-4:]}", f"{STRIPE_SECRET[:8]}…{STRIPE_SECRET[-4:]}"}
