"""The worker's provider calls (app.providers.calls): many in flight, bounded per provider
account, a circuit breaker per account, woken by PostgreSQL's NOTIFY."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.payments import settlement
from app.payments.model import Caller, Mode
from app.providers.calls import CLOSED, OPEN, CallSettings, ProviderCalls
from app.store.provider_calls import CHANNEL, SIMULATOR, due_calls, wake_key
from app.store.tables import provider_accounts, transactions
from app.util import utcnow
from tests.conftest import Api, payment_body
from tests.providers.fake_provider import Answer

from . import bodies
from .conftest import later, payment_request
from .test_paystack_flow import create_payment
from .test_stripe_flow import create_payment as create_stripe_payment


def make_due(deps, tx_nos: list[str], at=None) -> None:
    """The transactions' provider calls due (now, or at `at`)."""
    with deps.uow() as uow:
        uow.conn.execute(update(transactions).where(transactions.c.tx_no.in_(tx_nos))
                         .values(provider_check_at=at or utcnow()))
        uow.commit()


def provider_message(deps, tx_no: str) -> str | None:
    with deps.uow(write=False) as uow:
        return uow.conn.execute(select(transactions.c.provider_message)
                                .where(transactions.c.tx_no == tx_no)).scalar_one()


def calls_state(deps, account_id: int) -> str | None:
    with deps.uow(write=False) as uow:
        return uow.conn.execute(select(provider_accounts.c.calls_state)
                                .where(provider_accounts.c.id == account_id)).scalar_one()


def test_due_calls_name_the_provider_account_of_each_transaction(
        deps, merchant, live, server, paystack_account, paystack_fake, receiver):
    paystack_tx, _ = create_payment(live, server, deps, paystack_fake, receiver)
    sandbox = Api(server.url, merchant.sandbox_token)
    simulator_tx = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    not_due_tx, _ = create_payment(live, server, deps, paystack_fake, receiver)
    make_due(deps, [paystack_tx, simulator_tx])
    make_due(deps, [not_due_tx], at=utcnow() + timedelta(minutes=5))

    with deps.uow(write=False) as uow:
        due = due_calls(uow.conn, utcnow(), 10, merchant_id=merchant.merchant_id)
        ids = dict(uow.conn.execute(select(transactions.c.tx_no, transactions.c.id).where(
            transactions.c.tx_no.in_([paystack_tx, simulator_tx, not_due_tx]))).all())
        others = due_calls(uow.conn, utcnow(), 10, merchant_id=merchant.merchant_id + 10_000)
    assert {(call.tx_id, call.account) for call in due} == {
        (ids[paystack_tx], f"account:{paystack_account.id}"), (ids[simulator_tx], SIMULATOR)}
    assert others == []

    # An account with no call to spare is left out of the query, not skipped after it.
    with deps.uow(write=False) as uow:
        without_paystack = due_calls(uow.conn, utcnow(), 10, merchant_id=merchant.merchant_id,
                                     skip=frozenset({f"account:{paystack_account.id}"}))
        without_simulator = due_calls(uow.conn, utcnow(), 10, merchant_id=merchant.merchant_id,
                                      skip=frozenset({SIMULATOR}))
    assert [call.tx_id for call in without_paystack] == [ids[simulator_tx]]
    assert [call.tx_id for call in without_simulator] == [ids[paystack_tx]]


def test_due_calls_are_claimed_in_one_statement_and_only_once(
        deps, merchant, live, server, paystack_account, paystack_fake, receiver):
    tx_nos = [create_payment(live, server, deps, paystack_fake, receiver)[0] for _ in range(3)]
    not_due, _ = create_payment(live, server, deps, paystack_fake, receiver)
    make_due(deps, tx_nos)
    make_due(deps, [not_due], at=utcnow() + timedelta(minutes=5))
    with deps.uow(write=False) as uow:
        ids = dict(uow.conn.execute(select(transactions.c.tx_no, transactions.c.id).where(
            transactions.c.tx_no.in_([*tx_nos, not_due]))).all())
    now = utcnow()
    first = settlement.claim_provider_calls(deps, [ids[tx_nos[0]], ids[tx_nos[1]], ids[not_due]], now)
    second = settlement.claim_provider_calls(deps, [ids[tx_no] for tx_no in tx_nos], now)
    assert set(first) == {ids[tx_nos[0]], ids[tx_nos[1]]}  # the one not due is not taken
    assert second.keys() == {ids[tx_nos[2]]}  # another worker's claims are left alone
    assert second[ids[tx_nos[2]]].tx_no == tx_nos[2]  # read with the claim
    assert settlement.claim_provider_calls(deps, [], now) == {}


