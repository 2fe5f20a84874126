"""The daily totals (app/store/daily_totals.py, migration 0012) on both databases: whatever changes a
transaction (insert, status change, decline reason, amount, delete), from whichever code, the totals
plus their unfolded changes equal the transactions' own sums, before and after the worker folds;
the migration sums the rows written before it; `flask daily-totals verify` names a wrong total;
writers and two folders at once lose nothing."""
from __future__ import annotations

import threading
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from alembic import command
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from sqlalchemy import create_engine, delete, func, insert, select, update

from app.cli import alembic_config, upgrade_database
from app.payments.model import Caller, Mode
from app.store.daily_totals import check_daily_totals, fold_changes
from app.store.db import make_engine
from app.store.overview import overview
from app.store.unit_of_work import UnitOfWork
from app.store.tables import daily_total_changes, daily_totals, merchants, transactions
from tests.conftest import make_app
from tests.support.databases import create_postgres_database
from tests.support.overview_rows import FIRST, LAST, Rows, at, seed_three_days


@pytest.fixture(params=["sqlite", "postgres"])
def own_database(request, tmp_path):
    """A new database of this test's own (it folds, tampers and counts every row), migrated to
    head; yields its URL."""
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path / 'daily-totals.db'}", lambda: None
    else:
        url, drop = create_postgres_database()
    upgrade_database(url)
    yield url
    drop()


def new_merchant(conn) -> int:
    """A merchants row with nothing else (no tokens, no sandbox payments)."""
    return conn.execute(insert(merchants).values(
        name=f"Totals {uuid.uuid4().hex[:8]}", inbox_key=uuid.uuid4().hex,
        created_at=datetime.now(UTC)).returning(merchants.c.id)).scalar_one()


def fold_all(engine) -> int:
    """Fold every waiting change, as the worker's rounds would."""
    folded = 0
    while True:
        with UnitOfWork(engine) as uow:
            batch = fold_changes(uow.conn, batch=7)  # small batches: several rounds
            uow.commit()
        if not batch:
            return folded
        folded += batch


def waiting_changes(engine, merchant_id: int | None = None) -> int:
    """Changes not yet folded (only `merchant_id`'s when given)."""
    query = select(func.count()).select_from(daily_total_changes)
    if merchant_id is not None:
        query = query.where(daily_total_changes.c.merchant_id == merchant_id)
    with engine.connect() as conn:
        return conn.execute(query).scalar_one()


def check(engine) -> list:
    with engine.connect() as conn:
        return check_daily_totals(conn)


def figures(engine, caller, first=FIRST, last=LAST):
    with engine.connect() as conn:
        return overview(conn, caller, first, last)


def test_every_kind_of_change_moves_the_totals_exactly_before_and_after_folding(app):
    engine = app.extensions["paydesk.engine"]
    caller = seed_three_days(app)
    before = figures(engine, caller)
    with engine.begin() as conn:
        rows = Rows(conn, caller.merchant_id)
        pending = rows.add("payment", "Pending", 1234, "EUR", at(2))
        declined = rows.add("payment", "Declined", 400, "EUR", at(3), reason="Insufficient Funds")
        gone = rows.add("payment", "Captured", 999, "EUR", at(1))
    with engine.begin() as conn:
        # A Pending payment captured, a decline's reason corrected, a captured one deleted.
        conn.execute(update(transactions).where(transactions.c.id == pending).values(status="Captured"))
        conn.execute(update(transactions).where(transactions.c.id == declined)
                     .values(decline_reason="Suspected Fraud"))
        conn.execute(delete(transactions).where(transactions.c.id == gone))
    assert check(engine) == []
    eur = figures(engine, caller)[0]
    assert eur.captured_minor == before[0].captured_minor + 1234
    assert eur.captured_count == before[0].captured_count + 1
    assert eur.declined_count == before[0].declined_count + 1
    assert {d.reason: d.count for d in eur.declines}["Suspected Fraud"] == 1
    unfolded = figures(engine, caller)
    assert fold_all(engine) > 0
    assert waiting_changes(engine) == 0
    assert check(engine) == []
    assert figures(engine, caller) == unfolded


def test_an_update_that_changes_no_summed_column_writes_no_change(app):
    engine = app.extensions["paydesk.engine"]
    caller = seed_three_days(app)
    with engine.begin() as conn:
        payment = Rows(conn, caller.merchant_id).add("payment", "Captured", 500, "EUR", at(2))
    fold_all(engine)
    with engine.begin() as conn:
        # The refund reservation and the provider's fields change on every refund and answer.
        conn.execute(update(transactions).where(transactions.c.id == payment).values(
            refund_reserved_minor=200, provider_status="ok", status="Captured"))
    assert waiting_changes(engine) == 0
    with engine.begin() as conn:  # put it back for the ledger's sake
        conn.execute(update(transactions).where(transactions.c.id == payment).values(refund_reserved_minor=0))


