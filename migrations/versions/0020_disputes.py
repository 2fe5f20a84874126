"""disputes and their history; what lost disputes took back from a payment

Issue 30: a chargeback becomes a record of its own (provider, provider's id, amount, reason,
status, due date, evidence, what Paydesk still owes the provider), with the history of its
status moves. transactions.dispute_lost_minor is what a payment's lost or accepted disputes
took back: the refund guard counts it, so no refund returns money the customer already got back.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 19:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Plain ALTER TABLE on both databases, not a batch (see 0018: batch mode would copy the
    # table and lose its triggers).
    op.add_column('transactions', sa.Column('dispute_lost_minor', sa.BigInteger(), nullable=False,
                                            server_default=sa.text('0')))
    op.create_table(
        'disputes',
        sa.Column('id', Id, primary_key=True),
        sa.Column('dispute_no', sa.String(40), nullable=False),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id', name='fk_disputes_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('payment_id', Id, sa.ForeignKey('transactions.id', name='fk_disputes_payment_id_transactions'),
                  nullable=False),
        sa.Column('provider', sa.String(20), nullable=False),
        sa.Column('provider_account_id', Id,
                  sa.ForeignKey('provider_accounts.id', name='fk_disputes_provider_account_id_provider_accounts')),
        sa.Column('provider_dispute_id', sa.String(100), nullable=False),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('reason', sa.String(200)),
        sa.Column('status', sa.String(20), nullable=False),
        sa.Column('provider_status', sa.String(50)),
        sa.Column('due_by', sa.DateTime(timezone=True)),
        sa.Column('evidence', sa.Text()),
        sa.Column('evidence_submitted_at', sa.DateTime(timezone=True)),
        sa.Column('evidence_submitted_by', sa.String(254)),
        sa.Column('action', sa.String(20)),
        sa.Column('action_by', sa.String(254)),
        sa.Column('action_due_at', sa.DateTime(timezone=True)),
        sa.Column('action_claimed_until', sa.DateTime(timezone=True)),
        sa.Column('action_attempts', sa.Integer(), nullable=False, server_default=sa.text('0')),
        sa.Column('action_error', sa.String(500)),
        sa.Column('status_checked_at', sa.DateTime(timezone=True)),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint('dispute_no', name='uq_disputes_dispute_no'),
        sa.UniqueConstraint('merchant_id', 'mode', 'provider', 'provider_dispute_id',
                            name='uq_disputes_provider_dispute'),
    )
    op.create_index('ix_disputes_payment_id', 'disputes', ['payment_id'])
    op.create_index('ix_disputes_queue', 'disputes', ['merchant_id', 'mode', 'status', 'due_by'])
    op.create_index('ix_disputes_action_due', 'disputes', ['action_due_at'])
    op.create_table(
        'dispute_history',
        sa.Column('id', Id, primary_key=True),
        sa.Column('dispute_id', Id, sa.ForeignKey('disputes.id', name='fk_dispute_history_dispute_id_disputes'),
                  nullable=False),
        sa.Column('from_status', sa.String(20)),
        sa.Column('to_status', sa.String(20), nullable=False),
        sa.Column('source', sa.String(254), nullable=False),
        sa.Column('note', sa.String(500)),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index('ix_dispute_history_dispute_id', 'dispute_history', ['dispute_id'])


def downgrade() -> None:
    op.drop_index('ix_dispute_history_dispute_id', 'dispute_history')
    op.drop_table('dispute_history')
    op.drop_index('ix_disputes_action_due', 'disputes')
    op.drop_index('ix_disputes_queue', 'disputes')
    op.drop_index('ix_disputes_payment_id', 'disputes')
    op.drop_table('disputes')
    op.drop_column('transactions', 'dispute_lost_minor')
