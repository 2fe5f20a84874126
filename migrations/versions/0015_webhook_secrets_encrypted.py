"""webhook signing secrets sealed at rest

Merchants' whsec_ secrets were stored in clear: anyone who could read the database (a backup, a
replica, a leaked dump) could sign webhooks as Paydesk. They are now Fernet tokens under
PAYDESK_ENCRYPTION_KEY, like provider secrets (app/store/encryption.py), read the way the
application reads the key (Config). A token is longer than the 100 characters the column took,
so it becomes TEXT. Only clear secrets (whsec_...) are sealed: a row a newer process already
sealed is left as it is. Downgrade opens them again.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 11:00:00
"""
import sqlalchemy as sa
from alembic import op

from app.config import Config
from app.store.encryption import SecretBox

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

CLEAR_PREFIX = "whsec_"
_secrets = sa.table("webhook_secrets", sa.column("id", sa.BigInteger), sa.column("secret", sa.Text))


def _rewrite(change, wanted) -> None:
    """Each row's secret through `change`, where `wanted(secret)` says it needs it."""
    conn = op.get_bind()
    for row in conn.execute(sa.select(_secrets.c.id, _secrets.c.secret)).all():
        if wanted(row.secret):
            conn.execute(sa.update(_secrets).where(_secrets.c.id == row.id)
                         .values(secret=change(row.secret)))


def upgrade() -> None:
    with op.batch_alter_table('webhook_secrets', schema=None) as batch_op:
        batch_op.alter_column('secret', type_=sa.Text(), existing_type=sa.String(length=100),
                              existing_nullable=False)
    box = SecretBox(Config().PAYDESK_ENCRYPTION_KEY)
    _rewrite(box.seal, lambda secret: secret.startswith(CLEAR_PREFIX))


def downgrade() -> None:
    box = SecretBox(Config().PAYDESK_ENCRYPTION_KEY)
    _rewrite(box.open, lambda secret: not secret.startswith(CLEAR_PREFIX))
    with op.batch_alter_table('webhook_secrets', schema=None) as batch_op:
        batch_op.alter_column('secret', type_=sa.String(length=100), existing_type=sa.Text(),
                              existing_nullable=False)
