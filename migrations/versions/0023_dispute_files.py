"""dispute_files: the files of a dispute's evidence

Issue 30 asks for evidence with files (receipts, messages, proof of delivery): the merchant's
upload is kept here, bytes and all, until a worker uploads it to the provider with the evidence;
provider_file_id is what the provider answered, so a retried submission does not upload it twice.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 20:45:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'dispute_files',
        sa.Column('id', Id, primary_key=True),
        sa.Column('dispute_id', Id, sa.ForeignKey('disputes.id', name='fk_dispute_files_dispute_id_disputes'),
                  nullable=False),
        sa.Column('kind', sa.String(40), nullable=False),
        sa.Column('filename', sa.String(200), nullable=False),
        sa.Column('content_type', sa.String(100), nullable=False),
        sa.Column('size', sa.Integer(), nullable=False),
        sa.Column('sha256', sa.String(64), nullable=False),
        sa.Column('data', sa.LargeBinary(), nullable=False),
        sa.Column('provider_file_id', sa.String(200)),
        sa.Column('uploaded_at', sa.DateTime(timezone=True)),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('created_by', sa.String(254), nullable=False),
    )
    op.create_index('ix_dispute_files_dispute_id', 'dispute_files', ['dispute_id'])


def downgrade() -> None:
    op.drop_index('ix_dispute_files_dispute_id', 'dispute_files')
    op.drop_table('dispute_files')
