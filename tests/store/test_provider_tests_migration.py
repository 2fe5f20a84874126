"""Migration 0022: provider_accounts' connection test columns, added and dropped cleanly on both
databases."""
from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database

# Read, not written here: the revision 0022 follows is chained anew when branches merge.
DOWN_REVISION = ScriptDirectory.from_config(alembic_config("sqlite://")).get_revision("0022").down_revision
ADDED = {"test_requested_at": True, "test_due_at": True, "test_finished_at": True,
         "test_worked": True, "test_message": True}


@pytest.fixture(params=["sqlite", "postgres"])
def database_before(request, tmp_path, revision_templates):
    """A new database migrated up to the revision before 0022."""
    yield from revision_templates.database_at(DOWN_REVISION, request.param, tmp_path)




def _columns(url: str) -> dict:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {c["name"]: c["nullable"] for c in inspect(conn).get_columns("provider_accounts")}
    finally:
        engine.dispose()


def test_the_migration_adds_nullable_columns_and_its_downgrade_drops_them(database_before):
    before = _columns(database_before)
    assert not ADDED.keys() & before.keys()

    upgrade_database(database_before)
    assert _columns(database_before) == {**before, **ADDED}

    command.downgrade(alembic_config(database_before), DOWN_REVISION)
    assert _columns(database_before) == before
