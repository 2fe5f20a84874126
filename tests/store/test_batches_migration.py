"""Migration 0028 adds batches and batch_rows, and its downgrade removes them again, on both databases."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from app.cli import alembic_config, upgrade_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0027(request, tmp_path, revision_templates):
    """A new database migrated up to 0027, before batches were stored."""
    yield from revision_templates.database_at("0027", request.param, tmp_path)


def test_the_migration_adds_batches_and_its_downgrade_removes_them(database_at_0027):
    engine = create_engine(database_at_0027)
    try:
        upgrade_database(database_at_0027)
        found = inspect(engine)

        def indexes(table: str) -> list[tuple]:
            """Its own indexes (PostgreSQL also lists those of its unique constraints)."""
            return sorted((i["name"], tuple(i["column_names"])) for i in found.get_indexes(table)
                          if "duplicates_constraint" not in i)

        assert {c["name"] for c in found.get_columns("batches")} == {
            "id", "public_id", "merchant_id", "mode", "kind", "state", "source", "file_name", "row_count",
            "totals", "request_key", "approval_id", "created_by", "created_at", "submitted_by",
            "submitted_at", "approved_by", "approved_at", "finished_at", "lease_until"}
        assert {c["name"] for c in found.get_columns("batch_rows")} == {
            "id", "batch_id", "row_number", "input", "errors", "state", "tx_no"}
        assert indexes("batches") == [
            ("ix_batches_listing", ("merchant_id", "mode", "created_at")),
            ("ix_batches_state", ("state", "lease_until"))]
        assert indexes("batch_rows") == [
            ("ix_batch_rows_progress", ("batch_id", "state", "row_number")),
            ("ix_batch_rows_tx_no", ("tx_no",))]
        assert sorted(tuple(u["column_names"]) for u in found.get_unique_constraints("batches")) == [
            ("merchant_id", "mode", "request_key"), ("public_id",)]
        assert [tuple(u["column_names"]) for u in found.get_unique_constraints("batch_rows")] == [
            ("batch_id", "row_number")]
        command.downgrade(alembic_config(database_at_0027), "0027")
        assert {"batches", "batch_rows"}.isdisjoint(inspect(engine).get_table_names())
    finally:
        engine.dispose()
