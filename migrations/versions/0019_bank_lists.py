"""bank lists stored in the database, kept fresh by the workers

A payout method's bank list (Paystack's GET /bank) was fetched on the request's thread whenever
the web process's in-memory copy was missing or older than an hour, so a slow Paystack slowed
the bank list endpoint, the payout create's bank check and the dashboard's bank picker. The
lists are now rows of bank_lists, one per provider account, currency and country: a worker
fetches those due (app/providers/bank_refresh.py) and requests read only the stored copy.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'bank_lists',
        sa.Column('id', Id, primary_key=True),
        sa.Column('provider_account_id', Id,
                  sa.ForeignKey('provider_accounts.id',
                                name='fk_bank_lists_provider_account_id_provider_accounts'),
                  nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('country', sa.String(2), nullable=False),
        sa.Column('banks', sa.Text()),
        sa.Column('fetched_at', sa.DateTime(timezone=True)),
        sa.Column('refresh_due_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('failed_fetches', sa.Integer(), nullable=False, server_default=sa.text('0')),
        sa.Column('last_error', sa.String(500)),
        sa.UniqueConstraint('provider_account_id', 'currency', 'country',
                            name='uq_bank_lists_account_currency_country'),
    )
    op.create_index('ix_bank_lists_refresh_due_at', 'bank_lists', ['refresh_due_at'])


def downgrade() -> None:
    op.drop_index('ix_bank_lists_refresh_due_at', 'bank_lists')
    op.drop_table('bank_lists')
