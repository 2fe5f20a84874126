"""local time: a time zone per merchant, and a time zone and locale per user

Issue 33: the dashboard showed every time in UTC, in three formats. A merchant now has a time
zone (an IANA name, UTC until an admin picks one) that every member's pages show times in; a
user may pick their own (NULL: the merchant's) and the locale their dates and amounts are
written in (NULL: en-GB). The API and the stored times stay UTC.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-27 22:45:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0031'
down_revision = '0030'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('merchants') as batch:
        batch.add_column(sa.Column('time_zone', sa.String(64), nullable=False, server_default='UTC'))
    with op.batch_alter_table('users') as batch:
        batch.add_column(sa.Column('time_zone', sa.String(64)))
        batch.add_column(sa.Column('locale', sa.String(16)))


def downgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.drop_column('locale')
        batch.drop_column('time_zone')
    with op.batch_alter_table('merchants') as batch:
        batch.drop_column('time_zone')
