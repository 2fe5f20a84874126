"""Migration 0033: the due provider checks in provider_calls, copied in and then kept in step with
transactions.provider_check_at by triggers (insert, move, clear, delete), the transactions' index
on provider_check_at gone; and its downgrade, on both databases."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import delete, insert, inspect, select, text, update

from app.cli import alembic_config, upgrade_database
from app.store.db import make_engine
from app.store.tables import provider_calls, transactions
from app.util import utcnow


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0032(request, tmp_path, revision_templates):
    """A new database migrated up to 0032, before provider_calls."""
    yield from revision_templates.database_at("0032", request.param, tmp_path)


def _merchant(conn) -> int:
    return conn.execute(text(
        "INSERT INTO merchants (name, inbox_key, created_at) VALUES (:name, :key, :now) RETURNING id"),
        {"name": f"Calls {uuid.uuid4().hex[:8]}", "key": uuid.uuid4().hex,
         "now": utcnow().replace(tzinfo=None)}).scalar_one()


def _transaction(merchant_id: int, tx_no: str, check_at) -> dict:
    now = utcnow()
    return {"merchant_id": merchant_id, "mode": "live", "tx_no": tx_no, "kind": "payment",
            "status": "Pending", "amount_minor": 100, "currency": "EUR", "reference": tx_no,
            "payment_method": "card", "created_at": now, "updated_at": now, "provider_check_at": check_at}


def _queue(conn, merchant_id: int) -> dict:
    """provider_calls of the merchant's transactions: txNo -> due_at."""
    return dict(conn.execute(
        select(transactions.c.tx_no, provider_calls.c.due_at)
        .join(provider_calls, provider_calls.c.transaction_id == transactions.c.id)
        .where(transactions.c.merchant_id == merchant_id)).all())


def _indexes(engine) -> set[str]:
    """The transactions' indexes by name (reflection skips SQLite's expression indexes, with a warning)."""
    sql = ("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'"
           if engine.dialect.name == "sqlite" else
           "SELECT indexname FROM pg_indexes WHERE tablename = 'transactions'")
    with engine.connect() as conn:
        return set(conn.execute(text(sql)).scalars())


def test_the_due_checks_are_copied_in_and_the_triggers_keep_them_in_step(database_at_0032):
    engine = make_engine(database_at_0032)
    due = utcnow().replace(microsecond=0) - timedelta(minutes=5)
    try:
        with engine.begin() as conn:
            merchant_id = _merchant(conn)
            conn.execute(insert(transactions), [_transaction(merchant_id, "PAY-DUE", due),
                                                _transaction(merchant_id, "PAY-NONE", None)])
        upgrade_database(database_at_0032)
        assert "ix_transactions_provider_check" not in _indexes(engine)
        with engine.begin() as conn:
            assert _queue(conn, merchant_id) == {"PAY-DUE": due}  # copied in

            later = due + timedelta(hours=1)
            conn.execute(insert(transactions), _transaction(merchant_id, "PAY-NEW", later))
            conn.execute(update(transactions).where(transactions.c.tx_no == "PAY-NONE")
                         .values(provider_check_at=due))
            conn.execute(update(transactions).where(transactions.c.tx_no == "PAY-DUE")
                         .values(provider_check_at=later))
            assert _queue(conn, merchant_id) == {"PAY-DUE": later, "PAY-NONE": due, "PAY-NEW": later}

            # An update that leaves the check as it is leaves a worker's claim (due_at) alone.
            claimed = later + timedelta(seconds=30)
            conn.execute(update(provider_calls).values(due_at=claimed).where(
                provider_calls.c.transaction_id.in_(select(transactions.c.id).where(
                    transactions.c.tx_no == "PAY-NEW"))))
            conn.execute(update(transactions).where(transactions.c.tx_no == "PAY-NEW")
                         .values(provider_check_at=later, status="Pending"))
            assert _queue(conn, merchant_id)["PAY-NEW"] == claimed

            conn.execute(update(transactions).where(transactions.c.tx_no == "PAY-DUE")
                         .values(provider_check_at=None))
            conn.execute(delete(transactions).where(transactions.c.tx_no == "PAY-NONE"))
            assert _queue(conn, merchant_id) == {"PAY-NEW": claimed}
    finally:
        engine.dispose()


def test_the_downgrade_removes_provider_calls_and_restores_the_index(database_at_0032):
    engine = make_engine(database_at_0032)
    try:
        upgrade_database(database_at_0032)
        command.downgrade(alembic_config(database_at_0032), "0032")
        assert "provider_calls" not in inspect(engine).get_table_names()
        assert "ix_transactions_provider_check" in _indexes(engine)
        with engine.begin() as conn:  # no trigger left to write to the table that is gone
            merchant_id = _merchant(conn)
            conn.execute(insert(transactions), _transaction(merchant_id, "PAY-AFTER", utcnow()))
    finally:
        engine.dispose()