def test_the_breaker_opens_after_failures_in_a_row_then_one_trial_call_closes_it(
        deps, merchant, live, server, paystack_account, paystack_fake, receiver):
    tx_nos = [create_payment(live, server, deps, paystack_fake, receiver)[0] for _ in range(3)]
    verify = "/transaction/verify/{}"
    for tx_no in tx_nos:
        paystack_fake.on("GET", verify.format(tx_no), Answer(503, {"status": False, "message": "down"}))
    make_due(deps, tx_nos)
    settings = CallSettings(threads=4, per_account=1, failures_to_open=2, cool_off=0.3)
    with ProviderCalls(deps, settings, merchant_id=merchant.merchant_id) as calls:
        assert calls.run_until_idle() == 2  # the third is put off, not claimed: the breaker opened
        asked = [s for s in paystack_fake.seen if s.path.startswith("/transaction/verify/")]
        assert len(asked) == 2
        breaker = calls.breaker(f"account:{paystack_account.id}")
        assert breaker.health() == OPEN  # (its state may be half-open already on a loaded machine)
        refused = [provider_message(deps, tx_no) for tx_no in tx_nos]
        assert sum(m.startswith("The provider did not answer 2 calls in a row; Paydesk stopped "
                                "calling it at ") for m in refused) == 1, refused
        assert calls_state(deps, paystack_account.id) == "open"  # for the Providers page

        # Paystack answers again; after the cool-off one trial call is let through, and closes it.
        for tx_no in tx_nos:
            paystack_fake.on("GET", verify.format(tx_no), bodies.verify_answer(tx_no, 1050050, "abandoned"))
        time.sleep(0.35)
        calls.deps = later(deps, 2 * 60 * 60)  # every retry is due
        assert calls.run_until_idle() == 3  # the trial first, alone; then the two others
        assert breaker.state == CLOSED
        assert calls_state(deps, paystack_account.id) == "healthy"
    asked = [s for s in paystack_fake.seen if s.path.startswith("/transaction/verify/")]
    assert len(asked) == 5


def test_a_hanging_account_holds_only_its_own_calls(
        deps, merchant, live, server, paystack_account, paystack_fake, receiver, stripe_account, stripe_fake):
    """Paystack hangs (1.5 s an answer): two of its calls are in flight, the other two wait, and
    Stripe's call is made meanwhile."""
    paystack_txs = [create_payment(live, server, deps, paystack_fake, receiver)[0] for _ in range(4)]
    sandbox = Api(server.url, merchant.sandbox_token)
    stripe_tx, _ = create_stripe_payment(sandbox, deps, stripe_fake, receiver.url)
    for tx_no in paystack_txs:
        paystack_fake.on("GET", f"/transaction/verify/{tx_no}",
                         Answer(200, bodies.verify_answer(tx_no, 1050050, "abandoned"), delay=1.5))
    stripe_fake.on("GET", f"/v1/checkout/sessions/{bodies.SESSION_ID}", bodies.session(stripe_tx, 10050))
    make_due(deps, paystack_txs + [stripe_tx])
    settings = CallSettings(threads=20, per_account=2)
    with ProviderCalls(deps, settings, merchant_id=merchant.merchant_id) as calls:
        started = time.monotonic()
        calls.dispatch()
        assert calls.in_flight[f"account:{paystack_account.id}"] == 2  # two held, two left due
        assert calls.wait(timeout=1.0, until_running=2)  # Stripe's done while Paystack hangs
        assert time.monotonic() - started < 1.5
        assert calls.in_flight[f"account:{stripe_account.id}"] == 0
        calls.run_until_idle()
    assert len([s for s in paystack_fake.seen if s.path.startswith("/transaction/verify/")]) == 4


def test_a_call_that_ends_lets_the_next_call_of_its_account_start_at_once(
        app, deps, merchant, live, server, paystack_account, paystack_fake, receiver):
    """One call at a time to the account, a poll of 30 s: the second call starts when the first
    ends (its end wakes the feeder), not at the next poll or NOTIFY, on both databases."""
    tx_nos = [create_payment(live, server, deps, paystack_fake, receiver)[0] for _ in range(2)]
    for tx_no in tx_nos:
        paystack_fake.on("GET", f"/transaction/verify/{tx_no}",
                         Answer(200, bodies.verify_answer(tx_no, 1050050, "abandoned"), delay=0.3))
    make_due(deps, tx_nos)
    with ProviderCalls(deps, CallSettings(per_account=1, poll_interval=30.0),
                       merchant_id=merchant.merchant_id, engine=app.extensions["paydesk.engine"]) as calls:
        started = time.monotonic()
        calls.start()
        while len([s for s in paystack_fake.seen if s.path.startswith("/transaction/verify/")]) < 2:
            assert time.monotonic() - started < 5, "the second call waited for the poll"
            time.sleep(0.01)
        assert calls.wait(timeout=5)


