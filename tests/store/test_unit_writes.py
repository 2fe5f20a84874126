"""A unit of work's queued writes (app/store/writes.py), on both databases: sent at commit or
before the unit's next statement, rows inserted in the batch referred to before their ids are
known, two updates of one row made one, values taken from the row the batch's condition
returns, and a batch whose condition fails writes nothing."""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import bindparam, event, select, update

from app.payments.model import Caller, Kind, Mode, NotHeld, Status, new_tx_no
from app.store.db import make_engine
from app.store.unit_of_work import UnitOfWork
from app.store.tables import status_history, transactions
from app.store.writes import Returned


@pytest.fixture
def engine(app):
    return app.extensions["paydesk.engine"]


def statements_sent(engine) -> list[str]:
    """The statements this test's thread sends on the engine from now on: the app's request log
    writer sends its own on the same engine from a thread of its own, whenever it flushes."""
    sent: list[str] = []
    test_thread = threading.get_ident()

    def record(_conn, _cursor, statement, *_):
        if threading.get_ident() == test_thread:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    return sent


def payment(app, merchant, captured_payment, amount=100):
    tx_no = captured_payment(amount)
    deps = app.extensions["paydesk"]
    with deps.uow(write=False) as uow:
        return uow.transactions.get(Caller(merchant.merchant_id, Mode.SANDBOX, "test"), tx_no)


def test_a_unit_of_writes_alone_is_one_statement_on_postgresql(app, engine, merchant, captured_payment):
    tx = payment(app, merchant, captured_payment)
    sent = statements_sent(engine)
    with UnitOfWork(engine) as uow:
        tx.status, tx.provider_message = Status.CAPTURED, "noted again"
        uow.transactions.save_state(tx)
        uow.record_history(tx, Status.CAPTURED, "test", "queued")
        assert sent == []  # nothing goes before commit()
        uow.commit()
    if engine.dialect.name == "postgresql":
        assert len(sent) == 1 and sent[0].startswith("WITH")
    else:
        assert [s.split()[0] for s in sent] == ["BEGIN", "UPDATE", "INSERT"]
    with UnitOfWork(engine, write=False) as uow:
        note = uow.conn.execute(select(status_history.c.note).where(
            status_history.c.transaction_id == tx.id).order_by(status_history.c.id.desc())).scalar()
    assert note == "queued"


def test_a_read_in_the_unit_sees_its_queued_writes(app, engine, merchant, captured_payment):
    tx = payment(app, merchant, captured_payment)
    with UnitOfWork(engine) as uow:
        tx.provider_message = "read back"
        uow.transactions.save_state(tx)
        assert uow.transactions.get_for_worker(tx.id).provider_message == "read back"
        uow.commit()


def test_a_row_inserted_in_the_batch_is_referred_to_before_its_id_is_known(
        app, engine, merchant, captured_payment):
    original = payment(app, merchant, captured_payment)
    refund = replace(original, id=None, tx_no=new_tx_no(Kind.REFUND), kind=Kind.REFUND,
                     status=Status.PENDING, amount=Decimal("1.00"), original_id=original.id)
    with UnitOfWork(engine) as uow:
        uow.transactions.add(refund)
        uow.record_history(refund, None, "test")
        refund.status = Status.CAPTURED
        uow.transactions.save_state(refund)  # an update of the row inserted above: folded into it
        assert refund.id is None
        uow.commit()
    assert refund.id is not None
    with UnitOfWork(engine, write=False) as uow:
        assert uow.transactions.get_for_worker(refund.id).status is Status.CAPTURED
        history = uow.conn.execute(select(status_history.c.to_status).where(
            status_history.c.transaction_id == refund.id)).scalars().all()
    assert history == ["Pending"]  # the history row took the new row's id, with what it was given


