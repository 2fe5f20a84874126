"""Migration 0035: the reference's trigram index gathers new entries in a 64 kB pending list, as
the customers' do; its downgrade writes them into the index and turns the list off (PostgreSQL:
SQLite has no such index)."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from alembic import command
from sqlalchemy import create_engine, text

from app.cli import alembic_config, upgrade_database
from app.payments.model import Kind, Mode, Status, Transaction
from app.store.unit_of_work import UnitOfWork
from app.util import utcnow

INDEX = "ix_transactions_reference_trgm"


@pytest.fixture
def database_at_0034(tmp_path, revision_templates):
    """A new PostgreSQL database migrated up to 0034."""
    yield from revision_templates.database_at("0034", "postgres", tmp_path)


def _options(engine) -> list[str]:
    with engine.connect() as conn:
        return conn.execute(text("SELECT reloptions FROM pg_class WHERE relname = :name"),
                            {"name": INDEX}).scalar_one() or []


def _pending_tuples(engine) -> int:
    with engine.begin() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS pgstattuple"))  # pgstatginindex
        return conn.execute(text("SELECT pending_tuples FROM pgstatginindex(:name)"), {"name": INDEX}).scalar_one()


def _merchant_with_a_payment(engine, reference: str) -> None:
    """A merchant and a new payment, written as the services write one (the schema at the head)."""
    now = utcnow()
    with engine.begin() as conn:
        merchant_id = conn.execute(text(
            "INSERT INTO merchants (name, inbox_key, created_at) VALUES ('Pending list shop', :key, :now) "
            "RETURNING id"), {"key": uuid.uuid4().hex, "now": now}).scalar_one()
    tx = Transaction(merchant_id=merchant_id, mode=Mode.LIVE, tx_no="PAY-PENDING-1", kind=Kind.PAYMENT,
                     status=Status.PENDING, amount=Decimal("1.00"), currency="EUR", reference=reference,
                     payment_method="card", created_at=now, updated_at=now)
    with UnitOfWork(engine) as uow:
        uow.transactions.add(tx)
        uow.commit()


def test_the_reference_index_gets_a_pending_list_and_its_downgrade_empties_it(database_at_0034):
    engine = create_engine(database_at_0034)
    try:
        assert _options(engine) == ["fastupdate=off"]
        upgrade_database(database_at_0034)
        assert _options(engine) == ["fastupdate=on", "gin_pending_list_limit=64"]
        _merchant_with_a_payment(engine, "order-pending-list-1")
        assert _pending_tuples(engine) > 0
        command.downgrade(alembic_config(database_at_0034), "0034")
        assert _options(engine) == ["fastupdate=off"]
        assert _pending_tuples(engine) == 0  # written into the index proper
        with engine.connect() as conn:
            conn.execute(text("SET enable_seqscan = off"))
            assert conn.execute(text("SELECT tx_no FROM transactions WHERE reference ILIKE '%ding-LIST%'")
                                ).scalars().all() == ["PAY-PENDING-1"]
    finally:
        engine.dispose()
