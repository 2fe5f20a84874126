"""A request whose database connection the server drops is run again only if it committed nothing.

The server drops the connection in the middle of the request here (pg_terminate_backend
from an event on the statement), the one case the checkout check cannot see coming.
"""
from __future__ import annotations

import select
import time
import uuid

import pytest
from sqlalchemy import create_engine, event, func, text
from sqlalchemy import select as sql_select

from app.store.merchants import create_merchant
from app.store.tables import transactions
from tests.conftest import make_app, payment_body
from tests.support.databases import postgres_admin_url

from .conftest import bearer

pytestmark = pytest.mark.postgres


@pytest.fixture
def app(postgres_url):
    app = make_app(postgres_url, PROPAGATE_EXCEPTIONS=False)
    yield app
    app.extensions["paydesk.engine"].dispose()


@pytest.fixture
def merchant(app):
    with app.extensions["paydesk"].uow() as uow:
        created = create_merchant(uow, f"Merchant {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    return created


@pytest.fixture
def token(merchant) -> str:
    return merchant.sandbox_token


@pytest.fixture
def admin():
    engine = create_engine(postgres_admin_url(), isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()


class ConnectionKiller:
    """Has the server drop the connection just before the first statement starting with `sql`
    (or the first COMMIT); with `after_commit`, the first such statement after a COMMIT."""

    def __init__(self, app, admin, sql: str, *, after_commit: bool = False):
        self.admin = admin
        self.sql = sql
        self.armed = not after_commit
        self.seen = 0  # statements matching `sql` sent (or tried) while armed
        self.killed = False
        engine = app.extensions["paydesk.engine"]
        event.listen(engine, "commit", self._on_commit)
        event.listen(engine, "before_cursor_execute", self._on_statement)

    def _on_statement(self, conn, _cursor, statement, *_args):
        if self.armed and statement.startswith(self.sql):
            self.seen += 1
            self._kill_once(conn)

    def _on_commit(self, conn):
        if self.sql == "COMMIT":
            self.seen += 1
            self._kill_once(conn)
        self.armed = True

    def _kill_once(self, conn) -> None:
        if self.killed:
            return
        self.killed = True
        dbapi_connection = conn.connection.dbapi_connection
        with self.admin.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"),
                          {"pid": dbapi_connection.info.backend_pid})
        poller = select.poll()  # wait for the server's goodbye, so the statement surely meets it
        poller.register(dbapi_connection.pgconn.socket, select.POLLIN)
        poller.poll(2000)
        time.sleep(0.02)


def stored_with_reference(app, reference: str) -> int:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(sql_select(func.count()).where(
            transactions.c.reference == reference)).scalar_one()


def test_a_read_whose_connection_is_dropped_is_run_again(app, admin, token, caplog):
    killer = ConnectionKiller(app, admin, "SELECT transactions.tx_no")  # the status read
    response = app.test_client().get("/api/v1/transactions/SBX-CAPTURED/status", headers=bearer(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["Status"] == "Captured"
    assert (killer.killed, killer.seen) == (True, 2)
    assert "running it again" in caplog.text


# A create with an Idempotency-Key first claims the key in a unit of work of its own (BEGIN,
# INSERT, COMMIT): a write whose connection can be lost before its COMMIT. (The create itself is
# one statement that commits by itself: see the last tests.)
def with_key(token: str) -> dict:
    return {**bearer(token), "Idempotency-Key": uuid.uuid4().hex}


def test_a_write_rolled_back_with_its_connection_is_run_again_once(app, admin, token):
    killer = ConnectionKiller(app, admin, "INSERT INTO idempotency_keys")
    body = payment_body()
    response = app.test_client().post("/api/v1/transactions", json=body, headers=with_key(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert (killer.killed, killer.seen) == (True, 2)
    assert stored_with_reference(app, body["reference"]) == 1


def test_a_write_whose_commit_may_have_reached_the_server_is_not_run_again(app, admin, token):
    killer = ConnectionKiller(app, admin, "COMMIT")
    body = payment_body()
    response = app.test_client().post("/api/v1/transactions", json=body, headers=with_key(token))
    assert response.status_code == 503
    assert response.get_json() == {"error": "Service temporarily unavailable"}
    assert response.headers["Retry-After"] == "1"
    assert killer.seen == 1  # one COMMIT: the request was not run again
    assert stored_with_reference(app, body["reference"]) == 0  # (here it had not reached it)


def refunds_of_sbx_captured(app, merchant) -> list[str]:
    """The statuses of the refunds of the merchant's sandbox payment SBX-CAPTURED."""
    originals = transactions.alias()
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(
            sql_select(transactions.c.status)
            .join(originals, originals.c.id == transactions.c.original_id)
            .where(originals.c.tx_no == "SBX-CAPTURED", originals.c.mode == "sandbox",
                   originals.c.merchant_id == merchant.merchant_id)).scalars().all()


def test_a_request_that_committed_before_losing_its_connection_is_not_run_again(
        app, admin, merchant):
    # A refund under an Idempotency-Key claims the key (its own unit), commits the Pending refund
    # (one statement, the key linked to it), then stores its answer under the key: the connection
    # is dropped at that last statement, after the refund's commit. (The simulator rehearses a
    # provider behind a network here: the request hands the refund to a worker.)
    app.extensions["paydesk"].providers.simulators.by_name["simulator"].latency = 0.001
    killer = ConnectionKiller(app, admin, "UPDATE idempotency_keys", after_commit=True)
    response = app.test_client().post(
        "/api/v1/transactions/refund", json={"txNo": "SBX-CAPTURED", "amount": 5},
        headers=with_key(merchant.sandbox_token))
    assert response.status_code == 503, response.get_data(as_text=True)
    assert (killer.killed, killer.seen) == (True, 1)
    refunds = refunds_of_sbx_captured(app, merchant)
    assert refunds == ["Pending"]  # one refund, which the worker finishes: never a second one


def test_a_unit_sent_as_one_statement_is_not_run_again_when_its_connection_drops_at_it(
        app, admin, token):
    # Without a key, a create's unit of work is one statement in autocommit: it is its own
    # COMMIT, so once it may have gone out the request is not run again (the client's retry
    # with the same reference finds the payment, or creates it).
    killer = ConnectionKiller(app, admin, "WITH")
    body = payment_body()
    response = app.test_client().post("/api/v1/transactions", json=body, headers=bearer(token))
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.get_json() == {"error": "Service temporarily unavailable"}
    assert (killer.killed, killer.seen) == (True, 1)
    assert stored_with_reference(app, body["reference"]) == 0  # (here it had not reached it)
    again = app.test_client().post("/api/v1/transactions", json=body, headers=bearer(token))
    assert again.status_code == 200, again.get_data(as_text=True)
    assert stored_with_reference(app, body["reference"]) == 1


def test_a_refund_sent_as_one_statement_is_not_run_again_when_its_connection_drops_at_it(
        app, admin, merchant):
    # The Pending refund and its reservation by the refund guard are one statement in
    # autocommit, its own COMMIT; once it may have gone out the request is not run again (the
    # client's retry, with an Idempotency-Key, gets the first answer or makes it).
    killer = ConnectionKiller(app, admin, "WITH")
    refund = {"txNo": "SBX-CAPTURED", "amount": 5}
    response = app.test_client().post("/api/v1/transactions/refund", json=refund,
                                      headers=bearer(merchant.sandbox_token))
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.get_json() == {"error": "Service temporarily unavailable"}
    assert (killer.killed, killer.seen) == (True, 1)
    refunds = refunds_of_sbx_captured(app, merchant)
    assert refunds == []  # (here it had not reached the server)
    again = app.test_client().post("/api/v1/transactions/refund", json=refund,
                                   headers=bearer(merchant.sandbox_token))
    assert again.status_code == 200 and again.get_json()["status"] == "Captured", again.get_data(as_text=True)
