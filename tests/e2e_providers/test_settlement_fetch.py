"""The workers fetch providers' settlements (Paystack settlements, Stripe payouts) and store them with
their lines, matched; a re-fetch is idempotent; a failed fetch keeps what is stored. Both databases."""
from __future__ import annotations

from sqlalchemy import func, select

from app.payments.model import Caller
from app.payments.reconcile import LineType, Outcome
from app.providers.settlement_fetch import FETCH_EVERY, fetch_account, fetch_due_settlements, settlement_pass
from app.store import settlements as store
from app.store.tables import settlement_fetches, settlement_lines, settlements
from tests.providers.fake_provider import Answer

from .conftest import later
from .test_paystack_flow import create_payment as create_paystack_payment
from .test_stripe_flow import create_payment as create_stripe_payment

PAYSTACK_SETTLEMENT_ID = 8610870
PAYOUT_ID = "po_1QeXyZ2eZvKYlo2C0pay0001"


def paystack_settlements(status: str = "success", net: int = 1_027_049) -> dict:
    """GET /settlement: one settlement of two charges (kobo)."""
    return {"status": True, "message": "Settlements retrieved", "data": [{
        "id": PAYSTACK_SETTLEMENT_ID, "domain": "live", "status": status, "currency": "NGN",
        "integration": 463433, "total_amount": net, "effective_amount": net, "total_fees": 25_001,
        "total_processed": 1_052_050, "deductions": None, "settlement_date": "2026-11-26T00:00:00.000Z",
        "settled_by": None, "createdAt": "2026-11-26T07:00:00.000Z", "updatedAt": "2026-11-26T07:00:00.000Z"}],
        "meta": {"total": 1, "skipped": 0, "perPage": 50, "page": 1, "pageCount": 1}}


def paystack_settlement_transactions(tx_no: str) -> dict:
    """GET /settlement/{id}/transactions: the payment Paydesk knows and one it does not."""
    return {"status": True, "message": "Transactions retrieved", "data": [
        {"id": 4099260516, "reference": tx_no, "amount": 1_050_050, "fees": 25_001, "currency": "NGN",
         "status": "success", "paid_at": "2026-11-25T10:00:00.000Z"},
        {"id": 4099260999, "reference": "T-not-paydesk", "amount": 2_000, "fees": 0, "currency": "NGN",
         "status": "success", "paid_at": "2026-11-25T11:00:00.000Z"}],
        "meta": {"total": 2, "skipped": 0, "perPage": 50, "page": 1, "pageCount": 1}}


def stored_settlements(deps, account) -> list[tuple]:
    """(provider id, status, gross, fees, net, line count) of the account's settlements."""
    counts = (select(func.count()).select_from(settlement_lines)
              .where(settlement_lines.c.settlement_id == settlements.c.id).scalar_subquery())
    with deps.uow(write=False) as uow:
        rows = uow.conn.execute(select(settlements.c.provider_settlement_id, settlements.c.status,
                                       settlements.c.gross_minor, settlements.c.fees_minor,
                                       settlements.c.net_minor, counts)
                                .where(settlements.c.provider_account_id == account.id)
                                .order_by(settlements.c.id)).all()
    return [tuple(row) for row in rows]


def stored_lines(deps, account) -> list[tuple]:
    """(provider transaction id, type, gross, fee, net, txNo, outcome) of the account's lines."""
    caller = Caller(account.caller.merchant_id, account.caller.mode, "tests")
    with deps.uow(write=False) as uow:
        [summary] = store.list_settlements(uow.conn, caller)
        return [(line.provider_transaction_id, line.type, line.gross_minor, line.fee_minor, line.net_minor,
                 line.tx_no, line.outcome) for line in store.lines_of(uow.conn, summary.id)]


def test_paystack_settlements_are_fetched_stored_and_matched(live, server, deps, paystack_account,
                                                              paystack_fake, receiver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver, amount=10500.50)
    paystack_fake.on("GET", "/settlement", paystack_settlements())
    paystack_fake.on("GET", f"/settlement/{PAYSTACK_SETTLEMENT_ID}/transactions",
                     paystack_settlement_transactions(tx_no))

    assert fetch_account(deps, deps.providers, paystack_account.id) == 1

    assert stored_settlements(deps, paystack_account) == [
        (str(PAYSTACK_SETTLEMENT_ID), "success", 1_052_050, 25_001, 1_027_049, 2)]
    assert stored_lines(deps, paystack_account) == [
        ("4099260516", LineType.PAYMENT, 1_050_050, 25_001, 1_025_049, tx_no, Outcome.MATCHED),
        ("4099260999", LineType.PAYMENT, 2_000, 0, 2_000, None, Outcome.UNKNOWN_TO_PAYDESK)]
    [listed] = paystack_fake.requests_to("GET", "/settlement")
    assert listed.query == {"perPage": ["50"], "page": ["1"]}  # one page: fewer rows than asked for


