"""The workers' connection tests (app/providers/connection_tests.py) on both databases: claimed by
one worker per request, a lapsed claim taken over, an answer to a superseded request dropped."""
from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

import pytest

from app.payments.model import Caller, Mode
from app.providers import accounts, connection_tests
from app.providers.connection_tests import CLAIM_FOR, run_due_tests
from app.store import provider_accounts as store
from app.util import utcnow
from tests.conftest import connect_paystack
from tests.providers.fake_provider import RunningFakeProvider

BALANCE = {"status": True, "message": "Balances retrieved", "data": []}


@pytest.fixture
def deps(app):
    return app.extensions["paydesk"]


def deps_at(deps, offset: timedelta):
    """The app's services with the clock moved by offset."""
    return replace(deps, clock=lambda: utcnow() + offset)


@pytest.fixture
def account_id(app, merchant):
    """A Paystack account nobody else tests (the worker's pass answers every due test)."""
    return connect_paystack(app, merchant.merchant_id)


def ask(deps, merchant, account_id: int) -> store.DueTest:
    """Test connection as the dashboard asks it; the test as a worker finds it due."""
    assert accounts.request_test(deps.uow, Caller(merchant.merchant_id, Mode.LIVE, "admin@tests.example"),
                                 account_id, deps.clock())
    return next(t for t in due(deps) if t.account_id == account_id)


def due(deps, offset: timedelta = timedelta(0)) -> list[store.DueTest]:
    with deps.uow(write=False) as uow:
        return store.due_tests(uow.conn, deps.clock() + offset, 1000)


def account_of(deps, account_id: int) -> store.ProviderAccount:
    with deps.uow(write=False) as uow:
        return store.account_by_id(uow.conn, account_id)


def claim(deps, test: store.DueTest, offset: timedelta = timedelta(0)) -> bool:
    now = deps.clock() + offset
    with deps.uow() as uow:
        claimed = store.claim_test(uow.conn, test, now, now + CLAIM_FOR)
        uow.commit()
    return claimed


def test_two_workers_never_make_the_same_test_twice(deps, merchant, account_id):
    test = ask(deps, merchant, account_id)
    assert claim(deps, test) is True
    assert claim(deps, test) is False  # the other worker
    assert account_id not in {t.account_id for t in due(deps)}


def test_a_claim_lapses_when_its_worker_died(deps, merchant, account_id):
    test = ask(deps, merchant, account_id)
    assert claim(deps, test)
    assert account_id not in {t.account_id for t in due(deps, CLAIM_FOR - timedelta(seconds=1))}
    assert account_id in {t.account_id for t in due(deps, CLAIM_FOR + timedelta(seconds=1))}
    assert claim(deps, test, CLAIM_FOR + timedelta(seconds=1))


def test_an_answer_to_a_test_asked_again_meanwhile_is_not_stored(deps, merchant, account_id):
    first = ask(deps, merchant, account_id)
    assert claim(deps, first)
    second = ask(deps, merchant, account_id)  # due again at once, though the first is claimed
    with deps.uow() as uow:
        assert not store.save_test_result(uow.conn, first, worked=True, message="old", finished_at=utcnow())
        uow.commit()
    assert account_of(deps, account_id).test_due_at is not None  # the second still waits
    assert claim(deps, first) is False and claim(deps, second) is True
    with deps.uow() as uow:
        assert store.save_test_result(uow.conn, second, worked=False, message="new", finished_at=utcnow())
        uow.commit()
    stored = account_of(deps, account_id)
    assert (stored.test_due_at, stored.test_worked, stored.test_message) == (None, False, "new")


def test_the_worker_asks_the_provider_and_stores_its_answer_in_fixed_words(app, deps, merchant):
    with RunningFakeProvider() as fake:
        fake.on("GET", "/balance", BALANCE)
        caller = Caller(merchant.merchant_id, Mode.LIVE, "admin@tests.example")
        account_id = accounts.connect(
            deps.uow, deps.providers.box, caller, "paystack", secret_key="sk_live_" + "c" * 40,
            webhook_secret=None, base_url=fake.url, paydesk_url=app.config["BASE_URL"],
            now=utcnow()).provider_account_id
        ask(deps, merchant, account_id)
        assert fake.seen == []

        assert run_due_tests(deps, deps.providers) >= 1
        assert run_due_tests(deps, deps.providers) == 0  # answered once

        assert len(fake.requests_to("GET", "/balance")) == 1
    stored = account_of(deps, account_id)
    assert (stored.test_due_at, stored.test_worked, stored.test_message) == (
        None, True, "Paystack answered: Connected to Paystack")
    assert stored.test_finished_at >= stored.test_requested_at


def test_a_disconnected_account_is_not_tested(deps, merchant, account_id):
    ask(deps, merchant, account_id)
    assert accounts.disconnect(deps.uow, Caller(merchant.merchant_id, Mode.LIVE, "admin@tests.example"),
                               account_id, utcnow())
    assert account_id not in {t.account_id for t in due(deps)}


def test_a_failure_in_paydesk_is_stored_in_fixed_words_not_retried(deps, merchant, account_id,
                                                                   monkeypatch, caplog):
    def broken(registry, account):
        raise RuntimeError("a bug")

    monkeypatch.setattr(accounts, "test_connection", broken)
    ask(deps, merchant, account_id)
    with caplog.at_level(logging.ERROR, logger=connection_tests.__name__):
        run_due_tests(deps, deps.providers)
    stored = account_of(deps, account_id)
    assert (stored.test_due_at, stored.test_worked, stored.test_message) == (
        None, False, "Paystack could not be tested: Paydesk failed; its worker log says why")
    assert f"connection test of provider account {account_id} failed" in caplog.text
