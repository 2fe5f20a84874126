"""Migration 0027: a token made before it keeps every scope and no limit; the request log's
tables come and go with it. Both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from app.cli import alembic_config


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0026(request, tmp_path, revision_templates):
    """A new database migrated up to 0026, before tokens had scopes."""
    yield from revision_templates.database_at("0026", request.param, tmp_path)


def test_a_token_made_before_keeps_every_scope_and_the_downgrade_removes_the_new_parts(database_at_0026):
    engine = create_engine(database_at_0026)
    try:
        with engine.begin() as conn:  # the tables as 0026 has them, written in its own terms
            conn.execute(text("INSERT INTO merchants (id, name, inbox_key, created_at) "
                              "VALUES (1, 'M', 'k', CURRENT_TIMESTAMP)"))
            conn.execute(text("INSERT INTO api_tokens (id, merchant_id, mode, token_hash, prefix, label, "
                              "created_at) VALUES (7, 1, 'live', 'h', 'pd_live_', 'old', CURRENT_TIMESTAMP)"))
        command.upgrade(alembic_config(database_at_0026), "0027")  # (0034 folds request_log_tx away)
        with engine.connect() as conn:
            token = conn.execute(text("SELECT scopes, expires_at, networks FROM api_tokens WHERE id = 7")).one()
            limits = conn.execute(text("SELECT count(*) FROM api_token_limits")).scalar()
        assert tuple(token) == ("read,payments,refunds,payouts,webhooks,sandbox", None, None)
        assert limits == 0
        assert {"api_token_limits", "token_day_totals", "request_log", "request_log_tx"} <= set(
            inspect(engine).get_table_names())
        command.downgrade(alembic_config(database_at_0026), "0026")
        found = inspect(engine)
        assert not {"api_token_limits", "token_day_totals", "request_log", "request_log_tx"} & set(
            found.get_table_names())
        assert "scopes" not in {c["name"] for c in found.get_columns("api_tokens")}
    finally:
        engine.dispose()
