"""Migration 0023 adds dispute_files, and its downgrade removes it again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0022(request, tmp_path, revision_templates):
    """A new database migrated up to 0022, before dispute files were stored."""
    yield from revision_templates.database_at("0022", request.param, tmp_path)


def test_the_migration_adds_dispute_files_and_its_downgrade_removes_them(database_at_0022):
    engine = create_engine(database_at_0022)
    try:
        upgrade_database(database_at_0022)
        found = inspect(engine)
        assert {c["name"] for c in found.get_columns("dispute_files")} == {
            "id", "dispute_id", "kind", "filename", "content_type", "size", "sha256", "data",
            "provider_file_id", "uploaded_at", "created_at", "created_by"}
        assert [i["column_names"] for i in found.get_indexes("dispute_files")] == [["dispute_id"]]
        command.downgrade(alembic_config(database_at_0022), "0022")
        assert "dispute_files" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()