def test_a_call_committed_due_wakes_a_listening_worker_at_once(
        app, deps, merchant, live, server, paystack_account, paystack_fake, receiver):
    """On PostgreSQL the commit's NOTIFY (migration 0016) wakes the feeder; it does not wait for its
    poll (30 s here). On SQLite the poll is the only way, and the call waits for it."""
    if not server.database_url.startswith("postgresql"):
        pytest.skip("SQLite has no NOTIFY: its workers poll")
    tx_no, _ = create_payment(live, server, deps, paystack_fake, receiver)
    paystack_fake.on("GET", f"/transaction/verify/{tx_no}", bodies.verify_answer(tx_no, 1050050, "abandoned"))
    settings = CallSettings(poll_interval=30.0)
    with ProviderCalls(deps, settings, merchant_id=merchant.merchant_id,
                       engine=app.extensions["paydesk.engine"]) as calls:
        calls.start()
        deadline = time.monotonic() + 10
        while calls.listener is None and time.monotonic() < deadline:  # listening before the commit
            time.sleep(0.01)
        # Opened at Paystack by the helper's worker round, it is not due before this commit.
        assert paystack_fake.requests_to("GET", f"/transaction/verify/{tx_no}") == []
        committed = time.monotonic()
        with deps.uow() as uow:  # as a customer back from Paystack's page does (checkout return)
            uow.transactions.ask_provider_now(uow.transactions.get(Caller(merchant.merchant_id, Mode.LIVE, "tests"), tx_no).id, utcnow())
            uow.commit()
        while not paystack_fake.requests_to("GET", f"/transaction/verify/{tx_no}"):
            assert time.monotonic() - committed < 5, "the worker was not woken by the commit"
            time.sleep(0.01)


def test_a_create_through_the_api_wakes_a_listening_worker_and_names_its_method(
        app, deps, merchant, live, server, paystack_account, paystack_fake, receiver):
    """The create's commit is announced (app.store.provider_calls.Announcer) with its wake key;
    the worker opens the payment at Paystack at once, not at its poll (30 s here)."""
    if not server.database_url.startswith("postgresql"):
        pytest.skip("SQLite has no NOTIFY: its workers poll")
    paystack_fake.on("POST", "/transaction/initialize", bodies.initialize_answer("any"))
    engine = app.extensions["paydesk.engine"]
    heard = engine.raw_connection()
    try:
        heard.driver_connection.autocommit = True
        heard.driver_connection.execute(f"LISTEN {CHANNEL}")
        with ProviderCalls(deps, CallSettings(poll_interval=30.0), merchant_id=merchant.merchant_id,
                           engine=engine) as calls:
            calls.start()
            deadline = time.monotonic() + 10
            while calls.listener is None and time.monotonic() < deadline:
                time.sleep(0.01)
            started = time.monotonic()
            created = live.post("/transactions", payment_request("paystack-card", "NGN", 10500.50, receiver.url))
            assert created.status_code == 200, created.text
            while not paystack_fake.requests_to("POST", "/transaction/initialize"):
                assert time.monotonic() - started < 5, "the worker was not woken by the create"
                time.sleep(0.01)
        payloads = [n.payload for n in heard.driver_connection.notifies(timeout=1, stop_after=1)]
    finally:
        heard.close()
    assert payloads == [wake_key(merchant.merchant_id, "live", "paystack-card")]


def test_a_notice_for_an_account_with_no_room_does_not_wake_the_feeder(deps, merchant):
    calls = ProviderCalls(deps, CallSettings(per_account=2))
    key, account = wake_key(merchant.merchant_id, "live", "paystack-card"), "account:7"
    assert calls.worth_waking_for(key)  # not known yet: looked up by a pass
    calls.account_of[key] = account
    calls.in_flight[account] = 1
    assert calls.worth_waking_for(key)
    calls.in_flight[account] = 2
    assert not calls.worth_waking_for(key)
    calls.breaker(account).opened_at = calls.breaker(account).clock()  # open: no room at all
    calls.in_flight[account] = 0
    assert not calls.worth_waking_for(key)
    calls.close()
