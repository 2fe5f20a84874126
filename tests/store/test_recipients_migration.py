"""Migration 0025 adds recipients (one live recipient per account), and its downgrade removes
them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, insert, inspect, update
from sqlalchemy.exc import IntegrityError

from app.cli import alembic_config, upgrade_database
from app.store.tables import merchants, recipients
from app.util import utcnow


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0024(request, tmp_path, revision_templates):
    """A new database migrated up to 0024, before recipients were saved."""
    yield from revision_templates.database_at("0024", request.param, tmp_path)


def _recipient(public_id: str, bank: str | None, **values) -> dict:
    return dict(public_id=public_id, merchant_id=1, mode="live", payment_method="mobile-money-payout",
                currency="KES", bank=bank, holder="H", account_number="+254712345678", first_name="F",
                last_name="L", email="e@example.com", customer_reference=public_id, created_at=utcnow(),
                created_by="test", **values)


def test_the_migration_adds_recipients_and_its_downgrade_removes_them(database_at_0024):
    engine = create_engine(database_at_0024)
    try:
        upgrade_database(database_at_0024)
        found = inspect(engine)
        assert {c["name"] for c in found.get_columns("recipients")} == {c.name for c in recipients.columns}
        with engine.begin() as conn:
            conn.execute(insert(merchants).values(id=1, name="M", inbox_key="k", created_at=utcnow()))
            conn.execute(insert(recipients).values(_recipient("rcp_1", None)))
        # A second live recipient of the same account is refused, a bank of NULL included ...
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(insert(recipients).values(_recipient("rcp_2", None)))
        # ... and allowed once the first is archived.
        with engine.begin() as conn:
            conn.execute(update(recipients).values(archived_at=utcnow()))
            conn.execute(insert(recipients).values(_recipient("rcp_3", None)))
        command.downgrade(alembic_config(database_at_0024), "0024")
        assert "recipients" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()