def test_a_row_written_in_another_session_time_zone_counts_on_its_utc_day(app):
    engine = app.extensions["paydesk.engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite keeps UTC text and has no session time zone")
    caller = seed_three_days(app)
    with engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL TIME ZONE 'Pacific/Auckland'")  # UTC+13 in March
        Rows(conn, caller.merchant_id).add("payment", "Captured", 7, "KWD", at(3, 23, 30))
    kwd = figures(engine, caller)[-1]
    assert [d.captured_minor for d in kwd.days] == [1250, 0, 7]
    assert check(engine) == []


def test_the_worker_round_folds_the_changes(app, worker_round):
    engine = app.extensions["paydesk.engine"]
    with engine.begin() as conn:  # final statuses only: the round also expires Pending payments
        caller = Caller(new_merchant(conn), Mode.LIVE, "test")
        rows = Rows(conn, caller.merchant_id)
        rows.add("payment", "Captured", 1000, "EUR", at(1))
        rows.add("payment", "Declined", 300, "EUR", at(2), reason="Do Not Honor")
    unfolded = figures(engine, caller)
    assert waiting_changes(engine, caller.merchant_id) > 0
    worker_round()
    # (The provider calls the round started go on beside it and may write other merchants' changes.)
    assert waiting_changes(engine, caller.merchant_id) == 0
    assert figures(engine, caller) == unfolded
    assert check(engine) == []


def test_verify_names_a_total_that_does_not_match_and_fold_clears_the_changes(own_database):
    engine, app = make_engine(own_database), make_app(own_database)

    def verify():
        return app.test_cli_runner().invoke(args=["daily-totals", "verify"])

    try:
        with engine.begin() as conn:
            rows = Rows(conn, new_merchant(conn))
            rows.add("payment", "Captured", 1000, "EUR", at(1))
            rows.add("payment", "Declined", 1000, "EUR", at(1), reason="Do Not Honor")
        result = verify()
        assert (result.exit_code, result.output) == (0, "daily totals ok\n")
        folded = app.test_cli_runner().invoke(args=["daily-totals", "fold"])
        assert (folded.exit_code, folded.output) == (0, "folded 2 changes\n")
        assert waiting_changes(engine) == 0
        with engine.begin() as conn:  # a total changed behind the triggers' back
            conn.execute(update(daily_totals).where(daily_totals.c.status == "Declined")
                         .values(amount_minor=daily_totals.c.amount_minor + 1))
        result = verify()
        assert result.exit_code == 1
        assert "2026-03-01, EUR, payment Declined, Do Not Honor: +0 transactions, -1 in minor units" in result.output
        assert "daily totals: 1 groups do not match their transactions" in result.output
    finally:
        engine.dispose()
        app.extensions["paydesk.engine"].dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0011(request, tmp_path, revision_templates):
    """A new database migrated up to 0011, before the daily totals existed."""
    yield from revision_templates.database_at("0011", request.param, tmp_path)


def test_the_migration_sums_the_rows_written_before_it(database_at_0011):
    engine = create_engine(database_at_0011)
    try:
        with engine.begin() as conn:
            merchant_id = new_merchant(conn)
            rows = Rows(conn, merchant_id)
            rows.add("payment", "Captured", 10000, "EUR", at(1, 0))
            rows.add("payment", "Captured", 2005, "EUR", at(1, 23, 59, 59, 999999))
            rows.add("payment", "Declined", 3000, "EUR", at(2), reason="Insufficient Funds")
            rows.add("payment", "Failed", 500, "EUR", at(2))
            rows.add("payment", "Captured", 1500, "JPY", at(3))
    finally:
        engine.dispose()
    upgrade_database(database_at_0011)
    engine = make_engine(database_at_0011)
    try:
        assert waiting_changes(engine) == 0  # summed straight into the totals
        assert check(engine) == []
        eur, jpy = figures(engine, Caller(merchant_id, Mode.LIVE, "test"))
        assert [d.captured_minor for d in eur.days] == [12005, 0, 0]
        assert (eur.captured_count, eur.declined_count) == (2, 2)
        assert [(d.reason, d.count) for d in eur.declines] == [("Insufficient Funds", 1), ("No reason given", 1)]
        assert jpy.captured_minor == 1500
        # And from here on the triggers keep them.
        with engine.begin() as conn:
            Rows(conn, merchant_id).add("payment", "Captured", 1, "JPY", at(3))
        assert figures(engine, Caller(merchant_id, Mode.LIVE, "test"))[1].captured_minor == 1501
        assert check(engine) == []
    finally:
        engine.dispose()
    command.downgrade(alembic_config(database_at_0011), "0011")  # and back, cleanly


