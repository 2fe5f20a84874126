"""transaction list: an index for amount ranges, and PostgreSQL statistics on merchant and currency

GET /api/v1/transactions (issue 32) filters by an amount range in one currency. A narrow range
(one amount, to find a payment by it) matches a few rows among a million: without an index they
are found by walking the merchant's whole listing, newest first (326 ms p95 at 1M rows in
bench/listing.py). ix_transactions_amount finds them at once; a wide range keeps the listing
index, which the planner can tell apart only if it knows a merchant's currencies: the extended
statistics give it the dependency between merchant, mode and currency (without them it took the
amount index for ranges matching 300,000 rows: 1.6 s p95).

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27 22:30:00
"""
from alembic import op


revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_transactions_amount', 'transactions',
                    ['merchant_id', 'mode', 'currency', 'amount_minor'])
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('CREATE STATISTICS st_transactions_merchant_currency (mcv, dependencies) '
                   'ON merchant_id, mode, currency FROM transactions')
        op.execute('ANALYZE transactions')


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('DROP STATISTICS IF EXISTS st_transactions_merchant_currency')
    op.drop_index('ix_transactions_amount', table_name='transactions')
