"""The duties' floor: Paydesk's own statements for a create and a refund, and nothing else.

Issue 12 read "a lean implementation of exactly those duties serves 1.0-1.4x the bare
baseline". This app measures that claim on this stack. Like the baseline
(bench/baseline_app.py) it has no validation, authentication, idempotency or error
answers, and acts as the merchant in BENCH_MERCHANT_ID; unlike it, each endpoint sends
the statements Paydesk sends on PostgreSQL (captured from app/store/writes.py), with
the same rows written:

- create: one statement, the transaction and its first history row;
- refund: the payment read by number; one statement reserving the amount on the
  payment's row and writing the Pending refund, its history and audit rows; the
  simulator's answer recorded by one statement checking both rows are as read, with
  the refund's new status, history, webhook event and the payment's refund totals
  (synchronous_commit off, as Paydesk's recoverable commits).

Statements are executed as Paydesk executes them, through SQLAlchemy (Connection.execute).
(A second mode, DUTIES_EXECUTION=driver, sent them straight to psycopg through
app/store/driver.py; that module is gone: Paydesk uses its libraries' public APIs only.)
`python -m bench.profile --with-duties` measures it next to Paydesk and the baseline.
PostgreSQL only.
"""
from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime, timedelta

from flask import Flask, request
from sqlalchemy import create_engine, text

from .baseline_app import POOL_SIZE, _json

CREATE = text("""
WITH w0 AS (INSERT INTO transactions (merchant_id, mode, tx_no, kind, status, amount_minor, currency,
        reference, statement_descriptor, callback_url, payment_method, billing, provider_transaction_id,
        provider_status, provider_message, created_by, created_at, updated_at, customer_email, customer_name)
    VALUES (:merchant_id, :mode, :tx_no, 'payment', 'Pending', :amount_minor, :currency, :reference,
        :descriptor, :callback_url, :method, :billing, :provider_tx, 'CREATED',
        'Awaiting customer at checkout', 'api', :now, :now, :email, :name) RETURNING id),
w1 AS (INSERT INTO status_history (transaction_id, to_status, source, at)
    VALUES ((SELECT id FROM w0), 'Pending', 'api', :now))
SELECT (SELECT id FROM w0) AS id0""")
BY_NUMBER = text("SELECT * FROM transactions WHERE merchant_id = :merchant_id AND mode = :mode "
                 "AND tx_no = :tx_no")
RESERVE = text("""
WITH c AS (UPDATE transactions SET refund_reserved_minor = refund_reserved_minor + :amount
    WHERE merchant_id = :merchant_id AND mode = :mode AND tx_no = :original_tx_no AND kind = 'payment'
      AND status = 'Captured' AND currency = :currency
      AND amount_minor - refund_reserved_minor - refund_held_minor >= :amount RETURNING id),
w0 AS (INSERT INTO transactions (merchant_id, mode, tx_no, kind, status, amount_minor, currency, reference,
        callback_url, payment_method, original_id, udf1, created_by, created_at, updated_at, provider_check_at)
    SELECT :merchant_id, :mode, :tx_no, 'refund', 'Pending', :amount, :currency, :reference, :callback_url,
        :method, :original_id, :reason, 'api', :now, :now, :check_at WHERE EXISTS (SELECT id FROM c)
    RETURNING id),
w1 AS (INSERT INTO status_history (transaction_id, to_status, source, at)
    SELECT (SELECT id FROM w0), 'Pending', 'api', :now WHERE EXISTS (SELECT id FROM c)),
w2 AS (INSERT INTO audit_log (merchant_id, mode, actor, action, target, amount_minor, currency, detail, ip, at)
    SELECT :merchant_id, :mode, 'api', 'refund.create', :tx_no, :amount, :currency, :detail, '127.0.0.1',
        :now WHERE EXISTS (SELECT id FROM c))
SELECT (SELECT id FROM w0) AS id0, EXISTS (SELECT id FROM c) AS held""")
SETTLE = text("""
WITH c AS (SELECT t.id FROM transactions t WHERE t.id = :refund_id AND t.status = 'Pending' AND t.updated_at = :now
      AND EXISTS (SELECT o.id FROM transactions o WHERE o.id = :original_id AND o.status = 'Captured'
        AND o.updated_at = :original_updated_at AND o.refund_captured_minor = :original_captured FOR UPDATE)
    FOR UPDATE OF t),
w0 AS (UPDATE transactions SET status = 'Captured', decline_reason = NULL, provider_transaction_id = :provider_tx,
        provider_status = 'SUCCESS', provider_message = 'Refund processed successfully',
        provider_redirect_url = NULL, updated_at = :settled_at, provider_check_at = NULL
    WHERE id = :refund_id AND EXISTS (SELECT id FROM c)),
w1 AS (INSERT INTO status_history (transaction_id, from_status, to_status, source, note, at)
    SELECT :refund_id, 'Pending', 'Captured', 'provider', 'Refund processed successfully', :settled_at
    WHERE EXISTS (SELECT id FROM c)),
w2 AS (INSERT INTO webhook_events (merchant_id, mode, transaction_id, webhook_id, event_type, url, payload,
        state, attempts, next_attempt_at, created_at)
    SELECT :merchant_id, :mode, :refund_id, :webhook_id, 'refund.captured', :callback_url, :payload,
        'pending', 0, :settled_at, :settled_at WHERE EXISTS (SELECT id FROM c)),
w3 AS (UPDATE transactions SET refund_reserved_minor = refund_reserved_minor + 0,
        refund_captured_minor = refund_captured_minor + :amount
    WHERE id = :original_id AND EXISTS (SELECT id FROM c))
SELECT EXISTS (SELECT id FROM c) AS held, set_config('synchronous_commit', 'off', true) AS relaxed""")


