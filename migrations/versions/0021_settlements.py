"""settlements and their lines, and the workers' settlement fetch schedule

Paydesk checked its own ledger but never what the providers paid out. A worker now fetches each
provider account's settlements (Paystack settlements, Stripe payouts) with their lines, and each
line is matched to Paydesk's transaction (app/payments/reconcile.py).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 20:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0021'
# The parent to re-chain when the disputes migration (0020) lands before this one.
down_revision = '0020'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'settlements',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id', name='fk_settlements_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('provider', sa.String(40), nullable=False),
        sa.Column('provider_account_id', Id,
                  sa.ForeignKey('provider_accounts.id',
                                name='fk_settlements_provider_account_id_provider_accounts')),
        sa.Column('provider_settlement_id', sa.String(100), nullable=False),
        sa.Column('settled_on', sa.Date(), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('gross_minor', sa.BigInteger(), nullable=False),
        sa.Column('fees_minor', sa.BigInteger(), nullable=False),
        sa.Column('net_minor', sa.BigInteger(), nullable=False),
        sa.Column('status', sa.String(40), nullable=False),
        sa.Column('fetched_at', sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint('merchant_id', 'mode', 'provider', 'provider_settlement_id',
                            name='uq_settlements_provider_id'),
    )
    op.create_index('ix_settlements_listing', 'settlements', ['merchant_id', 'mode', 'id'])
    op.create_table(
        'settlement_lines',
        sa.Column('id', Id, primary_key=True),
        sa.Column('settlement_id', Id,
                  sa.ForeignKey('settlements.id', name='fk_settlement_lines_settlement_id_settlements'),
                  nullable=False),
        sa.Column('provider_transaction_id', sa.String(100), nullable=False),
        sa.Column('reference', sa.String(100)),
        sa.Column('line_type', sa.String(10), nullable=False),
        sa.Column('gross_minor', sa.BigInteger(), nullable=False),
        sa.Column('fee_minor', sa.BigInteger(), nullable=False),
        sa.Column('net_minor', sa.BigInteger(), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('transaction_id', Id,
                  sa.ForeignKey('transactions.id', name='fk_settlement_lines_transaction_id_transactions')),
        sa.Column('match_result', sa.String(30), nullable=False),
    )
    op.create_index('ix_settlement_lines_settlement', 'settlement_lines', ['settlement_id', 'id'])
    op.create_index('ix_settlement_lines_transaction', 'settlement_lines', ['transaction_id'])
    op.create_table(
        'settlement_fetches',
        sa.Column('provider_account_id', Id,
                  sa.ForeignKey('provider_accounts.id',
                                name='fk_settlement_fetches_provider_account_id_provider_accounts'),
                  primary_key=True),
        sa.Column('due_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('fetched_at', sa.DateTime(timezone=True)),
        sa.Column('failed_fetches', sa.Integer(), nullable=False, server_default=sa.text('0')),
        sa.Column('last_error', sa.String(500)),
    )


def downgrade() -> None:
    op.drop_table('settlement_fetches')
    op.drop_index('ix_settlement_lines_transaction', 'settlement_lines')
    op.drop_index('ix_settlement_lines_settlement', 'settlement_lines')
    op.drop_table('settlement_lines')
    op.drop_index('ix_settlements_listing', 'settlements')
    op.drop_table('settlements')
