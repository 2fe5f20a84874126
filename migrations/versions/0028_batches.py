"""batches and batch_rows: payouts and refunds by the file (issue 31, items 4 and 5)

A batch is checked row by row before anything is created; its valid rows are then created by a
worker, each row's state moved in the unit of work that creates its transaction.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-27 22:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'batches',
        sa.Column('id', Id, primary_key=True),
        sa.Column('public_id', sa.String(40), nullable=False),
        sa.Column('merchant_id', Id, sa.ForeignKey('merchants.id', name='fk_batches_merchant_id_merchants'),
                  nullable=False),
        sa.Column('mode', sa.String(10), nullable=False),
        sa.Column('kind', sa.String(10), nullable=False),
        sa.Column('state', sa.String(20), nullable=False),
        sa.Column('source', sa.String(10), nullable=False),
        sa.Column('file_name', sa.String(200)),
        sa.Column('row_count', sa.Integer(), nullable=False),
        sa.Column('totals', sa.Text(), nullable=False),
        sa.Column('request_key', sa.String(255)),
        sa.Column('approval_id', Id, sa.ForeignKey(
            'approval_requests.id', name='fk_batches_approval_id_approval_requests')),
        sa.Column('created_by', sa.String(254), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('submitted_by', sa.String(254)),
        sa.Column('submitted_at', sa.DateTime(timezone=True)),
        sa.Column('approved_by', sa.String(254)),
        sa.Column('approved_at', sa.DateTime(timezone=True)),
        sa.Column('finished_at', sa.DateTime(timezone=True)),
        sa.Column('lease_until', sa.DateTime(timezone=True)),
        sa.UniqueConstraint('public_id', name='uq_batches_public_id'),
        sa.UniqueConstraint('merchant_id', 'mode', 'request_key', name='uq_batches_request_key'),
    )
    op.create_index('ix_batches_listing', 'batches', ['merchant_id', 'mode', 'created_at'])
    op.create_index('ix_batches_state', 'batches', ['state', 'lease_until'])
    op.create_table(
        'batch_rows',
        sa.Column('id', Id, primary_key=True),
        sa.Column('batch_id', Id, sa.ForeignKey('batches.id', name='fk_batch_rows_batch_id_batches'),
                  nullable=False),
        sa.Column('row_number', sa.Integer(), nullable=False),
        sa.Column('input', sa.Text(), nullable=False),
        sa.Column('errors', sa.Text()),
        sa.Column('state', sa.String(10), nullable=False),
        sa.Column('tx_no', sa.String(40)),
        sa.UniqueConstraint('batch_id', 'row_number', name='uq_batch_rows_batch_row'),
    )
    op.create_index('ix_batch_rows_progress', 'batch_rows', ['batch_id', 'state', 'row_number'])
    op.create_index('ix_batch_rows_tx_no', 'batch_rows', ['tx_no'])


def downgrade() -> None:
    op.drop_index('ix_batch_rows_tx_no', 'batch_rows')
    op.drop_index('ix_batch_rows_progress', 'batch_rows')
    op.drop_table('batch_rows')
    op.drop_index('ix_batches_state', 'batches')
    op.drop_index('ix_batches_listing', 'batches')
    op.drop_table('batches')