def create_app() -> Flask:
    """The duties app on DATABASE_URL (PostgreSQL), acting as merchant BENCH_MERCHANT_ID in live mode."""
    engine = create_engine(os.environ["DATABASE_URL"], pool_size=POOL_SIZE, max_overflow=POOL_SIZE)
    merchant_id, mode = int(os.environ["BENCH_MERCHANT_ID"]), "live"
    app = Flask(__name__)
    app.extensions["baseline.engine"] = engine

    def one(conn, statement, params: dict):
        return conn.execute(statement, params).mappings().one()

    def autocommit():
        return engine.connect().execution_options(isolation_level="AUTOCOMMIT")

    @app.post("/api/v1/transactions")
    def create():
        body, now = request.get_json(), datetime.now(UTC)
        tx_no, billing = f"PAY-{secrets.token_hex(8).upper()}", body["billing"]
        with autocommit() as conn:
            one(conn, CREATE, dict(
                merchant_id=merchant_id, mode=mode, tx_no=tx_no, amount_minor=round(body["amount"] * 100),
                currency=body["currency"], reference=body["reference"], descriptor=body["statementDescriptor"],
                callback_url=body["callbackUrl"], method=body["payment"]["paymentMethod"],
                billing=json.dumps(billing), provider_tx=f"sim_{tx_no}", now=now, email=billing["email"],
                name=f"{billing['firstName']} {billing['lastName']}"))
        return _json({"transactionId": tx_no, "reference": body["reference"], "status": "PENDING"})

    @app.post("/api/v1/transactions/refund")
    def refund():
        body, now = request.get_json(), datetime.now(UTC)
        amount, tx_no = round(body["amount"] * 100), f"RFD-{secrets.token_hex(8).upper()}"
        with autocommit() as conn:
            original = one(conn, BY_NUMBER, {"merchant_id": merchant_id, "mode": mode, "tx_no": body["txNo"]})
            reserved = one(conn, RESERVE, dict(
                amount=amount, merchant_id=merchant_id, mode=mode, original_tx_no=original["tx_no"],
                currency=original["currency"], tx_no=tx_no, reference=original["reference"],
                callback_url=original["callback_url"], method=original["payment_method"],
                original_id=original["id"], reason=body.get("reason"), now=now,
                check_at=now + timedelta(seconds=30),
                detail=json.dumps({"originalTxNo": original["tx_no"], "reason": body.get("reason")})))
            if not reserved["held"]:
                return _json({"error": "exceeds remaining refundable amount"}, 400)
            settled_at = datetime.now(UTC)
            payload = json.dumps({"txNo": tx_no, "status": "Captured", "amount": body["amount"],
                                  "currency": original["currency"], "transactionType": "Refund",
                                  "originalTxNo": original["tx_no"]})
            one(conn, SETTLE, dict(
                refund_id=reserved["id0"], now=now, original_id=original["id"],
                original_updated_at=original["updated_at"], original_captured=original["refund_captured_minor"],
                provider_tx=f"simr_{tx_no}", settled_at=settled_at, merchant_id=merchant_id, mode=mode,
                webhook_id=f"msg_{secrets.token_hex(12)}", callback_url=original["callback_url"],
                payload=payload, amount=amount))
        return _json({"refundTxNo": tx_no, "originalTxNo": body["txNo"], "status": "Captured"})

    return app
