"""provider calls: the due provider checks in a small table of their own, kept by triggers

Issue 29. A transaction's provider_check_at (when its provider is owed a question) stays on the
transaction; the workers found and claimed the due ones through an index on it. That index made
every write of provider_check_at a non-HOT update: a create through a network provider was
written into all of the transactions' indexes three times (the insert, the worker's claim, the
provider's answer), its trigram GIN indexes included. Measured with the production-path
benchmark (pg_stat_statements), the answer to a Paystack create cost 0.62 ms of PostgreSQL
time; with the index gone and room on the page, 0.16 ms (HOT).

provider_calls holds one row per transaction with a provider check: its due time, which the
workers' claims push on (a claim writes only here). Triggers on transactions keep it in step
with provider_check_at, on both databases, so no code path (a service, a sandbox reset, a
hand-written UPDATE) can set a check without its row: inserted when a transaction is written
with a check, moved when the check changes, deleted when it is cleared (and with the
transaction). The rows already due are copied in, with transactions locked against writes from
before the triggers exist until they are.

PostgreSQL also leaves a fifth of each new page of transactions free (fillfactor 80), so that
the provider's answer to a new transaction fits beside it (a HOT update needs room on the page).

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-03 15:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0033'
down_revision = '0032'
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UtcDateTime = sa.DateTime(timezone=True)
FILLFACTOR = 80

POSTGRES_UPGRADE = [
    "LOCK TABLE transactions IN SHARE ROW EXCLUSIVE MODE",
    """
    CREATE FUNCTION provider_call_due() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.provider_check_at IS NULL THEN
            DELETE FROM provider_calls WHERE transaction_id = NEW.id;
        ELSE
            INSERT INTO provider_calls (transaction_id, due_at) VALUES (NEW.id, NEW.provider_check_at)
            ON CONFLICT (transaction_id) DO UPDATE SET due_at = EXCLUDED.due_at;
        END IF;
        RETURN NULL;
    END
    $$
    """,
    "CREATE TRIGGER provider_calls_insert AFTER INSERT ON transactions FOR EACH ROW "
    "WHEN (NEW.provider_check_at IS NOT NULL) EXECUTE FUNCTION provider_call_due()",
    "CREATE TRIGGER provider_calls_update AFTER UPDATE OF provider_check_at ON transactions "
    "FOR EACH ROW WHEN (NEW.provider_check_at IS DISTINCT FROM OLD.provider_check_at) "
    "EXECUTE FUNCTION provider_call_due()",
    f"ALTER TABLE transactions SET (fillfactor = {FILLFACTOR})",
]

SQLITE_UPGRADE = [
    "CREATE TRIGGER provider_calls_insert AFTER INSERT ON transactions "
    "WHEN NEW.provider_check_at IS NOT NULL BEGIN "
    "INSERT INTO provider_calls (transaction_id, due_at) VALUES (NEW.id, NEW.provider_check_at); END",
    "CREATE TRIGGER provider_calls_update AFTER UPDATE OF provider_check_at ON transactions "
    "WHEN NEW.provider_check_at IS NOT OLD.provider_check_at BEGIN "
    "DELETE FROM provider_calls WHERE transaction_id = NEW.id; "
    "INSERT INTO provider_calls (transaction_id, due_at) SELECT NEW.id, NEW.provider_check_at "
    "WHERE NEW.provider_check_at IS NOT NULL; END",
]

BACKFILL = ("INSERT INTO provider_calls (transaction_id, due_at) "
            "SELECT id, provider_check_at FROM transactions WHERE provider_check_at IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        'provider_calls',
        sa.Column('transaction_id', Id,
                  sa.ForeignKey('transactions.id', name='fk_provider_calls_transaction_id_transactions',
                                ondelete='CASCADE'),
                  nullable=False),
        sa.Column('due_at', UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint('transaction_id', name='pk_provider_calls'),
    )
    op.create_index('ix_provider_calls_due_at', 'provider_calls', ['due_at'])
    upgrade_statements = POSTGRES_UPGRADE if op.get_bind().dialect.name == 'postgresql' else SQLITE_UPGRADE
    for statement in upgrade_statements:
        op.execute(statement)
    op.execute(BACKFILL)
    op.drop_index('ix_transactions_provider_check', table_name='transactions')


def downgrade() -> None:
    op.create_index('ix_transactions_provider_check', 'transactions', ['provider_check_at'])
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("ALTER TABLE transactions RESET (fillfactor)")
        op.execute("DROP TRIGGER provider_calls_update ON transactions")
        op.execute("DROP TRIGGER provider_calls_insert ON transactions")
        op.execute("DROP FUNCTION provider_call_due()")
    else:
        op.execute("DROP TRIGGER provider_calls_update")
        op.execute("DROP TRIGGER provider_calls_insert")
    # A claim's lease lived only here: the checks themselves are still on the transactions.
    op.drop_index('ix_provider_calls_due_at', table_name='provider_calls')
    op.drop_table('provider_calls')
