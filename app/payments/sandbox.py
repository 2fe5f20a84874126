"""The sandbox test transactions every merchant's sandbox holds, and their reset."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from .deps import Deps
from .model import Caller, Kind, Mode, Status, Transaction


@dataclass(frozen=True)
class Fixture:
    """One test transaction of the sandbox table."""

    tx_no: str
    status: Status
    amount: Decimal
    payment_method: str = "card"
    decline_reason: str | None = None


FIXTURES = (
    Fixture("SBX-CAPTURED", Status.CAPTURED, Decimal("100.00")),
    Fixture("SBX-REFUND-DECLINED", Status.CAPTURED, Decimal("100.00")),
    Fixture("SBX-REFUND-FAILED", Status.CAPTURED, Decimal("100.00")),
    Fixture("SBX-REFUND-ASYNC", Status.CAPTURED, Decimal("100.00")),
    Fixture("SBX-NO-PARTIAL", Status.CAPTURED, Decimal("100.00"), "card-full-refund-only"),
    Fixture("SBX-PENDING", Status.PENDING, Decimal("50.00")),
    Fixture("SBX-AUTHORIZED", Status.AUTHORIZED, Decimal("50.00")),
    Fixture("SBX-DECLINED", Status.DECLINED, Decimal("50.00"), decline_reason="Insufficient Funds"),
)
FIXTURE_TX_NOS = [f.tx_no for f in FIXTURES]
# Sandbox fixtures never expire: they stay Pending for testers until reset.
FIXTURE_CREATED_BY = "sandbox"


def fixture_transaction(fixture: Fixture, merchant_id: int, callback_url: str | None,
                        now: datetime) -> Transaction:
    """The stored form of a fixture."""
    return Transaction(
        merchant_id=merchant_id,
        mode=Mode.SANDBOX,
        tx_no=fixture.tx_no,
        kind=Kind.PAYMENT,
        status=fixture.status,
        amount=fixture.amount,
        currency="EUR",
        reference=f"sandbox-{fixture.tx_no.lower()}",
        payment_method=fixture.payment_method,
        created_at=now,
        updated_at=now,
        statement_descriptor="PAYDESK SANDBOX",
        callback_url=callback_url,
        billing={"firstName": "Sandbox", "lastName": "Tester", "email": "tester@example.com",
                 "customerReference": "sandbox-customer"},
        decline_reason=fixture.decline_reason,
        provider_transaction_id=f"sim_{fixture.tx_no}",
        provider_status=fixture.status.value.upper(),
        provider_message="Sandbox test transaction",
        created_by=FIXTURE_CREATED_BY,
    )


def install_fixtures(uow, sandbox: Caller, callback_url: str | None, now: datetime) -> None:
    """Put the test transactions into the caller's sandbox (after removing any earlier ones)."""
    uow.transactions.delete_sandbox_fixtures(sandbox, FIXTURE_TX_NOS)
    for fixture in FIXTURES:
        tx = fixture_transaction(fixture, sandbox.merchant_id, callback_url, now)
        uow.transactions.add(tx)
        uow.record_history(tx, None, FIXTURE_CREATED_BY)


def reset_sandbox(deps: Deps, caller: Caller) -> None:
    """Restore the test transactions of the caller's merchant's sandbox to their starting states."""
    sandbox = replace(caller, mode=Mode.SANDBOX)
    with deps.uow() as uow:
        install_fixtures(uow, sandbox, uow.merchants.default_callback_url(sandbox), deps.clock())
        uow.audit(sandbox, "sandbox.reset")
        uow.commit()
