"""approvals (four eyes) and per-user limits

- transactions.refund_held_minor: what a payment's refund requests awaiting approval hold, in
  minor units (0 for every other row). The refund reservation counts it with the Pending and
  Captured refunds, so two awaiting requests can never together over-refund;
- approval_thresholds: per merchant and currency, the amount above which a dashboard refund
  or payout waits for a second user's approval;
- approval_requests: each such request, its state (awaiting, approved, rejected, expired,
  failed) and who decided it;
- user_limits: per user and currency, the largest refund and payout they may make or approve.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 14:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # A plain ADD COLUMN on both databases: a batch operation would rebuild the table on SQLite
    # and lose the reference search's triggers (0007).
    op.add_column('transactions', sa.Column('refund_held_minor', sa.BigInteger(), nullable=False,
                                            server_default=sa.text('0')))
    op.create_table(
        'approval_thresholds',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id'), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('updated_by', sa.String(254), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint('merchant_id', 'currency', name='uq_approval_thresholds_merchant_currency'),
    )
    op.create_table(
        'user_limits',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id'), nullable=False),
        sa.Column('user_id', Id, sa.ForeignKey('users.id'), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('max_refund_minor', sa.BigInteger()),
        sa.Column('max_payout_minor', sa.BigInteger()),
        sa.Column('updated_by', sa.String(254), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint('user_id', 'currency', name='uq_user_limits_user_currency'),
    )
    op.create_table(
        'approval_requests',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id'), nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('kind', sa.String(10), nullable=False),
        sa.Column('state', sa.String(10), nullable=False),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('original_id', Id, sa.ForeignKey('transactions.id')),
        sa.Column('request', sa.Text(), nullable=False),
        sa.Column('form_key', sa.String(64), nullable=False),
        sa.Column('requested_by', sa.String(254), nullable=False),
        sa.Column('requested_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('decided_by', sa.String(254)),
        sa.Column('decided_at', sa.DateTime(timezone=True)),
        sa.Column('result_tx_no', sa.String(40)),
        sa.Column('note', sa.String(500)),
        sa.UniqueConstraint('merchant_id', 'mode', 'form_key', name='uq_approval_requests_form_key'),
    )
    op.create_index('ix_approval_requests_listing', 'approval_requests',
                    ['merchant_id', 'mode', 'state', 'requested_at'])
    op.create_index('ix_approval_requests_original', 'approval_requests', ['original_id'])
    op.create_index('ix_approval_requests_expiry', 'approval_requests', ['state', 'expires_at'])


def downgrade() -> None:
    op.drop_index('ix_approval_requests_expiry', table_name='approval_requests')
    op.drop_index('ix_approval_requests_original', table_name='approval_requests')
    op.drop_index('ix_approval_requests_listing', table_name='approval_requests')
    op.drop_table('approval_requests')
    op.drop_table('user_limits')
    op.drop_table('approval_thresholds')
    op.execute('ALTER TABLE transactions DROP COLUMN refund_held_minor')  # SQLite 3.35 or later
