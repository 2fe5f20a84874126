"""The refund service run once per idempotency key (app.payments.idempotency over the fake store)."""
from __future__ import annotations

from decimal import Decimal

import pytest

from app.payments import idempotency as once
from app.payments import refunds, settlement
from app.payments.idempotency import Answer
from app.payments.model import RefundRejected, Transaction
from app.payments.schemas import RefundRequest

from .fakes import CALLER, KeyRecordsOnConnection, transaction

RECORDS = KeyRecordsOnConnection()


def kept_by_number(outcome: Transaction | Exception) -> Answer | None:
    """Keeps a refund made (as the dashboard does); a refusal or error frees the key."""
    return Answer(200, outcome.tx_no) if isinstance(outcome, Transaction) else None


def refund_once(deps, original, amount, key="key-1", **timing):
    request = RefundRequest(original.tx_no, Decimal(amount))
    fingerprint = once.request_hash("POST", "refund", {"txNo": original.tx_no, "amount": amount})
    return once.run_once(deps, CALLER, key, fingerprint,
                         lambda on_created: refunds.refund(deps, CALLER, request, on_created),
                         kept_by_number, records=RECORDS, **timing)


def key_record(store, key="key-1"):
    return store.committed.key_records.find(None, CALLER.merchant_id, CALLER.mode.value, key)


@pytest.fixture
def payment(store):
    return store.seed(transaction(amount="100.00"))


def test_a_refund_sent_twice_under_one_key_is_made_once(deps, store, provider, payment):
    first = refund_once(deps, payment, "40")
    assert refund_once(deps, payment, "40") == Answer(200, first.tx_no)
    assert provider.calls == []  # the requests leave the provider to the worker
    assert settlement.run_due_provider_checks(deps) == 1
    assert [r.tx_no for r in store.refunds_of(payment)] == provider.asked() == [first.tx_no]
    assert key_record(store).transaction_id == first.id


def test_a_refund_whose_run_died_after_its_commit_is_answered_from_it_not_made_again(
        deps, store, provider, clock, payment, monkeypatch):
    def killed(*args):
        raise RuntimeError("killed just after the commit")

    # What follows the Pending refund's commit; the provider is not asked there any more.
    monkeypatch.setattr(refunds, "settle_in_process", killed)
    with pytest.raises(RuntimeError):
        refund_once(deps, payment, "40")
    monkeypatch.undo()
    [made] = store.refunds_of(payment)
    assert (key_record(store).state, key_record(store).transaction_id) == ("running", made.id)

    clock.advance(seconds=once.ABANDONED_AFTER.total_seconds() + 1)
    assert refund_once(deps, payment, "40").tx_no == made.tx_no
    assert provider.calls == []
    assert settlement.run_due_provider_checks(deps) == 1
    assert len(store.refunds_of(payment)) == len(provider.calls) == 1
    assert key_record(store).state == "done"


def test_a_rejected_refund_under_a_key_links_nothing_and_frees_the_key(deps, store, payment):
    with pytest.raises(RefundRejected):
        refund_once(deps, payment, "150")
    assert key_record(store) is None
    assert store.refunds_of(payment) == []
    assert refund_once(deps, payment, "100").amount == Decimal("100.00")
