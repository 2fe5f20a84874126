"""A token's daily refund limit holds under concurrency: 50 parallel refunds never pass it, and
what the limit counted is what was refunded."""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from sqlalchemy import select

from app.payments.model import Mode
from app.payments.tokens import LimitKind, TokenLimit
from app.store.merchants import hash_token, issue_token
from app.store.tables import api_tokens, token_day_totals
from tests.conftest import Api
from tests.store.test_concurrent_refunds import active_refund_total

LIMIT_SPENT = "This token may refund 25.00 EUR a day; 0.00 EUR is left today"


def limited_token(app, merchant) -> tuple[str, int]:
    with app.extensions["paydesk"].uow() as uow:
        made = issue_token(uow.conn, merchant.merchant_id, Mode.SANDBOX, f"limited {uuid.uuid4().hex[:6]}",
                           limits=[TokenLimit(LimitKind.REFUND, "EUR", Decimal("25.00"))])
        token_id = uow.conn.execute(select(api_tokens.c.id).where(
            api_tokens.c.token_hash == hash_token(made))).scalar_one()
        uow.commit()
    return made, token_id


@pytest.mark.parametrize("round_no", range(3))
def test_fifty_parallel_refunds_never_pass_the_tokens_daily_limit(server, app, merchant, round_no):
    made, token_id = limited_token(app, merchant)
    client = Api(server.url, made)

    def send(_):
        return client.session.post(f"{server.url}/api/v1/transactions/refund",
                                   json={"txNo": "SBX-REFUND-ASYNC", "amount": 1}, timeout=60)

    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(send, range(50)))
    accepted = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code != 200]
    assert len(accepted) == 25
    assert {(a.status_code, a.json()["error"]) for a in refused} == {(403, LIMIT_SPENT)}
    assert active_refund_total(app, merchant, "SBX-REFUND-ASYNC") == Decimal("25.00")
    with app.extensions["paydesk"].uow(write=False) as uow:
        used = uow.conn.execute(select(token_day_totals.c.used_minor)
                                .where(token_day_totals.c.token_id == token_id)).scalar_one()
    assert used == 2500


def test_a_refused_limit_leaves_the_payment_as_it_was(server, app, merchant):
    client = Api(server.url, limited_token(app, merchant)[0])
    over = client.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 30})
    assert (over.status_code, over.json()) == (
        403, {"error": "This token may refund 25.00 EUR a day; 25.00 EUR is left today"})
    assert active_refund_total(app, merchant, "SBX-REFUND-ASYNC") == Decimal("0.00")
    assert client.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 20}).status_code == 200
    rest = client.post("/transactions/refund", {"txNo": "SBX-REFUND-ASYNC", "amount": 10})
    assert rest.json() == {"error": "This token may refund 25.00 EUR a day; 5.00 EUR is left today"}
    # The refund rules still answer first, in the interface's order.
    unknown = client.post("/transactions/refund", {"txNo": "NOPE", "amount": 1})
    assert (unknown.status_code, unknown.json()) == (
        400, {"error": "Original transaction with TxNo NOPE not found"})
