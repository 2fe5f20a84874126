"""the provider-call NOTIFY leaves the committing transaction

Migration 0016 sent NOTIFY paydesk_provider_calls from a trigger, inside the transaction that
made a provider call due. PostgreSQL holds one database-wide lock from a notifying transaction's
commit until its WAL flush ends, so every create and refund through a provider waited for the
others' flushes: with the production-path benchmark and no worker running, creates/s through
Paystack were 0.46 of the simulator's with the trigger and 1.01 without it. The application now
sends the NOTIFY itself once the commit has returned, from a connection that writes nothing
(app/store/provider_calls.py, Announcer), so the trigger and its function go.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 17:40:00
"""
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

# 0016's: the row's check is due now (within the clock skew between application and server).
_DUE_NOW = "NEW.provider_check_at IS NOT NULL AND NEW.provider_check_at <= now() + interval '5 seconds'"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER trg_transactions_wake_provider_calls_update ON transactions")
    op.execute("DROP TRIGGER trg_transactions_wake_provider_calls_insert ON transactions")
    op.execute("DROP FUNCTION paydesk_wake_provider_calls()")


def downgrade() -> None:
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
