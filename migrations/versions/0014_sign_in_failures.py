"""failed sign-ins counted in the database; two-factor enrolments kept on the server

- sign_in_failures: one row per failed sign-in (a wrong password or code, or a wrong current
  password where the dashboard asks for it again): the account's e-mail as typed (lower case),
  the client's address and when. Every web process reads the same counts (Flask-Limiter's
  counters lived in each process's memory); app/auth/throttle.py holds the rule, and the worker
  deletes rows older than its window.
- totp_enrolments: the TOTP secret a user is enrolling, sealed like the confirmed secret, until
  its first code confirms it (it travelled in the readable session cookie before).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 11:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'sign_in_failures',
        sa.Column('id', Id, primary_key=True),
        sa.Column('account', sa.String(254), nullable=False),
        sa.Column('address', sa.String(64), nullable=False),
        sa.Column('failed_at', sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index('ix_sign_in_failures_address', 'sign_in_failures', ['address', 'failed_at'])
    op.create_index('ix_sign_in_failures_account', 'sign_in_failures', ['account', 'failed_at'])
    op.create_index('ix_sign_in_failures_failed_at', 'sign_in_failures', ['failed_at'])
    op.create_table(
        'totp_enrolments',
        sa.Column('user_id', Id, sa.ForeignKey('users.id'), primary_key=True),
        sa.Column('sealed_secret', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table('totp_enrolments')
    op.drop_index('ix_sign_in_failures_failed_at', 'sign_in_failures')
    op.drop_index('ix_sign_in_failures_account', 'sign_in_failures')
    op.drop_index('ix_sign_in_failures_address', 'sign_in_failures')
    op.drop_table('sign_in_failures')
