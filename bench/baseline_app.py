"""The baseline: Flask and SQLAlchemy Core doing only each endpoint's unavoidable database work.

No validation, no authentication, no history, audit log or webhook outbox, no
provider: one indexed SELECT for a status, one INSERT for a create, lock + sum +
INSERT for a refund, one SELECT for a bank list, the search query for the
dashboard search. Paydesk is measured as a share of what this serves on the same
gunicorn settings and database. It acts as the merchant in BENCH_MERCHANT_ID.
"""
from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime
from functools import cache

from flask import Flask, Response, request
from sqlalchemy import bindparam, create_engine, func, insert, or_, select

from app.providers.banks import bank_list
from app.store.db import make_engine
from app.store.listing import customer_search, reference_search
from app.store.tables import payment_methods, transactions

from .search import search_query

POOL_SIZE = 10  # Paydesk's default DB_POOL_SIZE

# Statements built once with bound parameters, as Paydesk's hot statements are:
# the floor is the database work, not the Python that builds its statements.
BY_NUMBER = select(transactions).where(
    transactions.c.merchant_id == bindparam("merchant_id"), transactions.c.mode == bindparam("mode"),
    transactions.c.tx_no == bindparam("tx_no"))
BY_NUMBER_FOR_UPDATE = BY_NUMBER.with_for_update()
REFUNDED = select(func.coalesce(func.sum(transactions.c.amount_minor), 0)).where(
    transactions.c.original_id == bindparam("original_id"), transactions.c.kind == "refund",
    or_(transactions.c.status == "Pending", transactions.c.status == "Captured"))  # no IN to expand
INSERT = insert(transactions)
BANK_LIST_SOURCE = select(payment_methods.c.bank_list).where(
    payment_methods.c.merchant_id == bindparam("merchant_id"),
    payment_methods.c.method_id == bindparam("method_id"))

def _json(body, status: int = 200) -> Response:
    return Response(json.dumps(body, default=str), status=status, mimetype="application/json")


@cache
def _banks_body(source: str, currency: str, country: str | None) -> str:
    return json.dumps([{"code": b.code, "name": b.name} for b in bank_list(source, currency, country)])


def create_app() -> Flask:
    """The baseline app on DATABASE_URL, acting as merchant BENCH_MERCHANT_ID in live mode."""
    url = os.environ["DATABASE_URL"]
    # SQLite: Paydesk's settings (WAL, BEGIN IMMEDIATE for writes, its only lock).
    # PostgreSQL: the same pool size, but no ping on checkout and reads in
    # autocommit, so a read is one round trip: the floor, not Paydesk's choices.
    postgres = not url.startswith("sqlite")
    engine = create_engine(url, pool_size=POOL_SIZE, max_overflow=POOL_SIZE) if postgres else make_engine(url)
    merchant_id = int(os.environ["BENCH_MERCHANT_ID"])
    mode = "live"
    app = Flask(__name__)
    app.extensions["baseline.engine"] = engine

    def single_statement(write: bool = False):
        """PostgreSQL: autocommit, no BEGIN or COMMIT; SQLite: a transaction, IMMEDIATE to write."""
        connection = engine.connect()
        if postgres:
            return connection.execution_options(isolation_level="AUTOCOMMIT")
        return connection.execution_options(write=write)

    def writing():
        return engine.connect().execution_options(write=True)

    @app.get("/healthz")
    def health():
        return _json({"status": "ok"})

    @app.get("/api/v1/transactions/<tx_no>/status")
    def status(tx_no: str):
        with single_statement() as conn:
            row = conn.execute(BY_NUMBER, {"merchant_id": merchant_id, "mode": mode, "tx_no": tx_no}).first()
        if row is None:
            return _json({"error": "not found"}, 404)
        return _json({"TransactionId": row.tx_no, "Status": row.status, "Amount": row.amount_minor,
                      "Currency": row.currency, "Reference": row.reference,
                      "CreatedAt": row.created_at.isoformat()})

    @app.post("/api/v1/transactions")
    def create():
        body = request.get_json()
        now = datetime.now(UTC)
        tx_no = f"PAY-{secrets.token_hex(8).upper()}"
        with single_statement(write=True) as conn:
            conn.execute(INSERT, dict(
                merchant_id=merchant_id, mode=mode, tx_no=tx_no, kind="payment", status="Pending",
                amount_minor=int(body["amount"] * 100), currency=body["currency"],
                reference=body["reference"], statement_descriptor=body.get("statementDescriptor"),
                callback_url=body.get("callbackUrl"), payment_method=body["payment"]["paymentMethod"],
                billing=json.dumps(body.get("billing")), created_at=now, updated_at=now))
            conn.commit()
        return _json({"transactionId": tx_no, "reference": body["reference"], "status": "PENDING"})

    @app.post("/api/v1/transactions/refund")
    def refund():
        body = request.get_json()
        amount_minor = round(body["amount"] * 100)
        now = datetime.now(UTC)
        tx_no = f"RFD-{secrets.token_hex(8).upper()}"
        with writing() as conn, conn.begin():
            original = conn.execute(BY_NUMBER_FOR_UPDATE, {
                "merchant_id": merchant_id, "mode": mode, "tx_no": body["txNo"]}).first()
            refunded = conn.execute(REFUNDED, {"original_id": original.id}).scalar_one()
            if refunded + amount_minor > original.amount_minor:
                return _json({"error": "exceeds remaining refundable amount"}, 400)
            conn.execute(INSERT, dict(
                merchant_id=merchant_id, mode=mode, tx_no=tx_no, kind="refund", status="Pending",
                amount_minor=amount_minor, currency=original.currency, reference=original.reference,
                payment_method=original.payment_method, original_id=original.id,
                created_at=now, updated_at=now))
        return _json({"refundTxNo": tx_no, "originalTxNo": body["txNo"], "status": "Pending"})

    @app.post("/api/v1/transactions/banks")
    def banks():
        body = request.get_json()
        with single_statement() as conn:
            source = conn.execute(BANK_LIST_SOURCE, {
                "merchant_id": merchant_id, "method_id": body["paymentMethod"]}).scalar()
        return Response(_banks_body(source, body["currency"], body.get("country")),
                        mimetype="application/json")

    @app.get("/transactions")
    def search():
        with single_statement() as conn:
            term = request.args.get("q", "")
            rows = conn.execute(search_query(merchant_id, mode, term, reference_search(conn, term),
                                           customer_search(conn, term))).all()
        return _json([dict(row._mapping) for row in rows])

    return app
