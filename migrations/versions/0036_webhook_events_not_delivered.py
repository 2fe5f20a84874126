"""webhook events not delivered: a partial index for the Webhooks page's state filter

The page lists a mode's deliveries newest first through ix_webhook_events_merchant. Filtered to
the pending or failed ones, which are few among many delivered, that index would be read until a
page of them turned up; this one holds only those, in the same order. Rows leave it when they
are delivered (that update touches the state index already, so it is never a HOT update).

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-05 06:40:00
"""
import sqlalchemy as sa
from alembic import op


revision = '0036'
down_revision = '0035'
branch_labels = None
depends_on = None

NOT_DELIVERED = sa.text("state <> 'delivered'")


def upgrade() -> None:
    op.create_index('ix_webhook_events_not_delivered', 'webhook_events', ['merchant_id', 'mode', 'created_at'],
                    postgresql_where=NOT_DELIVERED, sqlite_where=NOT_DELIVERED)


def downgrade() -> None:
    op.drop_index('ix_webhook_events_not_delivered', table_name='webhook_events')
