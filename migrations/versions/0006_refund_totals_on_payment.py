"""refund totals on the payment's row: what its refunds hold and what they returned

- transactions.refund_reserved_minor: the payment's Pending and Captured refunds, summed;
- transactions.refund_captured_minor: its Captured refunds, summed;
both in minor units, 0 for every other row. A refund reserves its amount with one
conditional UPDATE of these (app/store/refund_guard.py, run by `reserve_refund`) instead of
locking the payment and summing its refunds; its settlement moves them in the same transaction.
Existing rows are filled from their refunds here, with one UPDATE of correlated sums that
SQLite and PostgreSQL both run. `flask --app app ledger verify` checks them afterwards.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 09:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

# Only payments have refunds; only the rows that have some need more than the default 0.
BACKFILL = """
UPDATE transactions SET
    refund_reserved_minor = (
        SELECT COALESCE(SUM(refunds.amount_minor), 0) FROM transactions AS refunds
        WHERE refunds.original_id = transactions.id AND refunds.kind = 'refund'
          AND refunds.status IN ('Pending', 'Captured')),
    refund_captured_minor = (
        SELECT COALESCE(SUM(refunds.amount_minor), 0) FROM transactions AS refunds
        WHERE refunds.original_id = transactions.id AND refunds.kind = 'refund'
          AND refunds.status = 'Captured')
WHERE transactions.kind = 'payment' AND EXISTS (
    SELECT 1 FROM transactions AS refunds
    WHERE refunds.original_id = transactions.id AND refunds.kind = 'refund')
"""


def upgrade() -> None:
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('refund_reserved_minor', sa.BigInteger(), nullable=False,
                                      server_default=sa.text('0')))
        batch_op.add_column(sa.Column('refund_captured_minor', sa.BigInteger(), nullable=False,
                                      server_default=sa.text('0')))
    op.execute(BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.drop_column('refund_captured_minor')
        batch_op.drop_column('refund_reserved_minor')
