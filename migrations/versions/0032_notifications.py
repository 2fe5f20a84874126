"""e-mail notifications: users' choices, events, each user's copy

Issue 33, item 6. notification_choices keeps what each user chose per kind (immediate or a
daily digest, sandbox too or not); notification_events is written in the unit of work of the
event (an approval requested, a refund or payout Failed or Declined, a webhook given up on);
the worker hands each event to the users who chose its kind (notifications) and e-mails them.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-27 23:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0032'
down_revision = '0031'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UtcDateTime = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        'notification_choices',
        sa.Column('user_id', Id, sa.ForeignKey('users.id', name='fk_notification_choices_user_id_users'),
                  nullable=False),
        sa.Column('kind', sa.String(40), nullable=False),
        sa.Column('delivery', sa.String(10), nullable=False),
        sa.Column('sandbox', sa.Boolean(), nullable=False, server_default=sa.text('false')),
        sa.PrimaryKeyConstraint('user_id', 'kind', name='pk_notification_choices'),
    )
    op.create_table(
        'notification_events',
        sa.Column('id', Id, primary_key=True),
        sa.Column('merchant_id', Id,
                  sa.ForeignKey('merchants.id', name='fk_notification_events_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('kind', sa.String(40), nullable=False),
        sa.Column('subject', sa.String(200), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('target', sa.String(200), nullable=False),
        sa.Column('not_for', sa.String(254)),
        sa.Column('created_at', UtcDateTime, nullable=False),
        sa.Column('handed_out_at', UtcDateTime),
    )
    op.create_index('ix_notification_events_waiting', 'notification_events', ['handed_out_at', 'id'])
    op.create_table(
        'notifications',
        sa.Column('id', Id, primary_key=True),
        sa.Column('event_id', Id,
                  sa.ForeignKey('notification_events.id', name='fk_notifications_event_id_notification_events'),
                  nullable=False),
        sa.Column('user_id', Id, sa.ForeignKey('users.id', name='fk_notifications_user_id_users'),
                  nullable=False),
        sa.Column('delivery', sa.String(10), nullable=False),
        sa.Column('created_at', UtcDateTime, nullable=False),
        sa.Column('next_try_at', UtcDateTime, nullable=False),
        sa.Column('sent_at', UtcDateTime),
        sa.Column('attempts', sa.Integer(), nullable=False, server_default=sa.text('0')),
        sa.Column('error', sa.String(500)),
        sa.UniqueConstraint('event_id', 'user_id', name='uq_notifications_event_user'),
    )
    op.create_index('ix_notifications_unsent', 'notifications', ['sent_at', 'next_try_at'])
    op.create_index('ix_notifications_user', 'notifications', ['user_id', 'sent_at'])


def downgrade() -> None:
    op.drop_table('notifications')
    op.drop_table('notification_events')
    op.drop_table('notification_choices')
