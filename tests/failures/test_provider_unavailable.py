"""A provider Paydesk must ask before it can change anything does not answer: 502, nothing changed."""
from __future__ import annotations

import uuid

from sqlalchemy import func, select

from app.payments.provider import ProviderUnavailable
from app.providers.simulator import SimulatorProvider
from app.store.tables import transactions

from .conftest import bearer

PAYOUT = {
    "amount": 5000, "currency": "NGN", "reference": "payout-bank-unknowable",
    "statementDescriptor": "ACME", "callbackUrl": "https://shop.example/hooks",
    "transactionAction": "PAYMENT",
    "billing": {"firstName": "Ada", "lastName": "Obi", "email": "ada@example.com",
                "customerReference": "c-1", "country": "NG"},
    "payment": {"paymentMethod": "ng-bank-payout", "bank": "058", "holder": "Ada Obi",
                "accountNumber": "0123456785"},
}


def provider_down(*_args, **_kwargs):
    raise ProviderUnavailable("Paystack answered HTTP 503: Service Unavailable")


def count(app) -> int:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(func.count()).select_from(transactions)).scalar()


def test_a_payout_whose_bank_cannot_be_checked_is_a_502_and_nothing_is_created(app, client, sandbox_token,
                                                                              monkeypatch, caplog):
    monkeypatch.setattr(SimulatorProvider, "knows_bank", provider_down)
    before = count(app)
    response = client.post("/api/v1/transactions", headers={**bearer(sandbox_token),
                                                             "Idempotency-Key": uuid.uuid4().hex},
                           json=PAYOUT)
    assert (response.status_code, response.get_json()) == (
        502, {"error": "The provider could not be reached; nothing was changed. Try again."})
    assert count(app) == before
    assert any("provider unavailable, answered 502" in r.getMessage() for r in caplog.records)


def test_the_same_key_runs_again_once_the_provider_answers(app, client, sandbox_token, monkeypatch):
    key = uuid.uuid4().hex
    with monkeypatch.context() as down:
        down.setattr(SimulatorProvider, "knows_bank", provider_down)
        first = client.post("/api/v1/transactions", headers={**bearer(sandbox_token), "Idempotency-Key": key},
                            json=PAYOUT)
    assert first.status_code == 502
    again = client.post("/api/v1/transactions", headers={**bearer(sandbox_token), "Idempotency-Key": key},
                        json=PAYOUT)
    assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers
