"""`flask reconcile verify`: exit 0 and a summary when every line matches and nothing is missing,
exit 1 and each exception on its own line otherwise. Both databases, each a database of its own."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, select

from app.cli import upgrade_database
from app.payments.model import Caller, Mode
from app.providers.sandbox_settlements import settle_sandbox
from app.store.merchants import create_merchant
from app.store.tables import settlement_lines, transactions
from app.util import utcnow
from tests.conftest import make_app
from tests.support.databases import create_postgres_database


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_app(request, tmp_path):
    """An app on a new database: only this test's settlements."""
    drop = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'paydesk.db'}"
    else:
        url, drop = create_postgres_database()
    upgrade_database(url)
    app = make_app(url, SETTLEMENT_DELAY=timedelta(0))
    yield app
    app.extensions["paydesk.engine"].dispose()
    if drop:
        drop()


def verify(app):
    return app.test_cli_runner().invoke(args=["reconcile", "verify"])


def sandbox_of_a_new_merchant(app) -> Caller:
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        created = create_merchant(uow, "Reconciled", app.config["BASE_URL"])
        uow.commit()
    return Caller(created.merchant_id, Mode.SANDBOX, "tests")


def test_nothing_stored_is_ok(fresh_app):
    result = verify(fresh_app)

    assert (result.exit_code, result.output) == (0, "reconcile ok: every settlement line matched, no payment missing\n")


def test_settled_in_full_is_ok_and_a_short_line_exits_1(fresh_app):
    caller = sandbox_of_a_new_merchant(fresh_app)
    deps = fresh_app.extensions["paydesk"]
    settle_sandbox(deps, caller, amount_differs_for="SBX-CAPTURED")

    result = verify(fresh_app)

    day = utcnow().date()
    assert result.exit_code == 1
    assert result.output == (
        f"amount_differs: simulator settlement SIM-{day:%Y%m%d}-EUR of {day + timedelta(days=1)} "
        f"(merchant {caller.merchant_id}, sandbox), payment sim_SBX-CAPTURED 99.00 EUR, SBX-CAPTURED "
        "(Paydesk has 100.00 EUR)\n"
        "Error: reconcile: 1 settlement line and 0 missing payments\n")
    settle_sandbox(deps, caller)  # settled again, in full
    assert verify(fresh_app).exit_code == 0


def test_a_captured_payment_no_settlement_carries_exits_1(fresh_app):
    caller = sandbox_of_a_new_merchant(fresh_app)
    deps = fresh_app.extensions["paydesk"]
    settle_sandbox(deps, caller)
    with deps.uow() as uow:
        payment = uow.conn.execute(select(transactions.c.id, transactions.c.created_at).where(
            transactions.c.merchant_id == caller.merchant_id, transactions.c.tx_no == "SBX-NO-PARTIAL")).one()
        uow.conn.execute(delete(settlement_lines).where(settlement_lines.c.transaction_id == payment.id))
        uow.commit()

    result = verify(fresh_app)

    assert result.exit_code == 1
    assert result.output == (
        f"missing_from_settlement: SBX-NO-PARTIAL (merchant {caller.merchant_id}, sandbox, simulator) "
        f"100.00 EUR, captured {payment.created_at:%Y-%m-%d %H:%M} UTC\n"
        "Error: reconcile: 0 settlement lines and 1 missing payment\n")