def test_two_updates_of_one_row_in_a_batch_are_both_made(app, engine, merchant, captured_payment):
    original = payment(app, merchant, captured_payment)
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "test")
    with UnitOfWork(engine) as uow:
        held = uow.transactions.reserve_refund(caller, original.tx_no, Decimal("40"))
        refund = replace(held, id=-1, kind=Kind.REFUND, amount=Decimal("40.00"),
                         status=Status.CAPTURED, original_id=held.id)
        after = uow.transactions.settle_refund(refund, held)  # the refund totals, queued
        after.provider_message = "both kept"
        uow.transactions.save_state(after)  # the same row's state, queued after them
        uow.commit()
    with UnitOfWork(engine, write=False) as uow:
        row = uow.conn.execute(select(transactions.c.refund_reserved_minor,
                                      transactions.c.refund_captured_minor,
                                      transactions.c.provider_message)
                               .where(transactions.c.id == original.id)).one()
    assert tuple(row) == (4000, 4000, "both kept")


@dataclass
class Noted:
    """A row the test inserts, which takes its id and its note when the batch is sent."""

    id: int | None
    note: object


_NOTE_ON = (update(transactions).where(transactions.c.id == bindparam("payment_id"))
            .values(provider_message="noted").returning(transactions.c.id, transactions.c.currency))


def test_a_write_takes_a_value_from_the_row_its_condition_returns_before_it_is_known(
        app, engine, merchant, captured_payment):
    original = payment(app, merchant, captured_payment)
    noted, returned = Noted(None, Returned("currency")), []
    with UnitOfWork(engine) as uow:
        uow.writes.only_if(_NOTE_ON, {"payment_id": original.id}, then=returned.append)
        uow.writes.insert(status_history, dict(
            transaction_id=original.id, to_status="Captured", source="test", note=Returned("currency"),
            at=datetime.now(UTC)), row=noted)
        uow.commit()
    assert noted.note == "EUR" and noted.id is not None  # the object took the row's value too
    assert [(row["id"], row["currency"]) for row in returned] == [(original.id, "EUR")]
    with UnitOfWork(engine, write=False) as uow:
        note = uow.conn.execute(select(status_history.c.note).where(status_history.c.id == noted.id)).scalar()
    assert note == "EUR"


def test_a_batch_whose_condition_fails_writes_nothing_and_says_so(app, engine, merchant,
                                                                  captured_payment):
    original = payment(app, merchant, captured_payment, amount=100)
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "test")
    with pytest.raises(NotHeld):
        with UnitOfWork(engine) as uow:
            uow.transactions.reserve_refund_with_writes(caller, original.tx_no, Decimal("100.01"))
            uow.transactions.get_for_worker(original.id)  # a statement: the batch goes first
    with pytest.raises(NotHeld):
        with UnitOfWork(engine) as uow:
            uow.transactions.reserve_refund_with_writes(caller, original.tx_no, Decimal("100.01"))
            original.provider_message = "must not be written"
            uow.transactions.save_state(original)
            uow.record_history(original, Status.CAPTURED, "test", "must not be written")
            uow.commit()
    with UnitOfWork(engine, write=False) as uow:
        row = uow.conn.execute(select(transactions.c.refund_reserved_minor,
                                      transactions.c.provider_message)
                               .where(transactions.c.id == original.id)).one()
        notes = uow.conn.execute(select(status_history.c.note).where(
            status_history.c.transaction_id == original.id)).scalars().all()
    assert row.refund_reserved_minor == 0
    assert row.provider_message != "must not be written"
    assert "must not be written" not in notes


def test_a_unit_leaves_nothing_of_itself_behind_when_it_ends(engine):
    """Whatever a unit registers for its connection's statements goes when the unit ends, however
    it ends: a thousand units later, nothing of theirs is kept. The units run on an engine of
    this test's own: the app's engine also serves its request log writer's thread, whose unit
    may be open at the moment of counting."""
    from app.store.unit_of_work import _WRITE_UNITS

    own_engine = make_engine(engine.url.render_as_string(hide_password=False), pool_size=1)

    def units_of_own_engine() -> int:
        return sum(1 for unit in list(_WRITE_UNITS.values()) if unit.engine is own_engine)

    try:
        for number in range(1000):
            try:
                with UnitOfWork(own_engine) as uow:
                    uow.conn.execute(select(transactions.c.id).limit(1)).all()
                    if number % 2:
                        raise RuntimeError("the unit ends with an error")
                    uow.commit()
            except RuntimeError:
                pass
        assert units_of_own_engine() == 0
    finally:
        own_engine.dispose()


