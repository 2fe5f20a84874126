"""provider_accounts.test_*: a dashboard "Test connection" a worker is to make, and its answer

"Test connection" called the provider on the web request's thread, so a provider that hung held a
web thread for the read timeout (30 s), and a few clicks took every thread. The request now only
records that a test is asked (test_requested_at, and test_due_at for the workers' claim); a worker
calls the provider and stores the answer (test_finished_at, test_worked, test_message) for the
dashboard to show (app/providers/connection_tests.py).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-01 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

COLUMNS = (
    ('test_requested_at', sa.DateTime(timezone=True)),
    ('test_due_at', sa.DateTime(timezone=True)),
    ('test_finished_at', sa.DateTime(timezone=True)),
    ('test_worked', sa.Boolean()),
    ('test_message', sa.Text()),
)


# Plain ALTER TABLE on both databases, not a batch: nothing here needs SQLite's table copy.


def upgrade() -> None:
    for name, type_ in COLUMNS:
        op.add_column('provider_accounts', sa.Column(name, type_, nullable=True))


def downgrade() -> None:
    for name, _ in reversed(COLUMNS):
        op.drop_column('provider_accounts', name)
