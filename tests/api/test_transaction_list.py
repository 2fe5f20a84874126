"""GET /api/v1/transactions: filters, newest-first keyset pages, exact errors, scoping. Both databases."""
from __future__ import annotations

import uuid

import pytest

from tests.conftest import Api, payment_body

AUTH_ERROR = {"error": "Authentication Error", "message": "Invalid client credentials"}


def create(api: Api, **overrides) -> str:
    created = api.post("/transactions", payment_body(**overrides))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


def listed(api: Api, query: str) -> list[str]:
    answer = api.get(f"/transactions?{query}")
    assert answer.status_code == 200, answer.text
    return [row["TransactionId"] for row in answer.json()["transactions"]]


def every_page(api: Api, query: str) -> list[str]:
    """Every TransactionId the query lists, following nextCursor."""
    found, cursor = [], None
    while True:
        answer = api.get(f"/transactions?{query}" + (f"&cursor={cursor}" if cursor else "")).json()
        found += [row["TransactionId"] for row in answer["transactions"]]
        cursor = answer["nextCursor"]
        assert answer["hasMore"] is (cursor is not None)
        if cursor is None:
            return found


@pytest.fixture
def tag() -> str:
    """A reference prefix of this test's own transactions."""
    return f"list-{uuid.uuid4().hex[:8]}"


def test_items_are_the_status_responses_newest_first(sandbox):
    first, second = create(sandbox), create(sandbox)

    answer = sandbox.get("/transactions?limit=2")

    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"transactions", "hasMore", "nextCursor"}
    assert [row["TransactionId"] for row in body["transactions"]] == [second, first]
    assert body["transactions"][0] == sandbox.status(second)
    assert body["hasMore"] is True and body["nextCursor"]


def test_status_filter_takes_several_words_comma_separated_or_repeated(sandbox, captured_payment):
    captured = captured_payment(amount=12)
    pending = create(sandbox, amount=13)

    both = listed(sandbox, "status=Captured,Pending&limit=100")
    repeated = listed(sandbox, "status=Captured&status=Pending&limit=100")

    assert captured in both and pending in both and both == repeated
    assert captured not in listed(sandbox, "status=Pending&limit=100")
    assert all(sandbox.status(tx)["Status"] == "Captured" for tx in listed(sandbox, "status=Captured"))


def test_kind_currency_and_method_filters(sandbox, captured_payment):
    usd = captured_payment(amount=15, currency="USD")
    refund = sandbox.post("/transactions/refund", {"txNo": usd, "amount": 5, "reason": "list"}).json()

    assert listed(sandbox, "kind=Refund&limit=100") == [refund["refundTxNo"]] + [
        tx for tx in listed(sandbox, "kind=Refund&limit=100")[1:]]
    assert usd not in listed(sandbox, "kind=Refund&limit=100")
    assert usd in listed(sandbox, "currency=USD&kind=Payment&paymentMethod=card&limit=100")
    assert usd not in listed(sandbox, "currency=EUR&limit=100")
    assert listed(sandbox, "paymentMethod=no-such-method") == []


def test_amount_range_is_exact_and_inclusive_in_its_currency(sandbox, tag):
    low, mid, high = (create(sandbox, amount=amount, reference=f"{tag}-{amount}")
                      for amount in (10.00, 10.01, 10.02))  # JSON text 10.0, 10.01, 10.02

    assert listed(sandbox, "currency=EUR&amountMin=10.01&amountMax=10.02&limit=100")[:2] == [high, mid]
    found = listed(sandbox, "currency=EUR&amountMin=10.01&amountMax=10.01&limit=100")
    assert mid in found and low not in found and high not in found


def test_reference_and_customer_email_are_matched_whole(sandbox, tag):
    tx = create(sandbox, reference=f"{tag}-a",
                billing={"firstName": "Ada", "lastName": "L", "email": f"{tag}@Example.com",
                         "customerReference": "cust-1"})

    assert listed(sandbox, f"reference={tag}-a") == [tx]
    assert listed(sandbox, f"reference={tag}") == []
    assert listed(sandbox, f"customerEmail={tag}@example.COM") == [tx]


def test_a_reference_lists_its_payment_and_the_refunds_that_repeat_it(sandbox, captured_payment):
    tx = captured_payment(amount=30)
    reference = sandbox.status(tx)["Reference"]
    refund = sandbox.post("/transactions/refund", {"txNo": tx, "amount": 5}).json()["refundTxNo"]

    assert listed(sandbox, f"reference={reference}") == [refund, tx]
    assert listed(sandbox, f"reference={reference}&kind=Refund") == [refund]