def test_a_unit_of_thousands_of_writes_is_sent_in_parts_of_one_transaction(
        app, engine, merchant, captured_payment):
    """More writes than one PostgreSQL statement may carry (1,664 columns in its answer, 65,535
    parameters): a batch of 1,700 refunds, each with its history row referring to it, is sent in
    parts, the rows of an earlier part referred to by their ids, all in one transaction."""
    original = payment(app, merchant, captured_payment)
    refunds = [replace(original, id=None, tx_no=new_tx_no(Kind.REFUND), kind=Kind.REFUND,
                       status=Status.PENDING, amount=Decimal("0.01"), original_id=original.id,
                       reference=f"part-{number}") for number in range(1700)]
    sent = statements_sent(engine)
    with UnitOfWork(engine) as uow:
        for refund in refunds:
            uow.transactions.add(refund)
        for refund in refunds:  # each refers to a row inserted in the batch, most in another part
            uow.record_history(refund, None, "test", "in parts")
        uow.commit()
    if engine.dialect.name == "postgresql":
        # 3,400 writes, 100 a statement (the driver's BEGIN and COMMIT are not cursor statements)
        assert len(sent) == 34 and all(statement.startswith("WITH") for statement in sent)
    ids = [refund.id for refund in refunds]
    assert None not in ids and len(set(ids)) == 1700
    with UnitOfWork(engine, write=False) as uow:
        noted = dict(uow.conn.execute(select(status_history.c.transaction_id, status_history.c.note)
                                      .where(status_history.c.transaction_id.in_(ids))).all())
    assert noted == {tx_id: "in parts" for tx_id in ids}


def test_a_unit_sent_in_parts_writes_nothing_when_a_later_part_fails(
        app, engine, merchant, captured_payment):
    original = payment(app, merchant, captured_payment)
    refunds = [replace(original, id=None, tx_no=new_tx_no(Kind.REFUND), kind=Kind.REFUND,
                       status=Status.PENDING, amount=Decimal("0.01"), original_id=original.id,
                       reference=f"whole-{number}") for number in range(1700)]
    refunds[-1] = replace(refunds[-1], tx_no=refunds[0].tx_no)  # the last one's txNo is taken
    with pytest.raises(Exception), UnitOfWork(engine) as uow:  # noqa: B017 - the driver's error
        for refund in refunds:
            uow.transactions.add(refund)
        uow.commit()
    with UnitOfWork(engine, write=False) as uow:
        made = uow.conn.execute(select(transactions.c.id).where(
            transactions.c.tx_no.in_([refund.tx_no for refund in refunds]))).all()
    assert made == []


def test_the_built_statements_are_kept_to_a_bound(app, engine, merchant, captured_payment, monkeypatch):
    """Units of many sizes build a statement for each shape of batch; past MAX_BUILT the cache
    starts again instead of growing, and what it builds then is still right."""
    from app.store import writes
    monkeypatch.setattr(writes, "_STATEMENTS", {})
    monkeypatch.setattr(writes, "MAX_BUILT", 3)
    original = payment(app, merchant, captured_payment)
    for size in range(1, 7):  # six shapes of batch
        refunds = [replace(original, id=None, tx_no=new_tx_no(Kind.REFUND), kind=Kind.REFUND,
                           status=Status.PENDING, amount=Decimal("0.01"), original_id=original.id,
                           reference=f"shape-{size}-{number}") for number in range(size)]
        with UnitOfWork(engine) as uow:
            for refund in refunds:
                uow.transactions.add(refund)
                uow.record_history(refund, None, "test", f"shape {size}")
            uow.commit()
        assert len(writes._STATEMENTS) <= 3
        with UnitOfWork(engine, write=False) as uow:
            noted = uow.conn.execute(select(status_history.c.note).where(
                status_history.c.transaction_id.in_([refund.id for refund in refunds]))).scalars().all()
        assert noted == [f"shape {size}"] * size
