"""reference search index: GIN's pending list on, at its smallest (64 kB), as the customers'

Migration 0004 built the trigram index of transactions.reference with fastupdate off, so that a
search never reads a long pending list (GIN's default, 4 MB, made a 10,000-row search take 40 to
65 ms after 26,000 creates). Migration 0013 gave the customer indexes a 64 kB pending list
instead and measured no difference in the search. The reference's index had stayed as it was,
and it is now most of what a create writes: pg_walinspect over 600 creates (the benchmark's
references, 41 characters each, a new one every create) on PostgreSQL 15, after a checkpoint:

- fastupdate off: 14.9 kB of WAL and 69 records a create, of them 9.3 kB and 41 records (one
  per trigram) this index's;
- a 64 kB pending list: 10.6 kB and 54 records (4.9 kB and 26 records this index's: the list
  is merged into the index when full, where each trigram's new entries are written together);
- the backend's CPU a create, four runs in turn: 0.95 / 0.70, 0.68 / 0.62 ms (off / on).

A search served by the index reads at most 64 kB (8 pages) of pending entries more, as it does
for the customer columns. The inserting backend, or autovacuum, merges the list when it is full.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-04 14:30:00
"""
from alembic import op


revision = '0035'
down_revision = '0034'
branch_labels = None
depends_on = None

INDEX = 'ix_transactions_reference_trgm'
PENDING_LIST_KB = 64  # gin_pending_list_limit's smallest value


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute(f'ALTER INDEX {INDEX} SET (fastupdate = on, gin_pending_list_limit = {PENDING_LIST_KB})')


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    # Turning fastupdate off leaves entries in the pending list until it is cleaned: clean it.
    op.execute(f'ALTER INDEX {INDEX} SET (fastupdate = off)')
    op.execute(f'ALTER INDEX {INDEX} RESET (gin_pending_list_limit)')
    op.execute(f"SELECT gin_clean_pending_list('{INDEX}'::regclass)")
