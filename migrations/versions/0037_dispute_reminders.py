"""disputes.reminded_at: when the users who answer disputes were reminded of its deadline

A dispute still needing a response close to its deadline is a reminder once
(app/payments/dispute_reminders.py); the column says it was sent, so a second worker or round
sends none.

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-05 11:45:00
"""
import sqlalchemy as sa
from alembic import op


revision = '0037'
down_revision = '0036'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('disputes', sa.Column('reminded_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column('disputes', 'reminded_at')