def test_created_range_takes_dates_and_utc_times(sandbox):
    tx = create(sandbox)
    created = sandbox.status(tx)["CreatedAt"]

    assert tx in listed(sandbox, f"createdFrom={created}&createdTo=2999-01-01")
    assert tx not in listed(sandbox, f"createdTo={created}")  # createdTo is exclusive
    assert listed(sandbox, "createdTo=2000-01-01") == []


def test_the_cursor_walks_every_row_once_in_both_directions(sandbox, tag):
    made = [create(sandbox, reference=f"{tag}-{n}", amount=21) for n in range(5)]
    query = "currency=EUR&amountMin=21&amountMax=21&limit=2"

    walked = every_page(sandbox, query)

    assert walked[:5] == made[::-1]
    after = listed(sandbox, f"{query}&startingAfter={made[3]}")
    assert after == [made[2], made[1]]
    before = sandbox.get(f"/transactions?{query}&endingBefore={made[1]}").json()
    assert [row["TransactionId"] for row in before["transactions"]] == [made[3], made[2]]
    assert before["hasMore"] is True  # made[4] is newer still
    newest = sandbox.get(f"/transactions?{query}&cursor={before['nextCursor']}").json()
    assert [row["TransactionId"] for row in newest["transactions"]] == [made[4]]
    assert (newest["hasMore"], newest["nextCursor"]) == (False, None)


@pytest.mark.parametrize(("query", "errors"), [
    ("limit=0", {"Limit": ["Limit must be a whole number from 1 to 100"]}),
    ("limit=101", {"Limit": ["Limit must be a whole number from 1 to 100"]}),
    ("status=Paid", {"Status": ["Status must be one or more of Pending, Captured, Failed, Declined, Refunded, "
                                "Authorized, Chargeback, comma-separated"]}),
    ("kind=Payment,Payout", {"Kind": ["Kind must be one of Payment, Payout, Refund"]}),
    ("kind=payment", {"Kind": ["Kind must be one or more of Payment, Payout, Refund, comma-separated"]}),
    ("amountMin=10", {"AmountMin": ["AmountMin needs Currency: amounts are compared in one currency"]}),
    ("currency=EUR&amountMax=1.001", {"AmountMax": ["AmountMax has more decimals than EUR allows"]}),
    ("currency=EUR&amountMax=-1", {"AmountMax": ["AmountMax must be a positive amount such as 10.50"]}),
    ("currency=EUR&amountMax=1e3", {"AmountMax": ["AmountMax must be a positive amount such as 10.50"]}),
    ("currency=eur", {"Currency": ["Currency eur is not an ISO 4217 currency code"]}),
    ("createdFrom=yesterday", {"CreatedFrom": [
        "CreatedFrom must be a date (2026-11-30) or a UTC time (2026-11-30T12:00:00Z)"]}),
    ("createdTo=2026-11-30T12:00:00", {"CreatedTo": [
        "CreatedTo must be a date (2026-11-30) or a UTC time (2026-11-30T12:00:00Z)"]}),
    ("reference=", {"Reference": ["Reference must be 1 to 254 printable characters"]}),
    ("cursor=abc", {"Cursor": ["Cursor is not one this API gave; start again without it"]}),
    ("cursor=abc&startingAfter=X", {"Cursor": ["Give one of cursor, startingAfter and endingBefore, not several"]}),
    ("startingAfter=PAY-NOPE", {"StartingAfter": ["StartingAfter names no transaction of this token: PAY-NOPE"]}),
])
def test_a_filter_that_cannot_be_read_is_a_400_naming_it(sandbox, query, errors):
    answer = sandbox.get(f"/transactions?{query}")

    assert (answer.status_code, answer.json()) == (400, {"errors": errors})


def test_every_unreadable_filter_is_named_at_once(sandbox):
    answer = sandbox.get("/transactions?status=Paid&currency=eur&amountMin=1&createdFrom=x")

    assert answer.status_code == 400
    assert list(answer.json()["errors"]) == ["Status", "Currency", "CreatedFrom"]  # in the documented order


def test_a_token_lists_its_own_merchant_and_mode_only(sandbox, live, server, app):
    from tests.conftest import create_merchant  # noqa: PLC0415

    tx = create(sandbox)
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    stranger = Api(server.url, other.sandbox_token)

    assert tx not in listed(live, "limit=100")
    assert tx not in every_page(stranger, "limit=100")
    refused = stranger.get(f"/transactions?startingAfter={tx}")
    assert (refused.status_code, refused.json()) == (400, {"errors": {"StartingAfter": [
        f"StartingAfter names no transaction of this token: {tx}"]}})


def test_listing_needs_a_token(server):
    answer = Api(server.url, "not-a-token").get("/transactions")

    assert (answer.status_code, answer.json()) == (401, AUTH_ERROR)
