"""reference search: pg_trgm GIN index on transactions.reference, finer statistics for reference

The dashboard searches references by substring, any case (reference ILIKE
'%term%'). On PostgreSQL with 1,000,000 transactions that query took over a
second (a scan of the merchant's rows); the trigram index serves it in
milliseconds (bench/results/ has the measurements).

PostgreSQL only, and only here:
- the index needs the pg_trgm extension, which no table definition can create
  (pg_trgm is a trusted extension since PostgreSQL 13: a database owner may
  create it without being a superuser);
- the statistics target is not part of a table definition. With the default
  (100) the planner guesses about 1% of rows match any rare substring, walks
  the newest-first listing index expecting to find a page of matches soon, and
  for an old order number scans hundreds of thousands of rows (0.8 s measured);
  with 1000 it sees that a rare substring is rare and uses the trigram index
  (1.5 ms), for a few milliseconds more planning.
The index is built with fastupdate off: with GIN's default pending list, every
search also reads the trigrams of all rows inserted since the last vacuum, one by
one (after 26,000 creates a 10,000-row search took 40 to 65 ms instead of a few);
writing each new reference straight into the index costs about 0.03 ms per insert.
The index itself is mirrored in app/store/tables.py (ddl_if PostgreSQL).
SQLite has no trigram index: there the search reads the merchant's rows.

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-22 04:00:00
"""
from alembic import op


revision = '0004'
down_revision = '0002'
branch_labels = None
depends_on = None

REFERENCE_STATISTICS = 1000


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute('CREATE EXTENSION IF NOT EXISTS pg_trgm')
    op.create_index('ix_transactions_reference_trgm', 'transactions', ['reference'],
                    postgresql_using='gin', postgresql_ops={'reference': 'gin_trgm_ops'},
                    postgresql_with={'fastupdate': 'off'})
    op.execute(f'ALTER TABLE transactions ALTER COLUMN reference SET STATISTICS {REFERENCE_STATISTICS}')


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute('ALTER TABLE transactions ALTER COLUMN reference SET STATISTICS -1')
    op.drop_index('ix_transactions_reference_trgm', table_name='transactions')
    # pg_trgm stays: other objects may have come to use it since.
