"""Migration 0006 fills the refund totals of payments refunded before it, and `flask ledger verify`
checks them: it passes on the migrated rows and fails, naming the payment, on a tampered one."""
from __future__ import annotations

import uuid
from unittest.mock import patch
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import create_engine, insert, select, update

from app.cli import upgrade_database
from app.payments import lookup, refunds, settlement
from app.payments.model import Caller, Mode, RefundRejected, Status
from app.payments.schemas import RefundRequest
from app.store.merchants import create_merchant
from app.store.tables import transactions
from app.util import utcnow
from tests.conftest import make_app
from tests.store.test_worker import deps_at


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0005(request, tmp_path, revision_templates):
    """A new database migrated up to 0005, before the refund totals existed."""
    yield from revision_templates.database_at("0005", request.param, tmp_path)


def tx_row(merchant_id: int, tx_no: str, kind: str, status: str, amount_minor: int, **fields) -> dict:
    """A transactions row as the schema before 0006 has it (sandbox, EUR, card)."""
    now = utcnow()
    return dict(merchant_id=merchant_id, mode="sandbox", tx_no=tx_no, kind=kind, status=status,
                amount_minor=amount_minor, currency="EUR", reference=fields.pop("reference", tx_no),
                payment_method="card", created_at=now, updated_at=now, **fields)


def refunded_before_0006(url: str) -> dict[str, int]:
    """Payments with refunds in every status, written with the old schema; their ids by txNo."""
    app = make_app(url)
    # Its merchant creation reads and writes no column 0006 adds; the sandbox's test payments it
    # would install are written by today's code, with columns of later migrations, so not here;
    # nor its webhook secrets, sealed today, longer than the column before 0015 takes; nor its
    # tokens, with the scopes of 0027.
    with patch("app.store.merchants.install_fixtures"), \
            patch("app.store.merchants.add_webhook_secret", return_value="whsec_unused"), \
            patch("app.store.merchants.issue_token", return_value="pd_unused"), \
            app.extensions["paydesk"].uow() as uow:
        merchant_id = create_merchant(uow, f"Before {uuid.uuid4().hex[:8]}",
                                      "http://paydesk.test").merchant_id
        uow.commit()
    app.extensions["paydesk.engine"].dispose()
    engine = create_engine(url)
    with engine.begin() as conn:
        ids = {}
        for tx_no, status, amount in (("PAY-PARTLY", "Captured", 10000), ("PAY-FULLY", "Refunded", 5000),
                                      ("PAY-UNTOUCHED", "Captured", 700)):
            ids[tx_no] = conn.execute(insert(transactions).returning(transactions.c.id),
                                      tx_row(merchant_id, tx_no, "payment", status, amount)).scalar_one()
        for tx_no, original, status, amount in (
                ("RFD-1", "PAY-PARTLY", "Captured", 3000), ("RFD-2", "PAY-PARTLY", "Pending", 2000),
                ("RFD-3", "PAY-PARTLY", "Declined", 4000), ("RFD-4", "PAY-PARTLY", "Failed", 1000),
                ("RFD-5", "PAY-FULLY", "Captured", 2000), ("RFD-6", "PAY-FULLY", "Captured", 3000)):
            owed = utcnow() if status == "Pending" else None  # the worker would ask about it
            conn.execute(insert(transactions), tx_row(merchant_id, tx_no, "refund", status, amount,
                                                      reference=original, original_id=ids[original],
                                                      provider_check_at=owed))
    engine.dispose()
    ids["merchant"] = merchant_id
    return ids


def verify(app):
    """`flask ledger verify` against the app's database."""
    return app.test_cli_runner().invoke(args=["ledger", "verify"])


def totals(app, tx_id: int) -> tuple[int, int]:
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(transactions).where(transactions.c.id == tx_id)).one()
    return row.refund_reserved_minor, row.refund_captured_minor


def test_the_migration_fills_the_totals_from_the_refunds_made_before_it(database_at_0005):
    ids = refunded_before_0006(database_at_0005)
    upgrade_database(database_at_0005)
    app = make_app(database_at_0005)
    try:
        assert totals(app, ids["PAY-PARTLY"]) == (5000, 3000)  # Pending and Captured; Captured
        assert totals(app, ids["PAY-FULLY"]) == (5000, 5000)
        assert totals(app, ids["PAY-UNTOUCHED"]) == (0, 0)
        result = verify(app)
        assert (result.exit_code, result.output) == (
            0, "ledger ok: 3 payments checked\n")  # the three written before 0006

        # The rules read the filled totals: 50.00 of PAY-PARTLY is left to refund.
        deps = app.extensions["paydesk"]
        caller = Caller(ids["merchant"], Mode.SANDBOX, "api:test")
        with pytest.raises(RefundRejected) as refused:
            refunds.refund(deps, caller, RefundRequest("PAY-PARTLY", Decimal("50.01")))
        assert str(refused.value) == "Refund amount (50.01) exceeds remaining refundable amount (50.00)"
        assert refunds.refund(deps, caller, RefundRequest("PAY-PARTLY", Decimal("50"))).status is (
            Status.CAPTURED)
        settlement.run_due_provider_checks(deps_at(app, timedelta(seconds=1)))  # RFD-2, from before
        assert totals(app, ids["PAY-PARTLY"]) == (10000, 10000)
        assert lookup.get_status(deps, caller, "PAY-PARTLY").status is Status.REFUNDED
        assert verify(app).exit_code == 0
    finally:
        app.extensions["paydesk.engine"].dispose()


def test_ledger_verify_fails_on_a_payment_whose_totals_were_tampered_with(database_at_0005):
    ids = refunded_before_0006(database_at_0005)
    upgrade_database(database_at_0005)
    app = make_app(database_at_0005)
    try:
        with app.extensions["paydesk"].uow() as uow:
            uow.conn.execute(update(transactions).where(transactions.c.id == ids["PAY-PARTLY"])
                             .values(refund_captured_minor=transactions.c.refund_captured_minor + 1))
            uow.commit()
        result = verify(app)
        assert result.exit_code == 1
        assert result.output == (
            f"PAY-PARTLY (merchant {ids['merchant']}, sandbox, EUR): reserved 50.00 on the row, "
            "50.00 by its refunds; captured 30.01 on the row, 30.00 by its refunds; "
            "held 0.00 on the row, 0.00 by its requests awaiting approval\n"
            "Error: ledger: 1 of 3 payments do not match their refunds\n")
    finally:
        app.extensions["paydesk.engine"].dispose()
