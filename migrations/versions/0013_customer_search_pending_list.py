"""customer search indexes: GIN's pending list on, at its smallest (64 kB)

Migration 0009 built the trigram indexes of customer_email and customer_name with fastupdate off,
for the reason 0004 gives for the reference's: with GIN's default pending list (4 MB) every
search also reads the trigrams of every row inserted since the last vacuum. Measured since, on
PostgreSQL, what writing each new customer straight into both indexes costs a create:

- the backend's CPU per create statement, 10,000 rows, the benchmark's repeated customer:
  0.36 ms without customer columns, 0.54 ms with them (fastupdate off), 0.48 ms with a 64 kB
  pending list; a new customer on each create (what production sees): 0.72-0.75 ms off,
  0.48-0.50 ms with the pending list. Served over HTTP (bench/ harness, 2 x 4 gunicorn
  threads), the backend's CPU per create fell from 1.41-1.46x the baseline's to 1.19x.
- the search: a 64 kB pending list holds the trigrams of a few hundred rows at most (the
  inserting backend, or autovacuum, merges it into the index when it is full), so a search
  reads at most 8 pages more. At 200,000 rows the dashboard's search (bench/search.py, every
  term class) had p95 11.2 ms with fastupdate off and 12.4 ms with the pending list holding
  the last 150 customers: no difference beyond the run's noise.

The reference's index keeps fastupdate off: every create pays it, the baseline's too, and it
costs about 0.03 ms (0004). SQLite's FTS5 tables are not concerned.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 12:00:00
"""
from alembic import op


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

CUSTOMER_INDEXES = ('ix_transactions_customer_email_trgm', 'ix_transactions_customer_name_trgm')
PENDING_LIST_KB = 64  # gin_pending_list_limit's smallest value


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for index in CUSTOMER_INDEXES:
        op.execute(f'ALTER INDEX {index} SET (fastupdate = on, gin_pending_list_limit = {PENDING_LIST_KB})')


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for index in CUSTOMER_INDEXES:
        # Turning fastupdate off leaves entries in the pending list until it is cleaned: clean it.
        op.execute(f'ALTER INDEX {index} SET (fastupdate = off)')
        op.execute(f'ALTER INDEX {index} RESET (gin_pending_list_limit)')
        op.execute(f"SELECT gin_clean_pending_list('{index}'::regclass)")
