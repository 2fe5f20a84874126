"""request log: one row per request, no foreign keys, a BRIN index for the pruning

Issue 32 asks that writing the request log cost creates and refunds at most 5% of their
throughput. Measured with bench/request_log.py (PostgreSQL, the log off against batched) it cost
18%. The writer now sends its batches with COPY; and in PostgreSQL each logged request paid
(pg_stat_statements, per request): 45 us for its request_log row and 33 us for each of its
request_log_tx rows (a refund has two), with a foreign-key check that locks the merchant's row
(FOR KEY SHARE, taken at the same moment by every create of that merchant) and one per
request_log_tx row on its request_log row.

- The transactions a request touched move onto its own row: tx_no and other_tx_no (a refund
  names its payment and itself; no API request names more), each with a partial index for the
  transaction's page and the Developers page's search. request_log_tx goes, and with it a second
  row, two B-trees and a key check per touched transaction.
- request_log.merchant_id loses its foreign key: merchants are never deleted.
- ix_request_log_at becomes a BRIN index on PostgreSQL: rows are written in the order they are
  made, so a summary per range of pages serves the pruning's `at < cutoff` and costs an insert
  almost nothing. SQLite has no BRIN and keeps its B-tree.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-03 16:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0034'
down_revision = '0033'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TX_INDEXES = (('ix_request_log_tx_no', 'tx_no'), ('ix_request_log_other_tx_no', 'other_tx_no'))
# A request's first two touched transactions, in txNo order, as request_log_tx lists them.
FILL_FIRST = ("UPDATE request_log SET tx_no = (SELECT min(t.tx_no) FROM request_log_tx t "
              "WHERE t.request_log_id = request_log.id)")
FILL_SECOND = ("UPDATE request_log SET other_tx_no = (SELECT min(t.tx_no) FROM request_log_tx t "
               "WHERE t.request_log_id = request_log.id AND t.tx_no > request_log.tx_no) "
               "WHERE tx_no IS NOT NULL")


def _partial(column: str):
    return sa.text(f"{column} IS NOT NULL")


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    with op.batch_alter_table('request_log') as batch:
        batch.add_column(sa.Column('tx_no', sa.String(40)))
        batch.add_column(sa.Column('other_tx_no', sa.String(40)))
        batch.drop_constraint('fk_request_log_merchant_id_merchants', type_='foreignkey')
    op.execute(FILL_FIRST)
    op.execute(FILL_SECOND)
    for name, column in TX_INDEXES:
        op.create_index(name, 'request_log', ['merchant_id', 'mode', column],
                        postgresql_where=_partial(column), sqlite_where=_partial(column))
    op.drop_index('ix_request_log_tx_tx_no', table_name='request_log_tx')
    op.drop_table('request_log_tx')
    if postgres:
        op.drop_index('ix_request_log_at', table_name='request_log')
        op.create_index('ix_request_log_at', 'request_log', ['at'], postgresql_using='brin')


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == 'postgresql'
    if postgres:
        op.drop_index('ix_request_log_at', table_name='request_log')
        op.create_index('ix_request_log_at', 'request_log', ['at'])
    op.create_table(
        'request_log_tx',
        sa.Column('request_log_id', Id, sa.ForeignKey('request_log.id', name='fk_request_log_tx_request_log_id_request_log',
                                                      ondelete='CASCADE'), nullable=False),
        sa.Column('merchant_id', Id, nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('tx_no', sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint('request_log_id', 'tx_no', name='pk_request_log_tx'),
    )
    op.create_index('ix_request_log_tx_tx_no', 'request_log_tx', ['merchant_id', 'mode', 'tx_no'])
    for column in ('tx_no', 'other_tx_no'):
        op.execute(f"INSERT INTO request_log_tx (request_log_id, merchant_id, mode, tx_no) "
                   f"SELECT id, merchant_id, mode, {column} FROM request_log WHERE {column} IS NOT NULL")
    for name, _column in TX_INDEXES:
        op.drop_index(name, table_name='request_log')
    # Rows whose merchant is gone would refuse the key: the log keeps none of them.
    op.execute("DELETE FROM request_log_tx WHERE merchant_id NOT IN (SELECT id FROM merchants)")
    op.execute("DELETE FROM request_log WHERE merchant_id NOT IN (SELECT id FROM merchants)")
    with op.batch_alter_table('request_log') as batch:
        batch.drop_column('other_tx_no')
        batch.drop_column('tx_no')
        batch.create_foreign_key('fk_request_log_merchant_id_merchants', 'merchants', ['merchant_id'], ['id'])
