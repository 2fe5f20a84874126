"""The idempotency core: claim, replay, refuse, wait and recover, over in-memory key records."""
from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from app.payments import idempotency as once
from app.payments.idempotency import Answer, KeyRecord, KeyReused, StillRunning, request_hash
from app.payments.model import Caller, Kind, Mode, RefundRejected, Status, Transaction
from app.payments.provider import ProvidersByName
from app.payments.deps import Deps

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CALLER = Caller(merchant_id=1, mode=Mode.SANDBOX, actor="api:test")
FINGERPRINT = request_hash("POST", "/api/v1/transactions/refund", {"txNo": "PAY-1", "amount": 10})


class MemoryRecords:
    """The KeyRecords store in a dict (the connection argument is ignored)."""

    def __init__(self):
        self.by_key: dict[tuple, KeyRecord] = {}
        self.ids = itertools.count(1)

    def _by_id(self, record_id):
        return next(r for r in self.by_key.values() if r.id == record_id)

    def claim(self, conn, merchant_id, mode, key, request_hash, now):
        if (merchant_id, mode, key) in self.by_key:
            return None
        record_id = next(self.ids)
        self.by_key[merchant_id, mode, key] = KeyRecord(record_id, request_hash, "running", None,
                                                        None, None, now, now)
        return record_id

    def find(self, conn, merchant_id, mode, key):
        return self.by_key.get((merchant_id, mode, key))

    def link_transaction(self, uow, record_id, tx):
        self._by_id(record_id).transaction_id = tx.id

    def complete(self, conn, record_id, status, body, now):
        record = self._by_id(record_id)
        record.state, record.response_status, record.response_body, record.updated_at = (
            "done", status, body, now)

    def take_over(self, conn, record_id, seen_updated_at, now):
        record = self._by_id(record_id)
        if record.state != "running" or record.updated_at != seen_updated_at:
            return False
        record.updated_at = now
        return True

    def release(self, conn, record_id):
        self.by_key = {k: r for k, r in self.by_key.items() if r.id != record_id}

    def release_unless_linked(self, conn, record_id):
        if self._by_id(record_id).transaction_id is None:
            self.release(conn, record_id)


class MemoryTransactions:
    def __init__(self):
        self.by_id: dict[int, Transaction] = {}

    def get_by_id(self, caller, tx_id):
        tx = self.by_id.get(tx_id)
        return tx if tx and (tx.merchant_id, tx.mode) == (caller.merchant_id, caller.mode) else None


class MemoryUnitOfWork:
    conn = None

    def __init__(self, transactions):
        self.transactions = transactions

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def commit(self):
        pass


class World:
    """Key records, stored transactions, a clock, and a refund service that counts its runs."""

    def __init__(self):
        self.records = MemoryRecords()
        self.transactions = MemoryTransactions()
        self.now = NOW
        self.runs = 0
        self.deps = Deps(uow=lambda write=True: MemoryUnitOfWork(self.transactions), providers=ProvidersByName({}),
                         clock=lambda: self.now)

    def refund(self, on_created) -> Transaction:
        self.runs += 1
        tx = Transaction(merchant_id=CALLER.merchant_id, mode=CALLER.mode, tx_no=f"RFD-{self.runs}",
                         kind=Kind.REFUND, status=Status.PENDING, amount=Decimal("10"), currency="EUR",
                         reference="r", payment_method="card", created_at=self.now,
                         updated_at=self.now, id=100 + self.runs)
        self.transactions.by_id[tx.id] = tx
        on_created(MemoryUnitOfWork(self.transactions), tx)
        return tx

    def dies_after_creating(self, on_created) -> Transaction:
        """The run killed after its refund was committed, before the provider answered."""
        self.refund(on_created)
        raise ConnectionError("killed")

    def refuse(self, on_created) -> Transaction:
        self.runs += 1
        raise RefundRejected("Refund amount exceeds the remaining refundable amount")

    def run(self, operation=None, key="k-1", fingerprint=FINGERPRINT, **timing):
        return once.run_once(self.deps, CALLER, key, fingerprint, operation or self.refund, keep,
                             records=self.records, **timing)

    def record(self, key="k-1") -> KeyRecord | None:
        return self.records.find(None, CALLER.merchant_id, CALLER.mode.value, key)


def keep(outcome) -> Answer | None:
    """Keeps a refund by its number and a refusal by its message; anything else is not kept."""
    if isinstance(outcome, Transaction):
        return Answer(200, outcome.tx_no)
    if isinstance(outcome, RefundRejected):
        return Answer(400, str(outcome))
    return None


@pytest.fixture
def world():
    return World()


