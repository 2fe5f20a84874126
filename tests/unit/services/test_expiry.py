"""The worker's expiry: Pending payments and payouts past the window are Declined, Transaction Expired."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from app.payments import expiry
from app.payments.model import EXPIRED, Caller, Kind, Mode, Status
from app.payments.provider import Outcome, ProviderDisconnected, ProviderUnavailable
from app.payments.sandbox import FIXTURE_CREATED_BY

from .fakes import NG_PAYOUT, NOW, transaction

SANDBOX = Caller(merchant_id=1, mode=Mode.SANDBOX, actor="tester@example.com")


@pytest.fixture
def past_the_window(deps, clock):
    clock.advance(seconds=deps.pending_expiry.total_seconds() + 1)


def test_a_payment_pending_past_the_window_is_declined_as_expired(deps, store, past_the_window):
    stale = store.seed(transaction(status=Status.PENDING))
    assert expiry.expire_pending(deps) == 1
    expired = store.get(stale)
    assert (expired.status, expired.decline_reason, expired.provider_status) == (
        Status.DECLINED, EXPIRED, "EXPIRED")
    assert store.history_of(stale) == [(Status.PENDING, Status.DECLINED, "worker")]
    assert store.webhooks_of(stale) == ["payment.declined"]


def test_a_payment_exactly_at_the_window_is_left_pending(deps, store, clock):
    clock.advance(seconds=deps.pending_expiry.total_seconds())
    recent = store.seed(transaction(status=Status.PENDING, created_at=NOW))
    assert expiry.expire_pending(deps) == 0
    assert store.get(recent).status is Status.PENDING


@pytest.mark.parametrize("left_alone", [
    pytest.param(transaction(status=Status.PENDING, caller=SANDBOX, created_by=FIXTURE_CREATED_BY),
                 id="a sandbox fixture"),
    pytest.param(transaction(kind=Kind.PAYOUT, status=Status.PENDING, method=NG_PAYOUT, currency="NGN",
                             provider_check_at=NOW + timedelta(hours=1)),
                 id="a payout its provider still owes an answer for"),
    pytest.param(transaction(kind=Kind.REFUND, status=Status.PENDING), id="a refund"),
])
def test_some_pending_transactions_never_expire(deps, store, past_the_window, left_alone):
    seeded = store.seed(replace(left_alone))
    assert expiry.expire_pending(deps) == 0
    assert store.get(seeded).status is Status.PENDING


def test_a_payment_the_customer_paid_meanwhile_is_recorded_paid_not_expired(deps, store, provider,
                                                                           past_the_window):
    stale = store.seed(transaction(status=Status.PENDING))
    provider.will_answer("cancel", Outcome(Status.CAPTURED, "ch_1", "success", "Approved"))
    assert expiry.expire_pending(deps) == 1
    assert (store.get(stale).status, provider.asked("cancel")) == (Status.CAPTURED, [stale.tx_no])
    assert store.webhooks_of(stale) == ["payment.captured"]


def test_a_payment_whose_provider_cannot_be_asked_waits_for_the_worker(deps, store, provider,
                                                                      past_the_window, clock):
    stale = store.seed(transaction(status=Status.PENDING))
    provider.will_answer("cancel", ProviderUnavailable("Stripe could not be reached"))
    expiry.expire_pending(deps)
    waiting = store.get(stale)
    assert (waiting.status, waiting.provider_message) == (Status.PENDING, "Stripe could not be reached")
    assert waiting.provider_check_at > clock()
    assert store.webhooks_of(stale) == []


def test_a_payment_of_a_disconnected_account_expires_since_it_can_never_be_asked(deps, store, provider,
                                                                                past_the_window):
    stale = store.seed(transaction(status=Status.PENDING))
    provider.will_answer("cancel", ProviderDisconnected("The provider account is disconnected"))
    assert expiry.expire_pending(deps) == 1
    assert (store.get(stale).status, store.get(stale).decline_reason) == (Status.DECLINED, EXPIRED)
    assert store.webhooks_of(stale) == ["payment.declined"]