def test_writers_and_two_folders_at_once_lose_nothing(own_database):
    """Four threads insert and capture payments while two fold (two workers): every change is
    folded exactly once."""
    engine = make_engine(own_database)
    try:
        with engine.begin() as conn:
            merchant_id = new_merchant(conn)
        stop, errors = threading.Event(), []

        def write(n: int) -> None:
            try:
                for i in range(25):  # units of work, as the services write (SQLite: BEGIN IMMEDIATE)
                    with UnitOfWork(engine) as uow:
                        tx = Rows(uow.conn, merchant_id).add("payment", "Pending", 100 + n, "EUR", at(1 + i % 3))
                        uow.commit()
                    with UnitOfWork(engine) as uow:
                        uow.conn.execute(update(transactions).where(transactions.c.id == tx)
                                         .values(status="Captured"))
                        uow.commit()
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)

        def fold() -> None:
            try:
                while not stop.is_set():
                    with UnitOfWork(engine) as uow:
                        fold_changes(uow.conn, batch=5)
                        uow.commit()
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)

        writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        folders = [threading.Thread(target=fold) for _ in range(2)]
        for thread in [*writers, *folders]:
            thread.start()
        for thread in writers:
            thread.join()
        stop.set()
        for thread in folders:
            thread.join()
        assert errors == []
        fold_all(engine)
        assert check(engine) == []
        [eur] = figures(engine, Caller(merchant_id, Mode.LIVE, "test"))
        assert eur.captured_count == 100
        assert eur.captured_minor == 25 * (100 + 101 + 102 + 103)
    finally:
        engine.dispose()


class DailyTotalsMachine(RuleBasedStateMachine):
    """Payments and refunds inserted, moved between statuses and reasons, re-amounted and deleted,
    with folds in between: after every step the totals plus changes equal the transactions."""

    engine = None  # set per database by the test

    def __init__(self):
        super().__init__()
        with self.engine.begin() as conn:
            self.merchant_id = new_merchant(conn)
        self.ids: list[int] = []

    @rule(kind=st.sampled_from(["payment", "refund", "payout"]),
          status=st.sampled_from(["Pending", "Captured", "Declined", "Failed", "Refunded"]),
          amount=st.integers(1, 10**12), currency=st.sampled_from(["EUR", "JPY"]),
          day=st.integers(1, 3), reason=st.sampled_from([None, "Do Not Honor", ""]))
    def add(self, kind, status, amount, currency, day, reason):
        with self.engine.begin() as conn:
            self.ids.append(Rows(conn, self.merchant_id).add(kind, status, amount, currency, at(day),
                                                             reason=reason))

    @precondition(lambda self: self.ids)
    @rule(data=st.data(), status=st.sampled_from(["Captured", "Declined", "Refunded", "Chargeback"]),
          reason=st.sampled_from([None, "Suspected Fraud"]), amount=st.none() | st.integers(1, 10**6))
    def change(self, data, status, reason, amount):
        tx = data.draw(st.sampled_from(self.ids))
        values = {"status": status, "decline_reason": reason} | ({"amount_minor": amount} if amount else {})
        with self.engine.begin() as conn:
            conn.execute(update(transactions).where(transactions.c.id == tx).values(**values))

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def remove(self, data):
        tx = data.draw(st.sampled_from(self.ids))
        self.ids.remove(tx)
        with self.engine.begin() as conn:
            conn.execute(delete(transactions).where(transactions.c.id == tx))

    @rule(batch=st.integers(1, 5))
    def fold(self, batch):
        with UnitOfWork(self.engine) as uow:
            fold_changes(uow.conn, batch=batch)
            uow.commit()

    @invariant()
    def totals_equal_the_transactions(self):
        assert check(self.engine) == []


def test_any_sequence_of_changes_and_folds_keeps_the_totals_exact(own_database):
    DailyTotalsMachine.engine = make_engine(own_database)
    try:
        run_state_machine_as_test(DailyTotalsMachine, settings=settings(
            max_examples=25, stateful_step_count=20, deadline=None,
            suppress_health_check=[HealthCheck.too_slow]))
    finally:
        DailyTotalsMachine.engine.dispose()


def test_a_range_reads_the_totals_of_its_days_only(app):
    """A year's range finds the seeded days' figures among 366 empty ones."""
    engine = app.extensions["paydesk.engine"]
    caller = seed_three_days(app)
    fold_all(engine)
    eur = figures(engine, caller, date(2025, 6, 1), date(2026, 5, 31))[0]
    assert len(eur.days) == 365
    assert eur.captured_minor == 99900 + 10000 + 5000 + 2005 + 1000 + 99900
    assert eur.days[0].day == date(2025, 6, 1) and eur.days[-1].day == date(2026, 5, 31)
    assert FIRST - timedelta(days=1) in {d.day for d in eur.days if d.captured_minor}