def test_the_first_run_returns_its_transaction_and_keeps_its_answer(world):
    tx = world.run()
    assert (tx.tx_no, world.runs) == ("RFD-1", 1)
    record = world.record()
    assert (record.state, record.transaction_id) == ("done", tx.id)
    assert (record.response_status, record.response_body) == (200, "RFD-1")


def test_a_repeat_gets_the_kept_answer_without_running_again(world):
    world.run()
    assert world.run() == Answer(200, "RFD-1")
    assert world.runs == 1


def test_the_same_key_for_another_request_is_refused(world):
    world.run()
    with pytest.raises(KeyReused):
        world.run(fingerprint=request_hash("POST", "/api/v1/transactions/refund", {"amount": 11}))
    assert world.runs == 1


def test_keys_are_scoped_to_the_callers_merchant_and_mode(world):
    world.run()
    other = replace(CALLER, mode=Mode.LIVE)
    once.run_once(world.deps, other, "k-1", FINGERPRINT, world.refund, keep, records=world.records)
    assert world.runs == 2


def test_a_kept_refusal_is_raised_then_replayed(world):
    with pytest.raises(RefundRejected):
        world.run(world.refuse)
    assert world.run(world.refuse) == Answer(400, "Refund amount exceeds the remaining refundable amount")
    assert world.runs == 1


def test_an_error_not_kept_frees_the_key_for_a_retry(world):
    def fails(on_created):
        raise ConnectionError("provider down")

    with pytest.raises(ConnectionError):
        world.run(fails)
    assert world.record() is None
    assert world.run().tx_no == "RFD-1"


def test_an_error_after_the_transaction_was_created_keeps_the_key_linked(world):
    with pytest.raises(ConnectionError):
        world.run(world.dies_after_creating)
    record = world.record()
    assert (record.state, record.transaction_id) == ("running", 101)


def test_a_duplicate_of_a_running_key_waits_then_is_told_it_still_runs(world):
    world.records.claim(None, CALLER.merchant_id, CALLER.mode.value, "k-1", FINGERPRINT, NOW)
    with pytest.raises(StillRunning):
        world.run(wait_for_first=0)
    assert world.runs == 0


def test_an_abandoned_key_that_created_nothing_is_run_again(world):
    world.records.claim(None, CALLER.merchant_id, CALLER.mode.value, "k-1", FINGERPRINT, NOW)
    world.now = NOW + timedelta(seconds=31)
    assert world.run().tx_no == "RFD-1"
    assert world.record().state == "done"


def test_an_abandoned_key_is_answered_from_the_transaction_it_created(world):
    with pytest.raises(ConnectionError):
        world.run(world.dies_after_creating)
    world.now = NOW + timedelta(seconds=5)
    assert world.run(abandoned_after=timedelta(seconds=1)).tx_no == "RFD-1"
    assert world.runs == 1
    assert world.run() == Answer(200, "RFD-1")


def test_a_key_is_not_taken_over_before_it_is_abandoned(world):
    world.records.claim(None, CALLER.merchant_id, CALLER.mode.value, "k-1", FINGERPRINT, NOW)
    world.now = NOW + timedelta(seconds=29)
    with pytest.raises(StillRunning):
        world.run(wait_for_first=0)


def test_a_key_past_the_replay_window_is_free_again(world):
    world.run()
    world.now = NOW + once.REPLAY_WINDOW + timedelta(seconds=1)
    assert world.run(fingerprint=request_hash("POST", "/other", {})).tx_no == "RFD-2"


def test_fingerprints_taken_before_stay_the_same():
    """Stored records compare with these: a changed fingerprint would turn retries into KeyReused."""
    assert request_hash("POST", "/api/v1/transactions/refund",
                        {"txNo": "PAY-1", "amount": Decimal("10.50"), "reason": None}) == (
        "473be4070511516aa95032132dbc5c6cb5b7e6c272d4b0cf0f7f42cb5bab1d55")
    assert request_hash("POST", "dashboard-refund", {"txNo": "PAY-1", "amount": Decimal("40"),
                                                     "reason": "Late é", "description": None}) == (
        "f08b12b8862ae4dae5ba4fed625455f0f0adbebd5a8eb11d2eb52c0b37d7f3fa")


def test_fingerprints_tell_lone_surrogates_apart():
    first = request_hash("POST", "/api/v1/transactions", {"reference": "\ud800"})
    other = request_hash("POST", "/api/v1/transactions", {"reference": "\udbff"})
    assert first == "470fb1eed02af31a1ef8e5d7b14ffc8f7c54333a3728a742dfee2323f90392a0"
    assert other == "f854687bd8919c68f7fa525caff5652725f18754ccea6b356571464be57ad2a1"


def test_fingerprints_ignore_the_order_of_fields():
    assert request_hash("POST", "/p", {"a": 1, "b": 2}) == request_hash("POST", "/p", {"b": 2, "a": 1})
