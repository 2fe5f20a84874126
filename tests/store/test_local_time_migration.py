"""Migration 0031 adds the merchant's time zone (UTC for those already there) and the user's own
time zone and locale, and its downgrade removes them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from app.cli import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0030(request, tmp_path, revision_templates):
    """A new database migrated up to 0030, before times were local."""
    yield from revision_templates.database_at("0030", request.param, tmp_path)


def test_the_migration_adds_time_zones_and_locales_and_its_downgrade_removes_them(database_at_0030):
    engine = create_engine(database_at_0030)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO merchants (name, inbox_key, created_at) "
                              "VALUES ('Old', 'inbox-old', '2026-11-01 00:00:00+00')"))
        upgrade_database(database_at_0030)
        found = inspect(engine)
        assert {"time_zone"} <= {c["name"] for c in found.get_columns("merchants")}
        assert {"time_zone", "locale"} <= {c["name"] for c in found.get_columns("users")}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT time_zone FROM merchants WHERE name = 'Old'")).scalar_one() == "UTC"
        command.downgrade(alembic_config(database_at_0030), "0030")
        found = inspect(engine)
        assert "time_zone" not in {c["name"] for c in found.get_columns("merchants")}
        assert not {"time_zone", "locale"} & {c["name"] for c in found.get_columns("users")}
    finally:
        engine.dispose()
