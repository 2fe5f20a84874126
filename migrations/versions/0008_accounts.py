"""accounts: server-side sessions, one-time password links, TOTP second factors

- user_sessions: a row per sign-in, its cookie's key only as a SHA-256; ended rows sign out;
- password_links: an admin's reset links and invitations (hashed, expiring, single use);
- recovery_codes: ten one-time codes per user with a second factor (hashed);
- users.totp_secret (Fernet token), users.totp_last_step (no code accepted twice);
- merchants.require_two_factor.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 14:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table('merchants', schema=None) as batch_op:
        batch_op.add_column(sa.Column('require_two_factor', sa.Boolean(),
                                      server_default=sa.text('(false)'), nullable=False))
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('totp_secret', sa.Text()))
        batch_op.add_column(sa.Column('totp_last_step', sa.BigInteger()))

    op.create_table(
        'user_sessions',
        sa.Column('id', Id, primary_key=True),
        sa.Column('user_id', Id, sa.ForeignKey('users.id', name='fk_user_sessions_user_id_users'),
                  nullable=False),
        sa.Column('key_hash', sa.String(64), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('ip', sa.String(64)),
        sa.Column('user_agent', sa.String(300)),
        sa.Column('ended_at', sa.DateTime(timezone=True)),
        sa.Column('end_reason', sa.String(40)),
        sa.PrimaryKeyConstraint('id', name='pk_user_sessions'),
        sa.UniqueConstraint('key_hash', name='uq_user_sessions_key_hash'),
    )
    op.create_index('ix_user_sessions_user', 'user_sessions', ['user_id', 'ended_at'])

    op.create_table(
        'password_links',
        sa.Column('id', Id, primary_key=True),
        sa.Column('user_id', Id, sa.ForeignKey('users.id', name='fk_password_links_user_id_users'),
                  nullable=False),
        sa.Column('token_hash', sa.String(64), nullable=False),
        sa.Column('purpose', sa.String(10), nullable=False),
        sa.Column('created_by', sa.String(254), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('used_at', sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint('id', name='pk_password_links'),
        sa.UniqueConstraint('token_hash', name='uq_password_links_token_hash'),
    )
    op.create_index('ix_password_links_user', 'password_links', ['user_id'])

    op.create_table(
        'recovery_codes',
        sa.Column('id', Id, primary_key=True),
        sa.Column('user_id', Id, sa.ForeignKey('users.id', name='fk_recovery_codes_user_id_users'),
                  nullable=False),
        sa.Column('code_hash', sa.String(64), nullable=False),
        sa.Column('used_at', sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint('id', name='pk_recovery_codes'),
    )
    op.create_index('ix_recovery_codes_user', 'recovery_codes', ['user_id'])


def downgrade() -> None:
    op.drop_index('ix_recovery_codes_user', table_name='recovery_codes')
    op.drop_table('recovery_codes')
    op.drop_index('ix_password_links_user', table_name='password_links')
    op.drop_table('password_links')
    op.drop_index('ix_user_sessions_user', table_name='user_sessions')
    op.drop_table('user_sessions')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('totp_last_step')
        batch_op.drop_column('totp_secret')
    with op.batch_alter_table('merchants', schema=None) as batch_op:
        batch_op.drop_column('require_two_factor')