def test_fetching_an_unchanged_settlement_again_asks_for_no_lines_and_doubles_nothing(
        live, server, deps, paystack_account, paystack_fake, receiver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver, amount=10500.50)
    paystack_fake.on("GET", "/settlement", paystack_settlements())
    lines_path = f"/settlement/{PAYSTACK_SETTLEMENT_ID}/transactions"
    paystack_fake.on("GET", lines_path, paystack_settlement_transactions(tx_no))
    fetch_account(deps, deps.providers, paystack_account.id)
    first = (stored_settlements(deps, paystack_account), stored_lines(deps, paystack_account))

    assert fetch_account(deps, deps.providers, paystack_account.id) == 0
    assert len(paystack_fake.requests_to("GET", lines_path)) == 1
    paystack_fake.on("GET", "/settlement", paystack_settlements(status="success"))
    assert (stored_settlements(deps, paystack_account), stored_lines(deps, paystack_account)) == first


def test_a_settlement_whose_status_changed_is_fetched_again(live, server, deps, paystack_account,
                                                            paystack_fake, receiver):
    tx_no, _request = create_paystack_payment(live, server, deps, paystack_fake, receiver, amount=10500.50)
    paystack_fake.on("GET", "/settlement", paystack_settlements(status="processing"),
                     paystack_settlements(status="success"))
    lines_path = f"/settlement/{PAYSTACK_SETTLEMENT_ID}/transactions"
    paystack_fake.on("GET", lines_path, paystack_settlement_transactions(tx_no))

    fetch_account(deps, deps.providers, paystack_account.id)
    fetch_account(deps, deps.providers, paystack_account.id)

    assert len(paystack_fake.requests_to("GET", lines_path)) == 2
    assert [row[1] for row in stored_settlements(deps, paystack_account)] == ["success"]
    assert len(stored_lines(deps, paystack_account)) == 2


