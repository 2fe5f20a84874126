"""SQLite's reference search goes through its FTS5 trigram index (migration 0007) and finds
exactly what the substring condition finds; the index follows inserts, changes and deletes."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import delete, insert, text, update

from app.cli import upgrade_database
from app.payments.model import Caller, Mode
from app.store import listing
from app.store.listing import TransactionFilter, list_transactions, reference_search
from app.store.merchants import create_merchant
from app.store.tables import transactions
from app.util import utcnow
from tests.conftest import make_app


@pytest.fixture
def sqlite_app(tmp_path):
    url = f"sqlite:///{tmp_path / 'search.db'}"
    upgrade_database(url)
    app = make_app(url)
    yield app
    app.extensions["paydesk.engine"].dispose()


@pytest.fixture
def merchant_id(sqlite_app) -> int:
    with sqlite_app.extensions["paydesk"].uow() as uow:
        created = create_merchant(uow, f"Search {uuid.uuid4().hex[:8]}", "http://paydesk.test")
        uow.commit()
    return created.merchant_id


REFERENCES = ["ORD-1001-blue", "ord-1002-Blue", "INV/2026/77", 'say "hi" 50%_off', "ORD-2001-red",
              "Ünïcode-ref", "ab"]


@pytest.fixture
def engine(sqlite_app, merchant_id):
    engine = sqlite_app.extensions["paydesk.engine"]
    now = utcnow()
    with engine.begin() as conn:
        for number, reference in enumerate(REFERENCES):
            conn.execute(insert(transactions).values(
                merchant_id=merchant_id, mode="live", tx_no=f"PAY-SEARCH{number:04d}", kind="payment",
                status="Pending", amount_minor=100, currency="EUR", reference=reference,
                payment_method="card", created_at=now + timedelta(seconds=number),
                updated_at=now))
    return engine


def found(engine, merchant_id: int, term: str, **kwargs) -> list[str]:
    with engine.connect() as conn:
        page = list_transactions(conn, Caller(merchant_id, Mode.LIVE, "test"),
                                 TransactionFilter(search=term), **kwargs)
    return sorted(row.reference for row in page.rows)


def found_by_substring(engine, merchant_id: int, term: str) -> list[str]:
    """The same listing with the index bypassed: reference LIKE '%term%'."""
    with engine.connect() as conn:
        original = listing.reference_search
        listing.reference_search = lambda *_: None
        try:
            page = list_transactions(conn, Caller(merchant_id, Mode.LIVE, "test"),
                                     TransactionFilter(search=term))
        finally:
            listing.reference_search = original
    return sorted(row.reference for row in page.rows)


@pytest.mark.parametrize("term", ["ORD-", "blue", "BLUE", "1002", "2026/7", '"hi"', "50%_",
                                  "red", "nothing-like-it", "ORD-1001-blue"])
def test_the_index_finds_what_the_substring_condition_finds(engine, merchant_id, term):
    with engine.connect() as conn:
        assert reference_search(conn, term) is not None  # the index answered
    assert found(engine, merchant_id, term) == found_by_substring(engine, merchant_id, term)


def test_search_by_reference_part_in_any_case(engine, merchant_id):
    assert found(engine, merchant_id, "blue") == ["ORD-1001-blue", "ord-1002-Blue"]
    assert found(engine, merchant_id, "inv/2026") == ["INV/2026/77"]
    assert found(engine, merchant_id, '"hi" 50%') == ['say "hi" 50%_off']


def test_terms_under_three_characters_are_searched_without_the_index(engine, merchant_id):
    with engine.connect() as conn:
        assert reference_search(conn, "ab") is None
    assert found(engine, merchant_id, "ab") == ["ab"]


def test_the_query_plan_reads_the_index_not_the_merchants_rows(engine, merchant_id):
    with engine.connect() as conn:
        ids = reference_search(conn, "blue")
        assert len(ids) == 2
        plan = conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT rowid FROM transactions_reference_search "
            "WHERE transactions_reference_search MATCH '\"blue\"'").all()
    assert "VIRTUAL TABLE INDEX" in " ".join(row[-1] for row in plan)


def test_the_index_follows_changed_and_deleted_references(engine, merchant_id):
    with engine.begin() as conn:
        conn.execute(update(transactions).where(transactions.c.reference == "ORD-2001-red")
                     .values(reference="ORD-2001-green"))
        conn.execute(delete(transactions).where(transactions.c.reference == "ORD-1001-blue"))
    assert found(engine, merchant_id, "red") == []
    assert found(engine, merchant_id, "green") == ["ORD-2001-green"]
    assert found(engine, merchant_id, "blue") == ["ord-1002-Blue"]
    with engine.connect() as conn:  # FTS5's own check of an external-content index
        conn.exec_driver_sql("INSERT INTO transactions_reference_search(transactions_reference_search, "
                             "rank) VALUES ('integrity-check', 1)")


def test_a_term_matching_more_rows_than_are_looked_up_is_searched_along_the_listing(
        engine, merchant_id, monkeypatch):
    monkeypatch.setattr(listing, "REFERENCE_MATCHES_LOOKED_UP", 1)
    with engine.connect() as conn:
        assert reference_search(conn, "ORD-") is None
        assert reference_search(conn, "blue") is None
        assert reference_search(conn, "INV/") == [conn.execute(text(
            "SELECT id FROM transactions WHERE reference = 'INV/2026/77'")).scalar_one()]
    assert found(engine, merchant_id, "ORD-") == ["ORD-1001-blue", "ORD-2001-red", "ord-1002-Blue"]
