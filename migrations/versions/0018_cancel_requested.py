"""transactions.cancel_requested_at: a cancel the provider is still to be asked about

A cancel of a payment whose provider is behind a network (Paystack, Stripe) no longer asks the
provider on the request's thread (issue 29): the request marks the payment with the time it was
asked, makes its provider call due now and answers 202; a worker asks the provider to void it
and records the answer. The column stays set afterwards, as the time the cancel was asked.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


# Plain ALTER TABLE on both databases, not a batch: SQLite's batch mode would copy the table
# for the drop, losing its triggers (the daily totals' and the reference search's).


def upgrade() -> None:
    op.add_column('transactions', sa.Column('cancel_requested_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column('transactions', 'cancel_requested_at')
