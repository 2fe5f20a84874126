"""A read unit of work on PostgreSQL runs its statements in the driver's autocommit, and its
connection goes back to the pool out of autocommit, or not at all: a write unit that gets it
must still have a transaction (its BEGIN, its FOR UPDATE locks, its ROLLBACK)."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from app.payments.model import Caller, Mode
from app.store.db import make_engine
from app.store.unit_of_work import UnitOfWork


@pytest.fixture
def one_connection(database_url):
    """An engine whose pool holds one connection, so the next unit gets the one just returned."""
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite reads begin a deferred transaction; there is no autocommit to leave")
    engine = make_engine(database_url, pool_size=1)
    engine.pool._max_overflow = 0
    yield engine
    engine.dispose()


def caller(merchant) -> Caller:
    return Caller(merchant.merchant_id, Mode.SANDBOX, "test")


def test_a_read_unit_reads_in_autocommit_and_returns_its_connection_out_of_it(
        one_connection, merchant, captured_payment):
    tx_no = captured_payment(100)
    with UnitOfWork(one_connection, write=False) as uow:
        assert uow.transactions.status_of(caller(merchant), tx_no).tx_no == tx_no
        dbapi = uow.conn.connection.driver_connection
        assert dbapi.autocommit is True
        assert uow.conn.execute(text("SELECT now() = statement_timestamp()")).scalar() is True
    assert dbapi.autocommit is False
    with UnitOfWork(one_connection) as uow:
        uow.transactions.get(caller(merchant), tx_no, for_update=True)
        assert uow.conn.connection.driver_connection is dbapi  # the same connection, reused
        assert uow.conn.execute(text("SELECT now() = statement_timestamp()")).scalar() is False
        assert uow.conn.execute(text("SELECT txid_current_if_assigned() IS NULL")).scalar() is False


def test_a_read_unit_whose_connection_broke_does_not_return_it_to_the_pool(
        one_connection, merchant, captured_payment, engine_admin):
    tx_no = captured_payment(100)
    with pytest.raises(Exception):  # noqa: B017 - whichever error the lost connection raised
        with UnitOfWork(one_connection, write=False) as uow:
            dbapi = uow.conn.connection.driver_connection
            with engine_admin.connect() as admin:
                admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": dbapi.info.backend_pid})
            uow.transactions.status_of(caller(merchant), tx_no)
    with UnitOfWork(one_connection, write=False) as uow:
        assert uow.transactions.status_of(caller(merchant), tx_no).tx_no == tx_no
        assert uow.conn.connection.driver_connection is not dbapi


@pytest.fixture
def engine_admin(app):
    return app.extensions["paydesk.engine"]
