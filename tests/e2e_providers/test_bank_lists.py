"""Paystack bank lists are fetched by the workers and stored; requests read only the stored copy
(the bank list endpoint, a payout's bank check), never Paystack. Both databases."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, select, update

from app.payments.accounts import _nuban_check_digit
from app.payments.bank_lists import REFRESH_AFTER, ListKey
from app.payments.provider import Bank
from app.providers.bank_refresh import bank_list_pass
from app.store import bank_lists as store
from app.store.tables import bank_lists, transactions
from app.util import utcnow
from tests.providers.fake_provider import Answer

from . import bodies
from .conftest import fetch_bank_lists, later, payment_request

NGN = {"paymentMethod": "paystack-bank-payout", "currency": "NGN"}
LISTED = [{"code": "044", "name": "Access Bank"}, {"code": "011", "name": "First Bank of Nigeria"},
          {"code": "058", "name": "Guaranty Trust Bank"}]
FETCHING = "The bank list is being fetched from the provider; try again in a moment."
GTB_NUBAN = "012345678" + str(_nuban_check_digit("058", "012345678"))


def stored_row(deps, account, currency="NGN", country="NG") -> dict | None:
    with deps.uow(write=False) as uow:
        row = uow.conn.execute(select(bank_lists).where(
            bank_lists.c.provider_account_id == account.id, bank_lists.c.currency == currency,
            bank_lists.c.country == country)).mappings().first()
    return dict(row) if row else None


def due_keys(deps, at=None) -> set[ListKey]:
    with deps.uow(write=False) as uow:
        return {due.key for due in store.due_lists(uow.conn, at or utcnow(), 100)}


def forget_lists(deps, account) -> None:
    """As for an account connected before bank lists were stored: none asked for yet."""
    with deps.uow() as uow:
        uow.conn.execute(delete(bank_lists).where(bank_lists.c.provider_account_id == account.id))
        uow.commit()


def payout_request(bank: str, receiver_url: str = "https://merchant.example/hooks") -> dict:
    return payment_request("paystack-bank-payout", "NGN", 25000, receiver_url, transactionAction="PAYMENT",
                           payment={"paymentMethod": "paystack-bank-payout", "bank": bank,
                                    "holder": "Ada Obi", "accountNumber": GTB_NUBAN})


def test_connecting_an_account_makes_its_bank_lists_due(deps, paystack_account, paystack_fake):
    keys = {ListKey(paystack_account.id, currency, country)
            for currency, country in (("GHS", "GH"), ("KES", "KE"), ("NGN", "NG"), ("ZAR", "ZA"))}
    assert due_keys(deps) >= keys
    assert stored_row(deps, paystack_account)["banks"] is None
    assert paystack_fake.seen == []  # connecting asked Paystack nothing


def test_the_worker_fetches_and_stores_a_due_list(live, deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank", bodies.bank_list())

    refresher = bank_list_pass(deps, deps.providers)
    refresher.poke()  # as each worker round does: a pass on the refresher's own thread
    refresher.wait(10)

    row = stored_row(deps, paystack_account)
    assert row["fetched_at"] is not None and row["last_error"] is None and row["failed_fetches"] == 0
    assert row["refresh_due_at"] == row["fetched_at"] + REFRESH_AFTER
    with deps.uow(write=False) as uow:
        assert uow.bank_lists.get(ListKey(paystack_account.id, "NGN", "NG")).banks == [
            Bank(**bank) for bank in LISTED]
    ngn = [seen for seen in paystack_fake.requests_to("GET", "/bank") if seen.query["currency"] == ["NGN"]]
    assert len(ngn) == 1
    assert ngn[0].query == {"country": ["nigeria"], "currency": ["NGN"], "perPage": ["100"],
                            "use_cursor": ["true"]}
    assert ListKey(paystack_account.id, "NGN", "NG") not in due_keys(deps)


def test_the_endpoint_serves_the_stored_copy_with_the_provider_down(live, deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    paystack_fake.on("GET", "/bank", Answer(503, "down"))
    asked_before = len(paystack_fake.seen)

    response = live.post("/transactions/banks", NGN)

    assert response.status_code == 200, response.text
    assert response.json() == LISTED
    assert response.headers["Cache-Control"] == "private, max-age=3600"
    assert len(paystack_fake.seen) == asked_before  # the request asked Paystack nothing


def test_no_copy_yet_answers_503_and_makes_the_list_due(live, deps, paystack_account, paystack_fake):
    forget_lists(deps, paystack_account)

    response = live.post("/transactions/banks", NGN)

    assert response.status_code == 503
    assert response.json() == {"error": "Service Unavailable", "message": FETCHING}
    assert response.headers["Retry-After"] == "5"
    assert paystack_fake.seen == []
    assert ListKey(paystack_account.id, "NGN", "NG") in due_keys(deps)
    # Once a worker has fetched it, the same request answers the list.
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    assert fetch_bank_lists(deps) == 1
    assert live.post("/transactions/banks", NGN).json() == LISTED


def test_a_stale_copy_is_served_and_a_worker_refreshes_it(live, deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    paystack_fake.on("GET", "/bank", {**bodies.bank_list(), "data": [bodies.bank_row("058", "GTBank Plc")]})
    asked_before = len(paystack_fake.requests_to("GET", "/bank"))

    fetched = stored_row(deps, paystack_account)["fetched_at"]
    with deps.uow() as uow:  # as the copy stands two hours on: fetched 2 h ago
        uow.conn.execute(update(bank_lists).where(bank_lists.c.provider_account_id == paystack_account.id)
                         .values(fetched_at=fetched - timedelta(hours=2),
                                 refresh_due_at=fetched - timedelta(hours=1)))
        uow.commit()
    response = live.post("/transactions/banks", NGN)

    assert response.status_code == 200 and response.json() == LISTED  # stale, still served
    assert len(paystack_fake.requests_to("GET", "/bank")) == asked_before
    assert ListKey(paystack_account.id, "NGN", "NG") in due_keys(deps)  # and due for a worker
    fetch_bank_lists(deps)
    assert live.post("/transactions/banks", NGN).json() == [{"code": "058", "name": "GTBank Plc"}]


def test_a_failed_refresh_keeps_the_old_copy_and_records_the_error(live, deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    paystack_fake.on("GET", "/bank", Answer(503, "down"))
    an_hour_on = later(deps, 3601)

    assert fetch_bank_lists(an_hour_on) == 4  # every currency's list is due again

    row = stored_row(deps, paystack_account)
    assert row["last_error"] == "Paystack answered HTTP 503: Service Unavailable"
    assert row["failed_fetches"] == 1
    assert row["refresh_due_at"] > utcnow() + timedelta(seconds=3600 + 25)  # backoff: 30 s
    assert live.post("/transactions/banks", NGN).json() == LISTED
    # A second failure waits twice as long; a success forgets them.
    fetch_bank_lists(later(deps, 3601 + 31))
    assert stored_row(deps, paystack_account)["failed_fetches"] == 2
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(later(deps, 3601 + 31 + 61))
    assert (stored_row(deps, paystack_account)["failed_fetches"], stored_row(deps, paystack_account)["last_error"]) == (0, None)


def test_a_payout_to_a_bank_not_in_the_stored_list_is_refused(live, deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    asked_before = len(paystack_fake.seen)

    response = live.post("/transactions", payout_request("999"))

    assert response.status_code == 400
    assert response.json() == {"errors": {
        "Payment.Bank": ["Bank 999 is not in the bank list of payment method paystack-bank-payout"],
        "Payment.AccountNumber": ["Account number is not a valid NUBAN for bank 999"]}}
    assert len(paystack_fake.seen) == asked_before


def test_a_payout_with_no_stored_list_is_refused_and_nothing_is_written(live, deps, paystack_account,
                                                                        paystack_fake):
    forget_lists(deps, paystack_account)
    request = payout_request("058")

    response = live.post("/transactions", request, headers={"Idempotency-Key": request["reference"]})

    assert response.status_code == 503
    assert response.json() == {"error": FETCHING}
    assert response.headers["Retry-After"] == "5"
    assert paystack_fake.seen == []
    with deps.uow(write=False) as uow:
        assert uow.conn.execute(select(func.count()).select_from(transactions)
                                .where(transactions.c.reference == request["reference"])).scalar_one() == 0
    assert ListKey(paystack_account.id, "NGN", "NG") in due_keys(deps)
    # The same key once the list is stored: the retry runs anew (a 503 is not kept) and creates it.
    paystack_fake.on("GET", "/bank", bodies.bank_list())
    fetch_bank_lists(deps)
    again = live.post("/transactions", request, headers={"Idempotency-Key": request["reference"]})
    assert again.status_code == 200, again.text
    assert [seen.path for seen in paystack_fake.seen] == ["/bank"]  # the worker's fetch alone
