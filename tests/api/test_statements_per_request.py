"""What a create and a status read cost the database, on both databases: a create writes its
transaction without reading first (a duplicate reference is the insert's to refuse), in one
statement on PostgreSQL (tests/api/test_create_and_status.py checks the duplicate's answer);
a status read is one SELECT. Issue 12's benchmark depends on both, and a
read slipped into every create once without any test noticing."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import event

from tests.conftest import payment_body


@pytest.fixture
def sent(app):
    """The statements this test's request threads send that touch transactions (the webhook
    delivery threads a worker round may have started send their own, about webhook events)."""
    engine, statements = app.extensions["paydesk.engine"], []
    main = threading.get_ident()

    def record(_conn, _cursor, statement, *_):
        if threading.get_ident() != main and "transactions" in statement and "webhook_events" not in statement:
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
