"""Migration 0030: transactions.customer_reference filled from billing, the indexes that list one
customer's rows newest first (used by the customer page's query, no sort), the provider events'
TxNo index; and its downgrade, on both databases."""
from __future__ import annotations

import json
import uuid

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, select, text

from app.cli import alembic_config, upgrade_database
from app.payments.model import Caller, Mode
from app.store.customers import CustomerKey
from app.store.scope import scoped_to_mode
from app.store.tables import transactions
from app.util import utcnow
from tests.support.query_plans import index_names, plan


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0029(request, tmp_path, revision_templates):
    """A new database migrated up to 0029, before customer references had a column."""
    yield from revision_templates.database_at("0029", request.param, tmp_path)


def _stored_before_0030(engine) -> int:
    now = utcnow().replace(tzinfo=None)
    with engine.begin() as conn:
        merchant_id = conn.execute(text(
            "INSERT INTO merchants (name, inbox_key, created_at) VALUES (:name, :key, :now) RETURNING id"),
            {"name": f"Customers {uuid.uuid4().hex[:8]}", "key": uuid.uuid4().hex, "now": now}).scalar_one()
        for number, billing in enumerate([{"email": "a@example.com", "customerReference": "cust-7"},
                                          {"email": "b@example.com", "customerReference": ""},
                                          {"email": "c@example.com"}, None]):
            conn.execute(text(
                "INSERT INTO transactions (merchant_id, mode, tx_no, kind, status, amount_minor, currency, "
                "reference, payment_method, billing, created_at, updated_at) VALUES (:merchant_id, 'live', "
                ":tx_no, :kind, 'Captured', 100, 'EUR', :reference, 'card', :billing, :now, :now)"),
                {"merchant_id": merchant_id, "tx_no": f"PAY-M30-{number}", "reference": f"m30-{number}",
                 "kind": "payment" if billing else "refund",
                 "billing": json.dumps(billing) if billing else None, "now": now})
        # Other customers' rows, newer: the listing index would have to walk past them all.
        conn.execute(text(
            "INSERT INTO transactions (merchant_id, mode, tx_no, kind, status, amount_minor, currency, "
            "reference, payment_method, billing, created_at, updated_at) VALUES (:merchant_id, 'live', "
            ":tx_no, 'payment', 'Captured', 100, 'EUR', :tx_no, 'card', :billing, :now, :now)"),
            [{"merchant_id": merchant_id, "tx_no": f"PAY-OTHER-{n}", "now": now,
              "billing": json.dumps({"email": f"o{n}@example.com", "customerReference": f"other-{n}"})}
             for n in range(3000)])
    return merchant_id


def test_the_migration_fills_customer_references_and_indexes_a_customer_s_rows(database_at_0029):
    engine = create_engine(database_at_0029)
    try:
        merchant_id = _stored_before_0030(engine)
        upgrade_database(database_at_0029)
        with engine.begin() as conn:
            found = dict(conn.execute(select(transactions.c.tx_no, transactions.c.customer_reference)
                                      .where(transactions.c.merchant_id == merchant_id,
                                             transactions.c.tx_no.like("PAY-M30-%"))).all())
            assert found == {"PAY-M30-0": "cust-7", "PAY-M30-1": None, "PAY-M30-2": None, "PAY-M30-3": None}
            assert conn.execute(select(transactions.c.customer_reference).where(
                transactions.c.tx_no == "PAY-OTHER-42")).scalar_one() == "other-42"
            caller = Caller(merchant_id, Mode.LIVE, "test")
            for key, index in ((CustomerKey(reference="cust-7"), "ix_transactions_customer_reference"),
                               (CustomerKey(email="A@example.com"), "ix_transactions_customer_email_listing")):
                # The customer page's query, as app.store.listing builds a first page.
                query = (select(transactions.c.id)
                         .where(*scoped_to_mode(transactions, caller), *key.conditions())
                         .order_by(transactions.c.created_at.desc(), transactions.c.id.desc()).limit(51))
                found = plan(conn, query, "transactions")
                assert index in found, found
                assert "Sort" not in found and "TEMP B-TREE" not in found, found  # read in the index's order
        indexes = {i["name"]: i for i in inspect(engine).get_indexes("provider_events")}
        assert indexes["ix_provider_events_tx_no"]["column_names"] == ["merchant_id", "mode", "tx_no"]

        command.downgrade(alembic_config(database_at_0029), "0029")
        found = inspect(engine)
        assert "customer_reference" not in {c["name"] for c in found.get_columns("transactions")}
        names = index_names(engine, "transactions")
        assert not names & {"ix_transactions_customer_reference", "ix_transactions_customer_email_listing"}
        assert "ix_provider_events_tx_no" not in {i["name"] for i in found.get_indexes("provider_events")}
    finally:
        engine.dispose()
