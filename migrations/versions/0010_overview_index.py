"""overview index: every column the Overview page sums, after merchant, mode and created_at

The Overview page (app/store/overview.py) sums a merchant's payments and refunds of one mode
over a range of days, grouped by UTC day, currency and decline reason. With only
ix_transactions_listing (merchant_id, mode, created_at, id) each of the range's rows is
fetched from the table; with this index the range is one index-only scan on PostgreSQL
(and a covering index scan on SQLite). bench/overview.py measures it.

The columns are key columns rather than PostgreSQL INCLUDE columns, so the one definition in
app/store/tables.py serves both databases.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 14:30:00
"""
from alembic import op


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

COLUMNS = ['merchant_id', 'mode', 'created_at', 'kind', 'status', 'currency', 'amount_minor',
           'decline_reason']


def upgrade() -> None:
    op.create_index('ix_transactions_overview', 'transactions', COLUMNS)


def downgrade() -> None:
    op.drop_index('ix_transactions_overview', table_name='transactions')
