"""webhook resend: manual next attempt and the start of the current retry schedule

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 12:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('webhook_events', schema=None) as batch_op:
        # The next attempt was asked for by hand (resend); the attempt is logged as manual.
        batch_op.add_column(sa.Column('next_attempt_manual', sa.Boolean(),
                                      server_default=sa.text('(false)'), nullable=False))
        # Attempts made before the current retry schedule began (a resend starts a new one).
        batch_op.add_column(sa.Column('schedule_offset', sa.Integer(), server_default='0',
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('webhook_events', schema=None) as batch_op:
        batch_op.drop_column('schedule_offset')
        batch_op.drop_column('next_attempt_manual')
