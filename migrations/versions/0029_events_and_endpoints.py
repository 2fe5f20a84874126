"""events and webhook endpoints

Issue 32, items 2, 3 and 6: every change that sends a webhook is an event (kept
EVENT_RETENTION_DAYS), listed by GET /api/v1/events; merchants subscribe webhook endpoints,
each with its own whsec_ secrets, to the event types they want, and ask a worker to check that
an endpoint's receiver refuses tampered, replayed and stale deliveries. A delivery (webhook_events)
names its event and, when it goes to an endpoint rather than the callbackUrl, the endpoint.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-27 22:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'events',
        sa.Column('id', Id, primary_key=True),
        sa.Column('public_id', sa.String(40), nullable=False),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id', name='fk_events_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('event_type', sa.String(40), nullable=False),
        sa.Column('transaction_id', Id, sa.ForeignKey('transactions.id', name='fk_events_transaction_id_transactions'),
                  nullable=False),
        sa.Column('tx_no', sa.String(100), nullable=False),
        sa.Column('webhook_id', sa.String(64), nullable=False),
        sa.Column('payload', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('fanned_out', sa.Boolean(), server_default=sa.text('false'), nullable=False),
        sa.UniqueConstraint('public_id', name='uq_events_public_id'),
    )
    op.create_index('ix_events_listing', 'events', ['merchant_id', 'mode', 'id'])
    op.create_index('ix_events_tx_no', 'events', ['merchant_id', 'mode', 'tx_no'])
    op.create_index('ix_events_created', 'events', ['created_at'])
    not_fanned_out = sa.text('fanned_out = false')
    op.create_index('ix_events_fan_out', 'events', ['id'], postgresql_where=not_fanned_out,
                    sqlite_where=not_fanned_out)
    op.create_table(
        'webhook_endpoints',
        sa.Column('id', Id, primary_key=True),
        sa.Column('public_id', sa.String(40), nullable=False),
        sa.Column('merchant_id', Id,
                  sa.ForeignKey('merchants.id', name='fk_webhook_endpoints_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('url', sa.String(2048), nullable=False),
        sa.Column('enabled_events', sa.Text(), nullable=False),
        sa.Column('enabled', sa.Boolean(), server_default=sa.text('true'), nullable=False),
        sa.Column('description', sa.String(200)),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('deleted_at', sa.DateTime(timezone=True)),
        sa.UniqueConstraint('public_id', name='uq_webhook_endpoints_public_id'),
    )
    op.create_index('ix_webhook_endpoints_merchant', 'webhook_endpoints', ['merchant_id', 'mode', 'id'])
    op.create_table(
        'webhook_endpoint_secrets',
        sa.Column('id', Id, primary_key=True),
        sa.Column('endpoint_id', Id, sa.ForeignKey(
            'webhook_endpoints.id', name='fk_webhook_endpoint_secrets_endpoint_id_webhook_endpoints'),
            nullable=False),
        sa.Column('secret', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True)),
    )
    op.create_index('ix_webhook_endpoint_secrets_endpoint_id', 'webhook_endpoint_secrets', ['endpoint_id'])
    op.create_table(
        'webhook_receiver_checks',
        sa.Column('id', Id, primary_key=True),
        sa.Column('public_id', sa.String(40), nullable=False),
        sa.Column('endpoint_id', Id, sa.ForeignKey(
            'webhook_endpoints.id', name='fk_webhook_receiver_checks_endpoint_id_webhook_endpoints'),
            nullable=False),
        sa.Column('merchant_id', Id, sa.ForeignKey(
            'merchants.id', name='fk_webhook_receiver_checks_merchant_id_merchants'), nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('state', sa.String(10), nullable=False),
        sa.Column('requested_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('requested_by', sa.String(254), nullable=False),
        sa.Column('claimed_until', sa.DateTime(timezone=True)),
        sa.Column('finished_at', sa.DateTime(timezone=True)),
        sa.Column('results', sa.Text()),
        sa.UniqueConstraint('public_id', name='uq_webhook_receiver_checks_public_id'),
    )
    op.create_index('ix_webhook_receiver_checks_endpoint_id', 'webhook_receiver_checks', ['endpoint_id'])
    pending = sa.text("state = 'pending'")
    op.create_index('ix_webhook_receiver_checks_due', 'webhook_receiver_checks', ['requested_at'],
                    postgresql_where=pending, sqlite_where=pending)
    # Plain ALTER TABLE, not a batch: SQLite's batch mode would copy the table. SQLite adds the
    # columns without their foreign keys (it cannot add a constraint to a table).
    op.add_column('webhook_events', sa.Column('event_id', Id, nullable=True))
    op.add_column('webhook_events', sa.Column('endpoint_id', Id, nullable=True))
    if op.get_bind().dialect.name != 'sqlite':
        op.create_foreign_key('fk_webhook_events_event_id_events', 'webhook_events', 'events',
                              ['event_id'], ['id'])
        op.create_foreign_key('fk_webhook_events_endpoint_id_webhook_endpoints', 'webhook_events',
                              'webhook_endpoints', ['endpoint_id'], ['id'])
    op.create_index('ix_webhook_events_event_id', 'webhook_events', ['event_id'])
    op.create_index('ix_webhook_events_endpoint', 'webhook_events', ['endpoint_id', 'created_at'])


def downgrade() -> None:
    op.drop_index('ix_webhook_events_endpoint', 'webhook_events')
    op.drop_index('ix_webhook_events_event_id', 'webhook_events')
    if op.get_bind().dialect.name != 'sqlite':
        op.drop_constraint('fk_webhook_events_endpoint_id_webhook_endpoints', 'webhook_events',
                           type_='foreignkey')
        op.drop_constraint('fk_webhook_events_event_id_events', 'webhook_events', type_='foreignkey')
    op.drop_column('webhook_events', 'endpoint_id')
    op.drop_column('webhook_events', 'event_id')
    op.drop_index('ix_webhook_receiver_checks_due', 'webhook_receiver_checks')
    op.drop_index('ix_webhook_receiver_checks_endpoint_id', 'webhook_receiver_checks')
    op.drop_table('webhook_receiver_checks')
    op.drop_index('ix_webhook_endpoint_secrets_endpoint_id', 'webhook_endpoint_secrets')
    op.drop_table('webhook_endpoint_secrets')
    op.drop_index('ix_webhook_endpoints_merchant', 'webhook_endpoints')
    op.drop_table('webhook_endpoints')
    op.drop_index('ix_events_fan_out', 'events')
    op.drop_index('ix_events_created', 'events')
    op.drop_index('ix_events_tx_no', 'events')
    op.drop_index('ix_events_listing', 'events')
    op.drop_table('events')
