"""Idempotency-Key: one effect per key, the first response replayed byte for byte."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select

from app.store.tables import transactions
from tests.conftest import payment_body


def refunds_of(app, tx_no: str) -> int:
    originals = transactions.alias()
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(
            select(func.count()).select_from(transactions)
            .join(originals, originals.c.id == transactions.c.original_id)
            .where(originals.c.tx_no == tx_no)).scalar_one()


def test_same_key_and_body_replays_the_first_response(sandbox, captured_payment, app):
    tx_no = captured_payment(100)
    body = {"txNo": tx_no, "amount": 10}
    first = sandbox.post("/transactions/refund", body, headers={"Idempotency-Key": "k-1"})
    second = sandbox.post("/transactions/refund", body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert refunds_of(app, tx_no) == 1


def test_same_key_with_another_body_is_422(sandbox, captured_payment):
    tx_no = captured_payment(100)
    sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10}, headers={"Idempotency-Key": "k-2"})
    other = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 11},
                         headers={"Idempotency-Key": "k-2"})
    assert other.status_code == 422
    assert other.json() == {"error": "Idempotency-Key reused with a different request"}


def test_twenty_parallel_requests_with_one_key_create_one_refund(sandbox, captured_payment, app):
    tx_no = captured_payment(100)
    body = {"txNo": tx_no, "amount": 10}

    def send(_):
        return sandbox.session.post(f"{sandbox.base_url}/api/v1/transactions/refund", json=body,
                                    headers={"Idempotency-Key": "parallel-key"}, timeout=30)

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(send, range(20)))
    assert {a.status_code for a in answers} == {200}
    assert len({a.json()["refundTxNo"] for a in answers}) == 1
    assert len({a.content for a in answers}) == 1
    assert refunds_of(app, tx_no) == 1


def test_create_is_idempotent_too(sandbox):
    body = payment_body()
    first = sandbox.post("/transactions", body, headers={"Idempotency-Key": "create-1"})
    again = sandbox.post("/transactions", body, headers={"Idempotency-Key": "create-1"})
    assert again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"


def test_error_responses_are_replayed_as_well(sandbox):
    body = {"txNo": "SBX-PENDING", "amount": 10}
    first = sandbox.post("/transactions/refund", body, headers={"Idempotency-Key": "err-1"})
    again = sandbox.post("/transactions/refund", body, headers={"Idempotency-Key": "err-1"})
    assert first.status_code == again.status_code == 400
    assert again.content == first.content


def test_keys_are_scoped_per_merchant_and_mode(sandbox, live, captured_payment):
    tx_no = captured_payment(100)
    sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10}, headers={"Idempotency-Key": "scoped"})
    live_answer = live.post("/transactions", payment_body(), headers={"Idempotency-Key": "scoped"})
    assert live_answer.status_code == 200
    assert "Idempotent-Replayed" not in live_answer.headers


def test_key_longer_than_255_characters_is_refused(sandbox):
    response = sandbox.post("/transactions", payment_body(), headers={"Idempotency-Key": "k" * 256})
    assert response.status_code == 400
    assert response.json() == {"errors": {"Idempotency-Key": [
        "Idempotency-Key must be 1 to 255 printable characters"]}}
