"""customer search: customer_email and customer_name on transactions, their indexes; transaction_notes

The dashboard's search finds transactions by the customer's e-mail and name as well as by
reference, TxNo and the provider's id. The two columns are written with each new transaction
(app.payments.model.searchable_customer) and filled here from the billing JSON of the rows
already stored; refunds carry no billing and keep NULL.

The substring search has to stay fast at 1,000,000 rows:
- PostgreSQL: pg_trgm GIN indexes on both columns, fastupdate off and a statistics target of
  1000, for the reasons migration 0004 gives for the reference's;
- SQLite: an FTS5 trigram table over both columns kept by triggers, as 0007 does for the
  reference (app.store.listing.customer_search asks it).
A whole e-mail address is looked up whole, through ix_transactions_customer_email_lower: its
trigrams ("@ex", "com") are in most rows, and the trigram search of one took 150-300 ms at
1,000,000 rows on PostgreSQL. The provider's id is matched exactly through
ix_transactions_provider_id (0001).

transaction_notes holds the staff's notes on a transaction (app.store.notes).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 14:30:00
"""
import sqlalchemy as sa
from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

CUSTOMER_STATISTICS = 1000
SQLITE_TABLE = 'transactions_customer_search'  # app.store.listing reads it
CUSTOMER_COLUMNS = ('customer_email', 'customer_name')

# The rule of app.payments.model.searchable_customer, in each database's JSON functions.
BACKFILL = {
    'postgresql': (
        "UPDATE transactions SET "
        "customer_email = NULLIF(billing::json->>'email', ''), "
        "customer_name = NULLIF(trim(concat_ws(' ', NULLIF(billing::json->>'firstName', ''), "
        "NULLIF(billing::json->>'lastName', ''))), '') "
        "WHERE billing IS NOT NULL"
    ),
    'sqlite': (
        "UPDATE transactions SET "
        "customer_email = NULLIF(json_extract(billing, '$.email'), ''), "
        "customer_name = NULLIF(trim(coalesce(json_extract(billing, '$.firstName'), '') || ' ' || "
        "coalesce(json_extract(billing, '$.lastName'), '')), '') "
        "WHERE billing IS NOT NULL"
    ),
}

_NEW = ', '.join(f'new.{c}' for c in CUSTOMER_COLUMNS)
_OLD = ', '.join(f'old.{c}' for c in CUSTOMER_COLUMNS)
_COLUMNS = ', '.join(CUSTOMER_COLUMNS)
SQLITE_UPGRADE = [
    f"CREATE VIRTUAL TABLE {SQLITE_TABLE} USING fts5("
    f"{_COLUMNS}, content='transactions', content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER {SQLITE_TABLE}_insert AFTER INSERT ON transactions BEGIN "
    f"INSERT INTO {SQLITE_TABLE}(rowid, {_COLUMNS}) VALUES (new.id, {_NEW}); END",
    f"CREATE TRIGGER {SQLITE_TABLE}_delete AFTER DELETE ON transactions BEGIN "
    f"INSERT INTO {SQLITE_TABLE}({SQLITE_TABLE}, rowid, {_COLUMNS}) VALUES ('delete', old.id, {_OLD}); END",
    f"CREATE TRIGGER {SQLITE_TABLE}_update AFTER UPDATE OF {_COLUMNS} ON transactions BEGIN "
    f"INSERT INTO {SQLITE_TABLE}({SQLITE_TABLE}, rowid, {_COLUMNS}) VALUES ('delete', old.id, {_OLD}); "
    f"INSERT INTO {SQLITE_TABLE}(rowid, {_COLUMNS}) VALUES (new.id, {_NEW}); END",
    f"INSERT INTO {SQLITE_TABLE}({SQLITE_TABLE}) VALUES ('rebuild')",
]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column('transactions', sa.Column('customer_email', sa.String(254)))
    op.add_column('transactions', sa.Column('customer_name', sa.String(201)))
    op.execute(BACKFILL[dialect])
    op.create_index('ix_transactions_customer_email_lower', 'transactions',
                    [sa.text('lower(customer_email)')])
    if dialect == 'postgresql':
        for column in CUSTOMER_COLUMNS:
            op.create_index(f'ix_transactions_{column}_trgm', 'transactions', [column],
                            postgresql_using='gin', postgresql_ops={column: 'gin_trgm_ops'},
                            postgresql_with={'fastupdate': 'off'})
            op.execute(f'ALTER TABLE transactions ALTER COLUMN {column} SET STATISTICS {CUSTOMER_STATISTICS}')
    elif dialect == 'sqlite':
        for statement in SQLITE_UPGRADE:
            op.execute(statement)

    op.create_table(
        'transaction_notes',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('transaction_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('merchant_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('author', sa.String(254), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['transaction_id'], ['transactions.id'],
                                name='fk_transaction_notes_transaction_id_transactions'),
        sa.ForeignKeyConstraint(['merchant_id'], ['merchants.id'],
                                name='fk_transaction_notes_merchant_id_merchants'),
        sa.PrimaryKeyConstraint('id', name='pk_transaction_notes'),
    )
    op.create_index('ix_transaction_notes_transaction', 'transaction_notes', ['transaction_id', 'id'])


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.drop_index('ix_transaction_notes_transaction', table_name='transaction_notes')
    op.drop_table('transaction_notes')
    op.drop_index('ix_transactions_customer_email_lower', table_name='transactions')
    if dialect == 'postgresql':
        for column in CUSTOMER_COLUMNS:
            op.drop_index(f'ix_transactions_{column}_trgm', table_name='transactions')
    elif dialect == 'sqlite':
        for trigger in ('insert', 'delete', 'update'):
            op.execute(f'DROP TRIGGER IF EXISTS {SQLITE_TABLE}_{trigger}')
        op.execute(f'DROP TABLE IF EXISTS {SQLITE_TABLE}')
    op.drop_column('transactions', 'customer_name')
    op.drop_column('transactions', 'customer_email')
