"""reference search on SQLite: an FTS5 trigram index of transactions.reference

The dashboard searches references by substring, any case. PostgreSQL has a pg_trgm index for
it (0004); SQLite had none and read the merchant's rows: 0.3-0.5 s per search at 1,000,000
transactions. This adds an FTS5 table with the trigram tokenizer (SQLite 3.34 or later; it
folds case) over the references, kept by triggers on transactions (content='transactions':
the index holds only trigrams, not a second copy of the text), and fills it from the rows
already there. app/store/listing.py (`reference_search`) asks it.

SQLite only, and only here: a virtual table and its triggers have no table definition in
app/store/tables.py.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 17:00:00
"""
from alembic import op


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

TABLE = 'transactions_reference_search'  # app.store.listing reads it

UPGRADE = [
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5("
    "reference, content='transactions', content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON transactions BEGIN "
    f"INSERT INTO {TABLE}(rowid, reference) VALUES (new.id, new.reference); END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON transactions BEGIN "
    f"INSERT INTO {TABLE}({TABLE}, rowid, reference) VALUES ('delete', old.id, old.reference); END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE OF reference ON transactions BEGIN "
    f"INSERT INTO {TABLE}({TABLE}, rowid, reference) VALUES ('delete', old.id, old.reference); "
    f"INSERT INTO {TABLE}(rowid, reference) VALUES (new.id, new.reference); END",
    f"INSERT INTO {TABLE}({TABLE}) VALUES ('rebuild')",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != 'sqlite':
        return
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != 'sqlite':
        return
    for trigger in ('insert', 'delete', 'update'):
        op.execute(f'DROP TRIGGER IF EXISTS {TABLE}_{trigger}')
    op.execute(f'DROP TABLE IF EXISTS {TABLE}')
