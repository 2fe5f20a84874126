"""provider accounts: a merchant's Paystack or Stripe account per mode, its methods, its inbound events

- provider_accounts: the account's secrets as Fernet tokens, its inbound webhook key;
- payment_methods.mode (NULL = both modes, the simulator's), .provider_account_id, .active;
  a method id is unique per merchant and mode (the old per-merchant constraint goes);
- transactions.provider_redirect_url: the provider's hosted page the checkout URL sends to, and
  an index on the provider's id (provider webhooks that name nothing else);
- provider_events: every webhook a provider sent, and what came of it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 09:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'provider_accounts',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id,
                  sa.ForeignKey('merchants.id', name='fk_provider_accounts_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('provider', sa.String(40), nullable=False),
        sa.Column('secret_key', sa.Text()),
        sa.Column('webhook_secret', sa.Text()),
        sa.Column('key_hint', sa.String(40), nullable=False),
        sa.Column('base_url', sa.String(2048)),
        sa.Column('webhook_key', sa.String(64), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('disconnected_at', sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint('id', name='pk_provider_accounts'),
        sa.UniqueConstraint('webhook_key', name='uq_provider_accounts_webhook_key'),
    )
    op.create_index('uq_provider_accounts_connected', 'provider_accounts',
                    ['merchant_id', 'mode', 'provider'], unique=True,
                    postgresql_where=sa.text('disconnected_at IS NULL'),
                    sqlite_where=sa.text('disconnected_at IS NULL'))

    with op.batch_alter_table('payment_methods', schema=None) as batch_op:
        batch_op.drop_constraint('uq_payment_methods_merchant_method', type_='unique')
        batch_op.add_column(sa.Column('mode', sa.String(10)))
        batch_op.add_column(sa.Column('provider_account_id', Id))
        batch_op.add_column(sa.Column('active', sa.Boolean(), server_default=sa.text('(true)'),
                                      nullable=False))
        batch_op.create_foreign_key('fk_payment_methods_provider_account_id_provider_accounts',
                                    'provider_accounts', ['provider_account_id'], ['id'])
    op.create_index('uq_payment_methods_merchant_mode_method', 'payment_methods',
                    ['merchant_id', sa.text("coalesce(mode, '')"), 'method_id'], unique=True)

    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('provider_redirect_url', sa.String(2048)))
    op.create_index('ix_transactions_provider_id', 'transactions',
                    ['merchant_id', 'mode', 'provider_transaction_id'])

    op.create_table(
        'provider_events',
        sa.Column('id', Id, primary_key=True),
        sa.Column('provider_account_id', Id,
                  sa.ForeignKey('provider_accounts.id',
                                name='fk_provider_events_provider_account_id_provider_accounts'),
                  nullable=False),
        sa.Column('merchant_id', Id,
                  sa.ForeignKey('merchants.id', name='fk_provider_events_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('event_type', sa.String(100)),
        sa.Column('event_id', sa.String(255)),
        sa.Column('body_sha256', sa.String(64), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('signature_valid', sa.Boolean(), nullable=False),
        sa.Column('tx_no', sa.String(40)),
        sa.Column('result', sa.String(30), nullable=False),
        sa.Column('detail', sa.String(500)),
        sa.PrimaryKeyConstraint('id', name='pk_provider_events'),
    )
    op.create_index('ix_provider_events_merchant', 'provider_events',
                    ['merchant_id', 'mode', 'received_at'])
    op.create_index('ix_provider_events_replay', 'provider_events',
                    ['provider_account_id', 'body_sha256'])


def downgrade() -> None:
    op.drop_index('ix_provider_events_replay', table_name='provider_events')
    op.drop_index('ix_provider_events_merchant', table_name='provider_events')
    op.drop_table('provider_events')
    op.drop_index('ix_transactions_provider_id', table_name='transactions')
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.drop_column('provider_redirect_url')
    op.drop_index('uq_payment_methods_merchant_mode_method', table_name='payment_methods')
    op.execute("DELETE FROM payment_methods WHERE mode IS NOT NULL")
    with op.batch_alter_table('payment_methods', schema=None) as batch_op:
        batch_op.drop_constraint('fk_payment_methods_provider_account_id_provider_accounts',
                                 type_='foreignkey')
        batch_op.drop_column('active')
        batch_op.drop_column('provider_account_id')
        batch_op.drop_column('mode')
        batch_op.create_unique_constraint('uq_payment_methods_merchant_method',
                                          ['merchant_id', 'method_id'])
    op.drop_index('uq_provider_accounts_connected', table_name='provider_accounts')
    op.drop_table('provider_accounts')
