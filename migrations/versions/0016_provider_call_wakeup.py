"""wake the workers when a provider call is handed to them; each provider account's call health

A create, refund or payout through a provider behind a network is committed Pending with its
provider check due now; a worker makes the call. On PostgreSQL a trigger sends
NOTIFY paydesk_provider_calls for such a row, delivered when (and only if) its transaction
commits, so a listening worker calls the provider within milliseconds and no request pays an
extra statement for it. A check scheduled later (a claim, a retry) is not announced: the
workers' poll finds it. SQLite has no NOTIFY; its workers poll.

provider_accounts gains calls_state (healthy, slow, open: its circuit breaker) and
calls_state_since, written by the workers when an account's state changes and shown on the
dashboard's Providers page.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 15:00:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

# The row's check is due now (within the clock skew between the application and the server).
_DUE_NOW = "NEW.provider_check_at IS NOT NULL AND NEW.provider_check_at <= now() + interval '5 seconds'"


def upgrade() -> None:
    with op.batch_alter_table('provider_accounts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('calls_state', sa.String(length=10)))
        batch_op.add_column(sa.Column('calls_state_since', sa.DateTime(timezone=True)))
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("""
        CREATE FUNCTION paydesk_wake_provider_calls() RETURNS trigger AS $$
        BEGIN
            PERFORM pg_notify('paydesk_provider_calls', '');
            RETURN NULL;
        END
        $$ LANGUAGE plpgsql
    """)
    op.execute(f"""
        CREATE TRIGGER trg_transactions_wake_provider_calls_insert
        AFTER INSERT ON transactions FOR EACH ROW WHEN ({_DUE_NOW})
        EXECUTE FUNCTION paydesk_wake_provider_calls()
    """)
    op.execute(f"""
        CREATE TRIGGER trg_transactions_wake_provider_calls_update
        AFTER UPDATE OF provider_check_at ON transactions FOR EACH ROW WHEN ({_DUE_NOW})
        EXECUTE FUNCTION paydesk_wake_provider_calls()
    """)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER trg_transactions_wake_provider_calls_update ON transactions")
        op.execute("DROP TRIGGER trg_transactions_wake_provider_calls_insert ON transactions")
        op.execute("DROP FUNCTION paydesk_wake_provider_calls()")
    with op.batch_alter_table('provider_accounts', schema=None) as batch_op:
        batch_op.drop_column('calls_state_since')
        batch_op.drop_column('calls_state')
