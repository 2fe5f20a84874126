"""Statements sent straight to the driver (app/store/driver.py), on both databases: the same rows
as SQLAlchemy's execution gives (types' processors applied), listeners see the statement, and a
driver error comes out as SQLAlchemy's, the lost connection invalidated, as app.errors expects."""
from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, event, exc, insert, select, text

from app.store import driver
from app.store.tables import merchants, transactions


@pytest.fixture
def engine(app):
    return app.extensions["paydesk.engine"]


BY_NAME = select(merchants.c.id, merchants.c.name, merchants.c.created_at).where(
    merchants.c.name == bindparam("name"))
INSERT_MERCHANT = insert(merchants).values(
    name=bindparam("name"), inbox_key=bindparam("inbox_key"), created_at=bindparam("created_at"),
).returning(merchants.c.id)


def test_rows_are_what_sqlalchemy_reads_with_the_types_processors_applied(engine, merchant):
    with engine.connect() as conn:
        name = conn.execute(select(merchants.c.name).where(merchants.c.id == merchant.merchant_id)).scalar()
        expected = [dict(row._mapping) for row in conn.execute(BY_NAME, {"name": name})]
        found = driver.rows(conn, BY_NAME, {"name": name})
    assert found == expected and len(found) == 1
    assert list(found[0]) == ["id", "name", "created_at"]  # the statement's columns, in order
    assert found[0]["created_at"].tzinfo is UTC  # UtcDateTime's result processor
    with engine.connect() as conn:
        assert driver.rows(conn, BY_NAME, {"name": f"nobody {uuid.uuid4()}"}) == []


def test_bound_values_go_through_their_types_bind_processors(engine):
    naive = datetime(2026, 1, 1)  # UtcDateTime refuses a naive datetime before it is sent
    with engine.connect() as conn, pytest.raises(exc.StatementError, match="naive datetime"):
        driver.rows(conn, INSERT_MERCHANT, {"name": f"m {uuid.uuid4()}", "inbox_key": uuid.uuid4().hex,
                                            "created_at": naive})


def test_before_and_after_cursor_execute_listeners_see_the_statement(engine, merchant):
    seen = []

    def before(_conn, _cursor, statement, params, *_):
        values = params.values() if isinstance(params, dict) else params  # SQLite's are positional
        seen.append(("before", statement.split()[0], "someone" in values))

    def after(_conn, _cursor, statement, *_):
        seen.append(("after", statement.split()[0]))

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        with engine.connect() as conn:
            driver.rows(conn, BY_NAME, {"name": "someone"})
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)
    seen = [entry for entry in seen if entry[1] != "BEGIN"]  # (SQLite's, app.store.db)
    assert seen == [("before", "SELECT", True), ("after", "SELECT")]


def test_a_constraint_violation_is_sqlalchemys_integrity_error_and_the_connection_stays(engine):
    values = {"name": f"m {uuid.uuid4()}", "inbox_key": uuid.uuid4().hex,
              "created_at": datetime.now(UTC)}
    with engine.connect() as conn:
        conn.begin()
        driver.rows(conn, INSERT_MERCHANT, values)
        conn.commit()
        conn.begin()
        with pytest.raises(exc.IntegrityError):
            driver.rows(conn, INSERT_MERCHANT, values)  # the name is taken
        conn.rollback()
        assert not conn.invalidated
        assert driver.rows(conn, BY_NAME, {"name": values["name"]})[0]["name"] == values["name"]


def test_a_lost_connection_is_invalidated_and_the_next_one_works(engine, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has no connection to lose")
    with engine.connect() as conn:
        pid = conn.connection.dbapi_connection.info.backend_pid
        with engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(exc.DBAPIError) as raised:
            driver.rows(conn, BY_NAME, {"name": "anyone"})
        assert raised.value.connection_invalidated and conn.invalidated
    with engine.connect() as conn:
        assert driver.rows(conn, BY_NAME, {"name": "anyone"}) == []


def test_a_statement_rendered_per_execution_is_refused_on_postgresql(engine, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite runs every statement through SQLAlchemy")
    expanding = select(transactions.c.id).where(transactions.c.tx_no.in_(bindparam("numbers")))
    with engine.connect() as conn, pytest.raises(ValueError, match="rendered per execution"):
        driver.rows(conn, expanding, {"numbers": ["PAY-1"]})


def test_rows_of_textual_sql_are_keyed_by_the_servers_column_names(engine, merchant):
    with engine.connect() as conn:
        found = driver.rows(conn, text("SELECT id, name AS merchant_name FROM merchants WHERE id = :id"),
                            {"id": merchant.merchant_id})
    assert list(found[0]) == ["id", "merchant_name"] and found[0]["id"] == merchant.merchant_id
