"""request log: no foreign keys

Issue 32 asks that writing the request log cost creates and refunds at most 5% of their
throughput. Measured with bench/request_log.py (PostgreSQL, the log off against batched), it cost
18% with INSERTs; the writer now sends its batches with COPY, and each logged request still paid,
in PostgreSQL, a foreign-key check that locks its merchant's row (FOR KEY SHARE, taken at the same
moment by every create of that merchant: a multixact when they meet), and a second one from each
of its request_log_tx rows on the request_log row.

- request_log.merchant_id and request_log_tx.request_log_id keep their values and lose their
  foreign keys: merchants are never deleted, and the worker's pruning deletes a request's
  request_log_tx rows before the request (app/store/request_log.py), as it already did.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-03 16:00:00
"""
from alembic import op


revision = '0034'
down_revision = '0033'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('request_log_tx') as batch:
        batch.drop_constraint('fk_request_log_tx_request_log_id_request_log', type_='foreignkey')
    with op.batch_alter_table('request_log') as batch:
        batch.drop_constraint('fk_request_log_merchant_id_merchants', type_='foreignkey')


def downgrade() -> None:
    # Rows whose merchant or request is gone would refuse the keys: the log keeps none of them.
    op.execute("DELETE FROM request_log_tx WHERE request_log_id NOT IN (SELECT id FROM request_log)")
    op.execute("DELETE FROM request_log WHERE merchant_id NOT IN (SELECT id FROM merchants)")
    with op.batch_alter_table('request_log') as batch:
        batch.create_foreign_key('fk_request_log_merchant_id_merchants', 'merchants', ['merchant_id'], ['id'])
    with op.batch_alter_table('request_log_tx') as batch:
        batch.create_foreign_key('fk_request_log_tx_request_log_id_request_log', 'request_log',
                                 ['request_log_id'], ['id'], ondelete='CASCADE')
