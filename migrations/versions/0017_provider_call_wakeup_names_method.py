"""the provider-call NOTIFY names the transaction's merchant, mode and method

Migration 0016's NOTIFY carried nothing, so every commit of a due call woke every worker's
feeder, which then looked for due calls again. While one provider account had no call to spare
(a slow or hanging provider), each create through it made each worker read all of that
account's waiting calls again, to find none it could start: the reads grew with the backlog
and took the node's CPU from the requests. The payload is now "merchant_id mode method_id":
a worker knows which account that is and stays asleep when that account has nothing to spare.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 17:10:00
"""
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def _wake_function(payload: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION paydesk_wake_provider_calls() RETURNS trigger AS $$
        BEGIN
            PERFORM pg_notify('paydesk_provider_calls', {payload});
            RETURN NULL;
        END
        $$ LANGUAGE plpgsql
    """


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_wake_function("NEW.merchant_id || ' ' || NEW.mode || ' ' || NEW.payment_method"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_wake_function("''"))
