"""token scopes and limits, and the API request log

Issue 32, items 4 and 5. An API token gets scopes (every token made before keeps all six), an
optional expiry, optional allowed client networks and optional daily limits per currency on
what it may refund and pay out (api_token_limits), counted per UTC day in token_day_totals
(one row per token, day, kind and currency, taken with a conditional upsert in the unit that
writes the refund or payout). request_log keeps every API request (masked bodies) for
REQUEST_LOG_RETENTION_DAYS; request_log_tx names the transactions each one touched.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-27 22:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ALL_SCOPES = "read,payments,refunds,payouts,webhooks,sandbox"


def upgrade() -> None:
    with op.batch_alter_table('api_tokens') as batch:
        batch.add_column(sa.Column('scopes', sa.String(100), nullable=False, server_default=ALL_SCOPES))
        batch.add_column(sa.Column('expires_at', sa.DateTime(timezone=True)))
        batch.add_column(sa.Column('networks', sa.Text()))
        batch.add_column(sa.Column('created_by', sa.String(254)))
    op.create_table(
        'api_token_limits',
        sa.Column('token_id', Id, sa.ForeignKey('api_tokens.id', name='fk_api_token_limits_token_id_api_tokens'),
                  nullable=False),
        sa.Column('kind', sa.String(10), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('daily_minor', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('token_id', 'kind', 'currency', name='pk_api_token_limits'),
    )
    op.create_table(
        'token_day_totals',
        sa.Column('token_id', Id, sa.ForeignKey('api_tokens.id', name='fk_token_day_totals_token_id_api_tokens'),
                  nullable=False),
        sa.Column('day', sa.Date(), nullable=False),
        sa.Column('kind', sa.String(10), nullable=False),
        sa.Column('currency', sa.String(3), nullable=False),
        sa.Column('used_minor', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('token_id', 'day', 'kind', 'currency', name='pk_token_day_totals'),
    )
    op.create_table(
        'request_log',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id', name='fk_request_log_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('token_id', Id),
        sa.Column('token_label', sa.String(100), nullable=False),
        sa.Column('method', sa.String(10), nullable=False),
        sa.Column('path', sa.String(500), nullable=False),
        sa.Column('status', sa.Integer(), nullable=False),
        sa.Column('duration_ms', sa.Integer(), nullable=False),
        sa.Column('request_id', sa.String(64), nullable=False),
        sa.Column('idempotency_key', sa.String(255)),
        sa.Column('request_body', sa.Text()),
        sa.Column('response_body', sa.Text()),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index('ix_request_log_listing', 'request_log', ['merchant_id', 'mode', 'at'])
    op.create_index('ix_request_log_token', 'request_log', ['token_id', 'at'])
    op.create_index('ix_request_log_at', 'request_log', ['at'])
    op.create_table(
        'request_log_tx',
        sa.Column('request_log_id', Id, sa.ForeignKey('request_log.id', name='fk_request_log_tx_request_log_id_request_log',
                                                      ondelete='CASCADE'), nullable=False),
        sa.Column('merchant_id', Id, nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('tx_no', sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint('request_log_id', 'tx_no', name='pk_request_log_tx'),
    )
    op.create_index('ix_request_log_tx_tx_no', 'request_log_tx', ['merchant_id', 'mode', 'tx_no'])


def downgrade() -> None:
    op.drop_index('ix_request_log_tx_tx_no', 'request_log_tx')
    op.drop_table('request_log_tx')
    op.drop_index('ix_request_log_at', 'request_log')
    op.drop_index('ix_request_log_token', 'request_log')
    op.drop_index('ix_request_log_listing', 'request_log')
    op.drop_table('request_log')
    op.drop_table('token_day_totals')
    op.drop_table('api_token_limits')
    with op.batch_alter_table('api_tokens') as batch:
        batch.drop_column('created_by')
        batch.drop_column('networks')
        batch.drop_column('expires_at')
        batch.drop_column('scopes')
