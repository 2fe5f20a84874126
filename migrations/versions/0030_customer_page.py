"""customer page: transactions.customer_reference and the indexes that list one customer's rows

Issue 33 asks for a page per customer: every transaction of a customerReference (or of an
e-mail), newest first, paged by the list's keyset (created_at, id). The reference lives in the
billing JSON; it gets a column of its own, written with each new transaction
(app.payments.model.searchable_customer) and filled here from the rows already stored. Refunds
carry no billing and keep NULL (the page reads them through their payments).

The page must use an index at 1,000,000 rows:
- ix_transactions_customer_reference (merchant_id, mode, customer_reference, created_at, id):
  one customer's rows in the listing's order, so a page reads only its own rows;
- ix_transactions_customer_email_listing (merchant_id, mode, lower(customer_email), created_at,
  id): the same for an e-mail, any case (0009's lower() index is every merchant's, unordered).
The payment's timeline reads the provider events about its transactions by TxNo:
- ix_provider_events_tx_no (merchant_id, mode, tx_no).

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-27 22:40:00
"""
import sqlalchemy as sa
from alembic import op


revision = '0030'
down_revision = '0029'
branch_labels = None
depends_on = None

# The rule of app.payments.model.searchable_customer, in each database's JSON functions.
BACKFILL = {
    'postgresql': (
        "UPDATE transactions SET customer_reference = NULLIF(billing::json->>'customerReference', '') "
        "WHERE billing IS NOT NULL"
    ),
    'sqlite': (
        "UPDATE transactions SET customer_reference = NULLIF(json_extract(billing, '$.customerReference'), '') "
        "WHERE billing IS NOT NULL"
    ),
}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column('transactions', sa.Column('customer_reference', sa.String(100)))
    op.execute(BACKFILL[dialect])
    op.create_index('ix_transactions_customer_reference', 'transactions',
                    ['merchant_id', 'mode', 'customer_reference', 'created_at', 'id'])
    op.create_index('ix_transactions_customer_email_listing', 'transactions',
                    ['merchant_id', 'mode', sa.text('lower(customer_email)'), 'created_at', 'id'])
    op.create_index('ix_provider_events_tx_no', 'provider_events', ['merchant_id', 'mode', 'tx_no'])


def downgrade() -> None:
    op.drop_index('ix_provider_events_tx_no', table_name='provider_events')
    op.drop_index('ix_transactions_customer_email_listing', table_name='transactions')
    op.drop_index('ix_transactions_customer_reference', table_name='transactions')
    # Not batch mode: SQLite's table copy would lose the triggers on transactions (0009, 0012).
    op.drop_column('transactions', 'customer_reference')
