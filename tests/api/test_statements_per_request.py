"""What a create, a status read and a refund cost the database, on both databases: a create
writes its transaction without reading first (a duplicate reference is the insert's to refuse),
in one statement on PostgreSQL (tests/api/test_create_and_status.py checks the duplicate's
answer); a status read is one SELECT of the response's columns; a refund writes without reading
first too (the refund guard takes what the refund needs of its payment), one statement on
PostgreSQL, and the simulator's answer is one more. Issue 12's benchmark depends on all three,
and a read slipped into every create once without any test noticing."""
from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import event

from tests.conftest import payment_body


@pytest.fixture
def sent(app):
    """The statements this test's request threads send that touch transactions (the webhook
    delivery threads a worker round may have started send their own, about webhook events;
    a request's own writes insert them)."""
    engine, statements = app.extensions["paydesk.engine"], []
    main = threading.get_ident()

    def record(_conn, _cursor, statement, *_):
        delivery = "webhook_events" in statement and "INSERT INTO webhook_events" not in statement
        if threading.get_ident() != main and "transactions" in statement and not delivery:
            statements.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    yield statements
    event.remove(engine, "before_cursor_execute", record)


def test_a_create_reads_nothing_before_it_writes_and_is_one_statement_on_postgresql(app, sandbox, sent):
    assert sandbox.post("/transactions", payment_body()).status_code == 200  # tokens and methods cached
    sent.clear()
    created = sandbox.post("/transactions", payment_body())
    assert created.status_code == 200, created.text
    if app.extensions["paydesk.engine"].dialect.name == "postgresql":
        assert len(sent) == 1 and sent[0].startswith("WITH"), sent
    else:
        assert [s.split()[0] for s in sent] == ["INSERT"] * len(sent), sent


def test_a_status_read_is_one_select(sandbox, sent):
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    sandbox.status(tx_no)
    sent.clear()
    sandbox.status(tx_no)
    assert len(sent) == 1 and sent[0].startswith("SELECT"), sent
    assert " JOIN " not in sent[0] and "billing" not in sent[0], sent  # the response's columns alone


def a_second_refund(sandbox, captured_payment, sent, status: str = "Captured") -> None:
    """Refund a payment twice (the second answered with `status`); `sent` then holds the second
    refund's statements (the first one's read the token and the method into their caches)."""
    tx_no = captured_payment(100)
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10}).status_code == 200
    sent.clear()
    refunded = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10})
    assert refunded.status_code == 200 and refunded.json()["status"] == status, refunded.text


def test_a_refund_handed_to_a_worker_reads_nothing_and_writes_once(
        app, sandbox, captured_payment, sent, simulator_behind_a_network):
    """Write the Pending refund with the refund guard's reservation, due for a worker's provider
    call; answer. Nothing is read before: the guard's UPDATE ... RETURNING gives the refund its
    payment's columns. On PostgreSQL that is one statement, its own transaction."""
    a_second_refund(sandbox, captured_payment, sent, status="Pending")
    if app.extensions["paydesk.engine"].dialect.name == "postgresql":
        assert [s.split()[0] for s in sent] == ["WITH"], sent
        assert sent[0].startswith("WITH c AS (UPDATE transactions SET refund_reserved_minor"), sent
    else:  # plain statements: the guard, the Pending refund (its history and audit rows besides)
        assert [s.split()[0] for s in sent] == ["UPDATE", "INSERT"], sent


def test_a_refund_the_simulator_answers_reads_nothing_and_writes_twice(
        app, sandbox, captured_payment, sent):
    """The simulator answers in process, after the Pending refund's commit: its answer is
    recorded as any provider's, by one more write made only if the refund and its payment are
    still as the first write left them (checked and locked by the same statement). On
    PostgreSQL, one statement each."""
    a_second_refund(sandbox, captured_payment, sent)
    if app.extensions["paydesk.engine"].dialect.name == "postgresql":
        assert [s.split()[0] for s in sent] == ["WITH", "WITH"], sent
        assert sent[0].startswith("WITH c AS (UPDATE transactions SET refund_reserved_minor"), sent
        assert sent[1].startswith("WITH c AS (SELECT transactions.id"), sent
    else:  # plain statements: the guard, the refund; the check that both are as written, the
        # refund's answer, the payment's totals
        assert [s.split()[0] for s in sent] == ["UPDATE", "INSERT", "SELECT", "UPDATE", "UPDATE"], sent
        assert sent[2].startswith("SELECT transactions.id FROM transactions WHERE"), sent


def test_every_statement_of_a_create_and_a_refund_goes_as_postgresql_numbers_it(app, sandbox, captured_payment):
    """psycopg's default cursor converts a statement's %(name)s placeholders into PostgreSQL's
    $1, $2 ... and keeps the result only for statements under 4096 bytes and 50 values; a
    longer one is converted again on every call (0.2 ms for a 5 kB refund). The engine
    compiles every statement with $1 placeholders (SQLAlchemy's numeric_dollar paramstyle) for
    psycopg's RawCursor, which sends them as they are, whatever their size (app.store.db).
    Each request here sets every optional field, so its statements are the longest of their kind."""
    if app.extensions["paydesk.engine"].dialect.name != "postgresql":
        pytest.skip("psycopg's placeholders")

    engine, seen = app.extensions["paydesk.engine"], []

    def record(_conn, cursor, statement, parameters, *_):
        seen.append((type(cursor).__name__, "%(" in statement, "$1" in statement, isinstance(parameters, dict),
                     statement[:60]))

    tx_no = captured_payment(100)
    body = payment_body(successUrl="https://shop.example/ok", pendingUrl="https://shop.example/wait",
                        failureUrl="https://shop.example/failed",
                        userDefinedField1="one", userDefinedField2="two", userDefinedField3="three")
    body["billing"]["country"] = "DE"
    event.listen(engine, "before_cursor_execute", record)
    try:
        key = {"Idempotency-Key": uuid.uuid4().hex}
        assert sandbox.post("/transactions", body, headers=key).status_code == 200
        refunded = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10, "reason": "r" * 255,
                                                         "description": "d" * 1000},
                                headers={"Idempotency-Key": uuid.uuid4().hex})
        assert refunded.status_code == 200, refunded.text
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert seen and all(cursor == "RawCursor" for cursor, *_ in seen), seen
    assert not [s for s in seen if s[1] or s[3]], seen  # no %(name)s, no parameters by name
    # A create's, a refund's, the simulator's answer to it: the longest.
    writes = [s for s in seen if s[4].startswith("WITH")]
    assert len(writes) == 3 and all(s[2] for s in writes), writes
