"""Pooled PostgreSQL connections: one the server dropped is replaced before use, a sound busy one is not pinged."""
from __future__ import annotations

import time

import psycopg
import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import DisconnectionError

from app.store.db import make_engine
from app.store.unit_of_work import UnitOfWork
from tests.support.databases import postgres_admin_url

IDLE_AFTER = 0.2


@pytest.fixture
def admin():
    engine = create_engine(postgres_admin_url(), isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()


@pytest.fixture
def engine(postgres_url):
    engine = make_engine(postgres_url, pool_size=1, ping_idle_after=IDLE_AFTER)
    yield engine
    engine.dispose()


def backend_pid(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT pg_backend_pid()")).scalar_one()


def terminate(admin, pid: int) -> None:
    with admin.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    time.sleep(0.05)  # the backend is gone once its socket closes


class CountingCursor(psycopg.Cursor):
    """A cursor that notes every statement it sends, pings included."""

    sent: list[str] = []

    def execute(self, query, params=None, **kwargs):
        CountingCursor.sent.append(str(query))
        return super().execute(query, params, **kwargs)


def count_statements(engine) -> list[str]:
    """The statements the engine's connections send from now on (it must not have connected yet)."""

    @event.listens_for(engine, "connect")
    def _counting(dbapi_connection, _record):
        dbapi_connection.cursor_factory = CountingCursor

    CountingCursor.sent = []
    return CountingCursor.sent


def test_a_connection_killed_while_idle_is_replaced_before_use(engine, admin):
    first = backend_pid(engine)
    terminate(admin, first)
    time.sleep(IDLE_AFTER * 1.5)
    assert backend_pid(engine) != first  # no error reached the caller


def test_the_ping_leaves_the_connection_ready_for_reads_and_writes(engine):
    backend_pid(engine)
    time.sleep(IDLE_AFTER * 1.5)
    with UnitOfWork(engine, write=False) as uow:  # autocommit: the ping left no transaction open
        assert uow.conn.execute(text("SELECT 1")).scalar_one() == 1
    time.sleep(IDLE_AFTER * 1.5)
    with UnitOfWork(engine) as uow:
        assert uow.conn.execute(text("SELECT txid_current_if_assigned() IS NULL")).scalar_one()
        uow.commit()


def test_a_connection_in_steady_use_is_not_pinged(engine):
    sent = count_statements(engine)
    backend_pid(engine)  # connects: the dialect's own first queries
    sent.clear()
    for _ in range(5):
        backend_pid(engine)
    assert sent == ["SELECT pg_backend_pid()"] * 5
    time.sleep(IDLE_AFTER * 1.5)
    backend_pid(engine)
    assert sent[5:] == ["SELECT 1", "SELECT pg_backend_pid()"]


def invalidations(engine) -> list[BaseException]:
    """The errors for which the pool throws a connection away, from now on."""
    seen = []

    @event.listens_for(engine.pool, "invalidate")
    def _invalidated(_dbapi_connection, _record, exception):
        seen.append(exception)

    return seen


def test_a_connection_killed_while_in_steady_use_is_replaced_before_the_first_request(engine, admin):
    """No ping within IDLE_AFTER of the last use, but the server's goodbye is seen at checkout."""
    first = backend_pid(engine)
    thrown_away = invalidations(engine)
    terminate(admin, first)
    assert backend_pid(engine) != first  # the first request after the kill succeeds
    [reason] = thrown_away
    assert isinstance(reason, DisconnectionError)  # found dead at checkout and replaced
