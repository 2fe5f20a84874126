"""Sandbox reset: the merchant's test transactions back in their starting states, nothing else touched."""
from __future__ import annotations

from decimal import Decimal

from app.payments import refunds, sandbox, settlement
from app.payments.model import Caller, Mode, Status
from app.payments.schemas import RefundRequest
from app.payments.sandbox import FIXTURES

from .fakes import CALLER, MERCHANT_INBOX, OTHER_MERCHANT, transaction

SANDBOX = Caller(merchant_id=CALLER.merchant_id, mode=Mode.SANDBOX, actor="tester@example.com")


def fixture_states(store, caller=SANDBOX) -> dict[str, Status]:
    return {f.tx_no: store.get(f.tx_no, caller).status for f in FIXTURES}


def test_a_reset_restores_the_fixtures_after_testers_used_them(deps, store):
    sandbox.reset_sandbox(deps, SANDBOX)
    captured = store.get("SBX-CAPTURED", SANDBOX)
    made = refunds.refund(deps, SANDBOX, RefundRequest("SBX-CAPTURED", Decimal("100")))
    assert made.status is Status.PENDING
    assert settlement.run_due_provider_checks(deps) == 1  # the worker submits it
    settlement.move_by_provider(deps, SANDBOX, "SBX-PENDING", Status.CAPTURED, None, "sandbox")
    used = fixture_states(store)
    assert (used["SBX-CAPTURED"], used["SBX-PENDING"]) == (Status.REFUNDED, Status.CAPTURED)

    sandbox.reset_sandbox(deps, SANDBOX)
    assert fixture_states(store) == {f.tx_no: f.status for f in FIXTURES}
    restored = store.get("SBX-CAPTURED", SANDBOX)
    assert store.refunds_of(restored) == store.refunds_of(captured) == []
    assert store.history_of(restored) == [(None, Status.CAPTURED, "sandbox")]
    assert store.history_of(captured) == []


def test_a_reset_from_live_resets_the_merchants_sandbox_and_is_audited_there(deps, store):
    sandbox.reset_sandbox(deps, CALLER)
    fixture = store.get("SBX-PENDING", SANDBOX)
    assert (fixture.mode, fixture.callback_url) == (Mode.SANDBOX, MERCHANT_INBOX)
    assert store.get("SBX-PENDING", CALLER) is None
    assert [(a.action, a.mode) for a in store.committed.audit_log] == [("sandbox.reset", Mode.SANDBOX)]


def test_a_reset_leaves_other_transactions_and_merchants_alone(deps, store):
    theirs = Caller(OTHER_MERCHANT.merchant_id, Mode.SANDBOX, actor="them@example.com")
    sandbox.reset_sandbox(deps, theirs)
    settlement.move_by_provider(deps, theirs, "SBX-PENDING", Status.CAPTURED, None, "sandbox")
    own = store.seed(transaction(caller=SANDBOX))

    sandbox.reset_sandbox(deps, SANDBOX)
    assert store.get(own).status is Status.CAPTURED
    assert store.get("SBX-PENDING", theirs).status is Status.CAPTURED
