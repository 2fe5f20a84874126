"""recipients: the people a merchant pays again

Issue 31, item 3: a payout operator saves a payout's destination (method, bank, account, holder)
and its billing, and pays the same person again by choosing them. Per merchant and mode; one
live recipient per account (a partial unique index: archiving frees the account for a new one).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27 22:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'recipients',
        sa.Column('id', Id, primary_key=True),
        sa.Column('public_id', sa.String(40), nullable=False),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id', name='fk_recipients_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('payment_method', sa.String(64), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('country', sa.String(2)),
        sa.Column('bank', sa.String(20)),
        sa.Column('holder', sa.String(140), nullable=False),
        sa.Column('account_number', sa.String(64), nullable=False),
        sa.Column('label', sa.String(100)),
        sa.Column('first_name', sa.String(100), nullable=False),
        sa.Column('last_name', sa.String(100), nullable=False),
        sa.Column('email', sa.String(254), nullable=False),
        sa.Column('customer_reference', sa.String(100), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('created_by', sa.String(254), nullable=False),
        sa.Column('archived_at', sa.DateTime(timezone=True)),
        sa.Column('archived_by', sa.String(254)),
        sa.UniqueConstraint('public_id', name='uq_recipients_public_id'),
    )
    op.create_index('ix_recipients_listing', 'recipients', ['merchant_id', 'mode', 'holder'])
    live = sa.text('archived_at IS NULL')
    op.create_index('uq_recipients_account', 'recipients',
                    ['merchant_id', 'mode', 'payment_method', sa.text("coalesce(bank, '')"), 'account_number'],
                    unique=True, postgresql_where=live, sqlite_where=live)


def downgrade() -> None:
    op.drop_index('uq_recipients_account', 'recipients')
    op.drop_index('ix_recipients_listing', 'recipients')
    op.drop_table('recipients')