def test_the_worker_fetches_due_accounts_once_and_then_after_an_hour(deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/settlement", {"status": True, "message": "Settlements retrieved", "data": []})

    fetcher = settlement_pass(deps, deps.providers)
    fetcher.poke()  # as each worker round does: a pass on the fetcher's own thread
    fetcher.wait(30)
    fetch_due_settlements(deps, deps.providers, limit=1000)  # not due again yet

    assert len(paystack_fake.requests_to("GET", "/settlement")) == 1
    fetch_due_settlements(later(deps, FETCH_EVERY.total_seconds() + 1), deps.providers, limit=1000)
    assert len(paystack_fake.requests_to("GET", "/settlement")) == 2
    row = fetch_row(deps, paystack_account)
    assert (row["failed_fetches"], row["last_error"]) == (0, None)


def test_a_failed_fetch_keeps_what_is_stored_and_is_retried_later(deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/settlement", Answer(500, {"status": False, "message": "Server error"}))

    fetch_due_settlements(deps, deps.providers, limit=1000)

    row = fetch_row(deps, paystack_account)
    assert row["failed_fetches"] == 1 and "HTTP 500" in row["last_error"]
    fetch_due_settlements(deps, deps.providers, limit=1000)  # not before its retry time
    assert len(paystack_fake.requests_to("GET", "/settlement")) == 1
    paystack_fake.on("GET", "/settlement", {"status": True, "message": "Settlements retrieved", "data": []})
    fetch_due_settlements(later(deps, 31), deps.providers, limit=1000)
    assert fetch_row(deps, paystack_account)["failed_fetches"] == 0


def fetch_row(deps, account) -> dict:
    with deps.uow(write=False) as uow:
        return dict(uow.conn.execute(select(settlement_fetches).where(
            settlement_fetches.c.provider_account_id == account.id)).mappings().one())


# Stripe: payouts and their balance transactions, through the stripe package


def stripe_list(url: str, *rows: dict, has_more: bool = False) -> dict:
    return {"object": "list", "url": url, "has_more": has_more, "data": list(rows)}


def payout(amount: int) -> dict:
    return {"id": PAYOUT_ID, "object": "payout", "amount": amount, "arrival_date": 1795651200,
            "created": 1795564800, "currency": "eur", "status": "paid", "method": "standard",
            "type": "bank_account", "livemode": False}


def balance_transaction(txn_id: str, kind: str, amount: int, fee: int, source: dict | str) -> dict:
    return {"id": txn_id, "object": "balance_transaction", "amount": amount, "fee": fee, "net": amount - fee,
            "currency": "eur", "type": kind, "source": source, "status": "available",
            "created": 1795564800, "available_on": 1795651200}


def test_stripe_payouts_and_their_balance_transactions_are_fetched_and_matched(
        sandbox, deps, stripe_account, stripe_fake, receiver):
    tx_no, _request = create_stripe_payment(sandbox, deps, stripe_fake, receiver.url, amount=100.50)
    charge = {"id": "ch_3QeXyZ2eZvKYlo2C0def5678", "object": "charge", "amount": 10050,
              "payment_intent": "pi_3QeXyZ2eZvKYlo2C0abc1234", "metadata": {"txNo": tx_no}}
    refund = {"id": "re_3QeXyZ2eZvKYlo2C0ref0001", "object": "refund", "amount": 2000,
              "payment_intent": "pi_3QeXyZ2eZvKYlo2C0abc1234", "metadata": {"txNo": "PAY-NOT-KNOWN-R"}}
    stripe_fake.on("GET", "/v1/payouts", stripe_list("/v1/payouts", payout(7_738)))
    stripe_fake.on("GET", "/v1/balance_transactions",
                   stripe_list("/v1/balance_transactions",
                               balance_transaction("txn_1", "charge", 10050, 312, charge), has_more=True),
                   stripe_list("/v1/balance_transactions",
                               balance_transaction("txn_2", "refund", -2000, 0, refund),
                               balance_transaction("txn_3", "payout", -7738, 0, PAYOUT_ID)))

    assert fetch_account(deps, deps.providers, stripe_account.id) == 1

    assert stored_settlements(deps, stripe_account) == [(PAYOUT_ID, "paid", 8050, 312, 7738, 2)]
    assert stored_lines(deps, stripe_account) == [
        ("pi_3QeXyZ2eZvKYlo2C0abc1234", LineType.PAYMENT, 10050, 312, 9738, tx_no, Outcome.MATCHED),
        ("re_3QeXyZ2eZvKYlo2C0ref0001", LineType.REFUND, -2000, 0, -2000, None, Outcome.UNKNOWN_TO_PAYDESK)]
    first, second = stripe_fake.requests_to("GET", "/v1/balance_transactions")
    assert first.query == {"payout": [PAYOUT_ID], "limit": ["100"], "expand[0]": ["data.source"],
                           "expand[1]": ["data.source.payment_intent"]}
    assert second.query["starting_after"] == ["txn_1"]
    [listed] = stripe_fake.requests_to("GET", "/v1/payouts")
    assert listed.query == {"limit": ["100"]}
    assert listed.header("Authorization") == f"Bearer {stripe_account.caller and stripe_secret()}"


def test_a_stripe_charge_is_matched_by_its_payment_intents_txno(sandbox, deps, stripe_account, stripe_fake,
                                                                receiver):
    """Stripe copies no PaymentIntent metadata to its charge: the txNo Paydesk set on the
    PaymentIntent (Checkout's payment_intent_data) comes with the expanded intent."""
    tx_no, _request = create_stripe_payment(sandbox, deps, stripe_fake, receiver.url, amount=100.50)
    charge = {"id": "ch_3QeXyZ2eZvKYlo2C0def5679", "object": "charge", "amount": 10050, "metadata": {},
              "payment_intent": {"id": "pi_3QeXyZ2eZvKYlo2C0abc9999", "object": "payment_intent",
                                 "metadata": {"txNo": tx_no}}}
    stripe_fake.on("GET", "/v1/payouts", stripe_list("/v1/payouts", payout(9_738)))
    stripe_fake.on("GET", "/v1/balance_transactions", stripe_list(
        "/v1/balance_transactions", balance_transaction("txn_9", "charge", 10050, 312, charge)))

    assert fetch_account(deps, deps.providers, stripe_account.id) == 1

    assert stored_lines(deps, stripe_account) == [
        ("pi_3QeXyZ2eZvKYlo2C0abc9999", LineType.PAYMENT, 10050, 312, 9738, tx_no, Outcome.MATCHED)]


def stripe_secret() -> str:
    from .conftest import STRIPE_SECRET

    return STRIPE_SECRET
