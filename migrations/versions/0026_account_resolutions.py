"""account_resolutions: whose a payout's bank account is, as the provider resolved it

Issue 31 asks the payout form to show the holder's name a Nigerian account number resolves to
(Paystack's GET /bank/resolve) before the operator confirms. A request never waits on a provider:
it records the account it wants named (due_at now), a worker asks the provider and stores the
answer (app/providers/account_resolutions.py), and the form polls until it is there. An answered
row is also the cache, so naming the same account at the same bank again costs no call.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27 22:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'account_resolutions',
        sa.Column('id', Id, primary_key=True),
        sa.Column('provider_account_id', Id,
                  sa.ForeignKey('provider_accounts.id',
                                name='fk_account_resolutions_provider_account_id_provider_accounts'),
                  nullable=False),
        sa.Column('bank_code', sa.String(20), nullable=False),
        sa.Column('account_number', sa.String(64), nullable=False),
        sa.Column('holder_name', sa.String(200)),
        sa.Column('refusal', sa.String(500)),
        sa.Column('last_error', sa.String(500)),
        sa.Column('requested_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('due_at', sa.DateTime(timezone=True)),
        sa.Column('failed_tries', sa.Integer(), nullable=False, server_default=sa.text('0')),
        sa.Column('answered_at', sa.DateTime(timezone=True)),
        sa.UniqueConstraint('provider_account_id', 'bank_code', 'account_number',
                            name='uq_account_resolutions_account_bank_number'),
    )
    op.create_index('ix_account_resolutions_due_at', 'account_resolutions', ['due_at'])


def downgrade() -> None:
    op.drop_index('ix_account_resolutions_due_at', 'account_resolutions')
    op.drop_table('account_resolutions')
