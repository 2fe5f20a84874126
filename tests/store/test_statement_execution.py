"""The hot statements, executed through SQLAlchemy's public API (`Connection.execute`), on both
databases: a unit's reads (UnitOfWork.rows) and its batch of writes (app/store/writes.py) give
rows keyed by the statement's columns with the types' processors applied, listeners see the
statements, and an error comes out as SQLAlchemy's, a lost connection invalidated, as
app.store.db and app.errors expect."""
from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from sqlalchemy import bindparam, event, exc, select, text

from app.payments.model import Caller, Mode, Status
from app.store.unit_of_work import UnitOfWork
from app.store.tables import merchants
from app.store.writes import Writes


@pytest.fixture
def engine(app):
    return app.extensions["paydesk.engine"]


BY_NAME = select(merchants.c.id, merchants.c.name, merchants.c.created_at).where(
    merchants.c.name == bindparam("name"))


def new_merchant_values(created_at=None) -> dict:
    return {"name": f"m {uuid.uuid4()}", "inbox_key": uuid.uuid4().hex,
            "created_at": created_at or datetime.now(UTC)}


def send(conn, engine, values: dict) -> SimpleNamespace:
    """values inserted into merchants by a batch of writes, as a unit sends them; the new row."""
    row = SimpleNamespace(id=None)
    writes = Writes()
    writes.insert(merchants, values, row=row)
    writes.send(conn, postgres=engine.dialect.name == "postgresql")
    return row


def test_rows_are_keyed_by_the_statements_columns_with_the_types_processors_applied(engine, merchant):
    with UnitOfWork(engine, write=False) as uow:
        name = uow.conn.execute(select(merchants.c.name).where(
            merchants.c.id == merchant.merchant_id)).scalar()
        found = uow.rows(BY_NAME, {"name": name})
        assert uow.rows(BY_NAME, {"name": f"nobody {uuid.uuid4()}"}) == []
    assert len(found) == 1 and found[0]["id"] == merchant.merchant_id
    assert list(found[0]) == ["id", "name", "created_at"]  # the statement's columns, in order
    assert found[0]["created_at"].tzinfo is UTC  # UtcDateTime's result processor


def test_rows_of_textual_sql_are_keyed_by_the_servers_column_names(engine, merchant):
    with UnitOfWork(engine, write=False) as uow:
        found = uow.rows(text("SELECT id, name AS merchant_name FROM merchants WHERE id = :id"),
                         {"id": merchant.merchant_id})
    assert list(found[0]) == ["id", "merchant_name"] and found[0]["id"] == merchant.merchant_id


def test_a_statement_with_expanding_parameters_runs_too(engine, merchant):
    expanding = select(merchants.c.id).where(merchants.c.id.in_(bindparam("ids", expanding=True)))
    with UnitOfWork(engine, write=False) as uow:
        found = uow.rows(expanding, {"ids": [merchant.merchant_id, -1]})
    assert [row["id"] for row in found] == [merchant.merchant_id]


def test_a_write_units_read_sees_its_queued_writes_first(engine, merchant, captured_payment):
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "test")
    tx_no = captured_payment(100)
    with UnitOfWork(engine) as uow:
        tx = uow.transactions.get(caller, tx_no)  # UnitOfWork.rows
        tx.provider_message = "queued, then read"
        uow.transactions.save_state(tx)
        assert uow.transactions.get(caller, tx_no).provider_message == "queued, then read"
        assert uow.transactions.status_of(caller, tx_no).status is Status.CAPTURED


def test_a_batch_of_writes_binds_values_through_their_types_bind_processors(engine):
    naive = datetime(2026, 1, 1)  # UtcDateTime refuses a naive datetime before it is sent
    with engine.connect() as conn, pytest.raises(exc.StatementError, match="naive datetime"):
        conn.begin()
        send(conn, engine, new_merchant_values(created_at=naive))


def test_before_and_after_cursor_execute_listeners_see_the_statements(engine, merchant):
    seen = []
    test_thread = threading.get_ident()  # (the app's request log writer uses the engine too)

    def before(_conn, _cursor, statement, params, *_):
        if threading.get_ident() == test_thread:
            values = params.values() if isinstance(params, dict) else params  # SQLite's are positional
            seen.append(("before", statement.split()[0], "someone" in values))

    def after(_conn, _cursor, statement, *_):
        if threading.get_ident() == test_thread:
            seen.append(("after", statement.split()[0]))

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        with UnitOfWork(engine, write=False) as uow:
            uow.rows(BY_NAME, {"name": "someone"})
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)
    seen = [entry for entry in seen if entry[1] != "BEGIN"]  # (SQLite's, app.store.db)
    assert seen == [("before", "SELECT", True), ("after", "SELECT")]


def test_a_constraint_violation_is_sqlalchemys_integrity_error_and_the_connection_stays(engine):
    values = new_merchant_values()
    with engine.connect() as conn:
        conn.begin()
        assert send(conn, engine, dict(values)).id is not None  # the batch's new id
        conn.commit()
        conn.begin()
        with pytest.raises(exc.IntegrityError):
            send(conn, engine, dict(values))  # the name is taken
        conn.rollback()
        assert not conn.invalidated
        assert conn.execute(BY_NAME, {"name": values["name"]}).mappings().one()["name"] == values["name"]


def test_a_lost_connection_is_invalidated_and_the_next_one_works(engine, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has no connection to lose")
    with UnitOfWork(engine, write=False) as uow:
        pid = uow.conn.connection.dbapi_connection.info.backend_pid
        with engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(exc.DBAPIError) as raised:
            uow.rows(BY_NAME, {"name": "anyone"})
        assert raised.value.connection_invalidated and uow.conn.invalidated
    with UnitOfWork(engine, write=False) as uow:
        assert uow.rows(BY_NAME, {"name": "anyone"}) == []


def test_a_lost_connection_during_a_batch_of_writes_is_invalidated_too(engine, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has no connection to lose")
    with engine.connect() as conn:
        conn.begin()
        pid = conn.connection.dbapi_connection.info.backend_pid
        with engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(exc.DBAPIError) as raised:
            send(conn, engine, new_merchant_values())
        assert raised.value.connection_invalidated and conn.invalidated
