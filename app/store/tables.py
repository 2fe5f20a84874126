"""Every table Paydesk stores; the Alembic migrations create exactly these."""
from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.types import TypeDecorator

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets BIGINT.
Id = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on both databases (SQLite keeps them as naive UTC text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


merchants = Table(
    "merchants",
    metadata,
    Column("id", Id, primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    # Path component of the merchant's webhook inbox URL (random, not guessable).
    Column("inbox_key", String(64), nullable=False, unique=True),
    Column("default_callback_url", String(2048)),
    Column("created_at", UtcDateTime(), nullable=False),
    # Every user must have a second factor: those without one are sent to enrol after sign-in.
    Column("require_two_factor", Boolean, nullable=False, server_default=text("false")),
    # The IANA time zone its members' pages show times in (migration 0031); stored times stay UTC.
    Column("time_zone", String(64), nullable=False, server_default="UTC"),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    # SHA-256 of the token: tokens carry 256 bits of entropy, so a fast hash is enough.
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(20), nullable=False),
    Column("label", String(100), nullable=False, server_default=""),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("revoked_at", UtcDateTime()),
    # What the token may do (app.payments.tokens.SCOPES, comma-separated); tokens made before
    # scopes existed keep all of them (migration 0029).
    Column("scopes", String(100), nullable=False,
           server_default="read,payments,refunds,payouts,webhooks,sandbox"),
    Column("expires_at", UtcDateTime()),  # refused from then on; NULL: never expires
    Column("networks", Text),  # allowed client networks, comma-separated CIDRs; NULL: any
    Column("created_by", String(254)),  # the dashboard user who made it
)

webhook_secrets = Table(
    "webhook_secrets",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    # The whsec_ secret as a Fernet token (app/store/encryption.py), never in clear (migration 0015).
    Column("secret", Text, nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    # A rotated secret keeps signing beside the new one until this time.
    Column("expires_at", UtcDateTime()),
    Index("ix_webhook_secrets_merchant_mode", "merchant_id", "mode"),
)

# A merchant's connection to a real provider in one mode: its secrets only as Fernet tokens
# (app/store/encryption.py). At most one connected account per merchant, mode and provider;
# a disconnected one keeps its row (history names it) and loses its secrets.
provider_accounts = Table(
    "provider_accounts",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("provider", String(40), nullable=False),  # paystack | stripe
    Column("secret_key", Text),  # Fernet token; NULL once disconnected
    Column("webhook_secret", Text),  # Fernet token (Stripe's whsec_); NULL when none
    Column("key_hint", String(40), nullable=False),  # "sk_test_…a1b2": what the dashboard shows
    Column("base_url", String(2048)),  # NULL = the provider's public API
    # Path component of the account's inbound webhook URL (random, not guessable).
    Column("webhook_key", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    Column("disconnected_at", UtcDateTime()),
    # The workers' calls to it (app/providers/calls.py): healthy | slow | open (its circuit
    # breaker), since when; NULL until a worker has called it.
    Column("calls_state", String(10)),
    Column("calls_state_since", UtcDateTime()),
    # The dashboard's last "Test connection" (app/providers/connection_tests.py): asked when;
    # due for a worker's claim (NULL once answered); the answer in fixed words, and when.
    Column("test_requested_at", UtcDateTime()),
    Column("test_due_at", UtcDateTime()),
    Column("test_finished_at", UtcDateTime()),
    Column("test_worked", Boolean),
    Column("test_message", Text),
    Index("uq_provider_accounts_connected", "merchant_id", "mode", "provider", unique=True,
          postgresql_where=text("disconnected_at IS NULL"),
          sqlite_where=text("disconnected_at IS NULL")),
)

payment_methods = Table(
    "payment_methods",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    # NULL: offered in both modes (the simulator's); else only in that mode (a provider account's).
    Column("mode", String(10)),
    Column("method_id", String(64), nullable=False),
    Column("name", String(100), nullable=False),
    Column("kind", String(10), nullable=False),  # card | payout
    Column("currencies", Text, nullable=False),  # JSON array of ISO 4217 codes
    Column("countries", Text, nullable=False),  # JSON array of alpha-2 codes, [] = any
    Column("bank_list", String(20)),  # bank data source ("ng", "sepa") or NULL
    Column("account_rule", String(20)),  # nuban | iban | msisdn | NULL
    Column("partial_refunds", Boolean, nullable=False, server_default=text("true")),
    Column("provider", String(40), nullable=False, server_default="simulator"),
    Column("provider_account_id", ForeignKey("provider_accounts.id")),
    # False once its provider account is disconnected: no new transactions, history still reads it.
    Column("active", Boolean, nullable=False, server_default=text("true")),
)
# One method id per merchant and mode, a both-modes method counting in each.
Index("uq_payment_methods_merchant_mode_method", payment_methods.c.merchant_id,
      func.coalesce(payment_methods.c.mode, ""), payment_methods.c.method_id, unique=True)

transactions = Table(
    "transactions",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("tx_no", String(40), nullable=False),
    Column("kind", String(10), nullable=False),  # payment | payout | refund
    Column("status", String(20), nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reference", String(100), nullable=False),
    Column("statement_descriptor", String(100)),
    Column("callback_url", String(2048)),
    Column("payment_method", String(64), nullable=False),
    Column("billing", Text),  # JSON object
    Column("payment_details", Text),  # JSON object: bank, holder, accountNumber
    Column("original_id", ForeignKey("transactions.id")),
    Column("decline_reason", String(100)),
    Column("provider_transaction_id", String(100)),
    Column("provider_status", String(100)),
    Column("provider_message", String(500)),
    # The provider's hosted payment page; Paydesk's checkout URL redirects there.
    Column("provider_redirect_url", String(2048)),
    Column("success_url", String(2048)),
    Column("pending_url", String(2048)),
    Column("failure_url", String(2048)),
    Column("udf1", String(1000)),
    Column("udf2", String(1000)),
    Column("udf3", String(1000)),
    Column("created_by", String(200), nullable=False, server_default="api"),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    # Set while the provider owes an answer (async refunds, payouts, crashed
    # requests): the worker asks the provider again from this time on. Not indexed: the
    # workers find the due ones in provider_calls, which triggers keep in step with it.
    Column("provider_check_at", UtcDateTime()),
    # When a cancel was asked of a payment whose provider is behind a network: the worker asks
    # the provider to void it (app/payments/cancel.py). Kept once answered, as a record.
    Column("cancel_requested_at", UtcDateTime()),
    # A payment's refunds, in minor units: what its Pending and Captured refunds hold, and what
    # its Captured ones returned. Changed only in the database transaction that creates or
    # settles one of its refunds (`flask ledger verify` checks them against the refund rows).
    Column("refund_reserved_minor", BigInteger, nullable=False, server_default=text("0")),
    Column("refund_captured_minor", BigInteger, nullable=False, server_default=text("0")),
    # What its refund requests awaiting a second user's approval hold (app/payments/approvals.py):
    # counted with the reserved total by the refund reservation, moved into it on approval.
    Column("refund_held_minor", BigInteger, nullable=False, server_default=text("0")),
    # What its lost or accepted disputes took back (app/payments/disputes.py): no longer
    # refundable, so the refund guard counts it with the refunds' reservations.
    Column("dispute_lost_minor", BigInteger, nullable=False, server_default=text("0")),
    # What the list's search finds a customer by, from billing when the row is written
    # (Transaction.customer_email/customer_name); NULL for refunds, which carry no billing.
    Column("customer_email", String(254)),
    Column("customer_name", String(201)),
    # The customer page's key (billing.customerReference, migration 0030); NULL for refunds.
    Column("customer_reference", String(100)),
    UniqueConstraint("merchant_id", "mode", "tx_no", name="uq_transactions_merchant_mode_tx_no"),
    Index("ix_transactions_listing", "merchant_id", "mode", "created_at", "id"),
    # The API list's amount ranges (migration 0024, which also gives PostgreSQL statistics on
    # merchant, mode and currency together, so it takes this index for narrow ranges only).
    Index("ix_transactions_amount", "merchant_id", "mode", "currency", "amount_minor"),
    Index("ix_transactions_original", "original_id"),
    Index("ix_transactions_pending", "status", "created_at"),
    # Provider webhooks that name a transaction only by the provider's id.
    Index("ix_transactions_provider_id", "merchant_id", "mode", "provider_transaction_id"),
    # A reference is unique per merchant and mode among payments and payouts;
    # refunds repeat their original's reference.
    Index(
        "uq_transactions_reference",
        "merchant_id",
        "mode",
        "reference",
        unique=True,
        postgresql_where=text("kind <> 'refund'"),
        sqlite_where=text("kind <> 'refund'"),
    ),
    # The dashboard's search, reference ILIKE '%term%': a pg_trgm index (PostgreSQL
    # only; migration 0004 also creates the extension and sets the statistics target), new
    # entries gathered in a 64 kB pending list first (migration 0035).
    Index(
        "ix_transactions_reference_trgm",
        "reference",
        postgresql_using="gin",
        postgresql_ops={"reference": "gin_trgm_ops"},
        postgresql_with={"fastupdate": "on", "gin_pending_list_limit": 64},
    ).ddl_if(dialect="postgresql"),
    # The same search of customers' e-mails and names (migration 0009; SQLite has an FTS5 table),
    # new entries gathered in a 64 kB pending list first (migration 0013).
    Index(
        "ix_transactions_customer_email_trgm",
        "customer_email",
        postgresql_using="gin",
        postgresql_ops={"customer_email": "gin_trgm_ops"},
        postgresql_with={"fastupdate": "on", "gin_pending_list_limit": 64},
    ).ddl_if(dialect="postgresql"),
    Index(
        "ix_transactions_customer_name_trgm",
        "customer_name",
        postgresql_using="gin",
        postgresql_ops={"customer_name": "gin_trgm_ops"},
        postgresql_with={"fastupdate": "on", "gin_pending_list_limit": 64},
    ).ddl_if(dialect="postgresql"),
)

# A whole e-mail address typed in the search, any case (migration 0009).
Index("ix_transactions_customer_email_lower", func.lower(transactions.c.customer_email))
# One customer's rows in the listing's order, by reference or by e-mail (the customer page, 0030).
Index("ix_transactions_customer_reference", transactions.c.merchant_id, transactions.c.mode,
      transactions.c.customer_reference, transactions.c.created_at, transactions.c.id)
Index("ix_transactions_customer_email_listing", transactions.c.merchant_id, transactions.c.mode,
      func.lower(transactions.c.customer_email), transactions.c.created_at, transactions.c.id)

# The transactions whose provider_check_at is set, by when they are due (migration 0033): the
# workers' queue of provider calls. Triggers on transactions insert, move and delete a row with
# its provider_check_at; a worker's claim pushes due_at on here alone, so the transaction's own
# row is not written (and its next update can be HOT: provider_check_at is in no index).
provider_calls = Table(
    "provider_calls",
    metadata,
    Column("transaction_id", Id, ForeignKey("transactions.id", ondelete="CASCADE"), primary_key=True),
    Column("due_at", UtcDateTime(), nullable=False),
    Index("ix_provider_calls_due_at", "due_at"),
)


def _daily_total_columns() -> list[Column]:
    """What a daily total is kept per (merchant, mode, UTC day, currency, kind, status, decline
    reason, '' for none) and what it holds: a count of transactions and their amount."""
    return [
        Column("merchant_id", Id, nullable=False),
        Column("mode", String(10), nullable=False),
        Column("day", Date, nullable=False),
        Column("currency", String(3), nullable=False),
        Column("kind", String(10), nullable=False),
        Column("status", String(20), nullable=False),
        Column("decline_reason", String(100), nullable=False, server_default=""),
        Column("transaction_count", BigInteger, nullable=False),
        Column("amount_minor", BigInteger, nullable=False),
    ]


# Transactions counted and summed per UTC day (app/store/daily_totals.py, migration 0012).
# Triggers on transactions write a change row in the same database transaction as every insert,
# delete and change of a summed column; the worker folds the changes into daily_totals. No
# foreign key: the triggers' inserts check nothing.
daily_total_changes = Table(
    "daily_total_changes",
    metadata,
    Column("id", Id, primary_key=True),
    *_daily_total_columns(),
)
daily_totals = Table(
    "daily_totals",
    metadata,
    *_daily_total_columns(),
    PrimaryKeyConstraint("merchant_id", "mode", "day", "currency", "kind", "status", "decline_reason"),
)

status_history = Table(
    "status_history",
    metadata,
    Column("id", Id, primary_key=True),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False, index=True),
    Column("from_status", String(20)),
    Column("to_status", String(20), nullable=False),
    Column("source", String(100), nullable=False),  # api, checkout, worker, sandbox, user:<email>
    Column("note", String(500)),
    Column("at", UtcDateTime(), nullable=False),
)

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("key", String(255), nullable=False),
    Column("request_hash", String(64), nullable=False),
    Column("state", String(10), nullable=False),  # running | done
    # The transaction the request created, written in the same database
    # transaction as it: a request that died after that commit is answered from it.
    Column("transaction_id", ForeignKey("transactions.id")),
    Column("response_status", Integer),
    Column("response_body", Text),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("merchant_id", "mode", "key", name="uq_idempotency_keys_merchant_mode_key"),
    Index("ix_idempotency_keys_created", "created_at"),
)

webhook_events = Table(
    "webhook_events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False, index=True),
    Column("webhook_id", String(64), nullable=False, unique=True),  # stable across retries
    Column("event_type", String(40), nullable=False),  # e.g. refund.captured
    Column("url", String(2048), nullable=False),
    Column("payload", Text, nullable=False),  # the exact JSON body sent
    Column("state", String(10), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", UtcDateTime()),
    Column("last_http_status", Integer),
    Column("last_error", String(500)),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("delivered_at", UtcDateTime()),
    # The next attempt was asked for by hand (resend); it is logged as manual.
    Column("next_attempt_manual", Boolean, nullable=False, server_default=text("false")),
    # Attempts made before the current retry schedule began (a resend starts a new one).
    Column("schedule_offset", Integer, nullable=False, server_default="0"),
    # The event this delivery carries (NULL for deliveries older than events, or once the event
    # is past its retention), and the merchant's endpoint it goes to (NULL: the callbackUrl).
    Column("event_id", ForeignKey("events.id"), index=True),
    Column("endpoint_id", ForeignKey("webhook_endpoints.id")),
    Index("ix_webhook_events_due", "state", "next_attempt_at"),
    Index("ix_webhook_events_merchant", "merchant_id", "mode", "created_at"),
    # The few not delivered (yet), for the Webhooks page's state filter (migration 0036).
    Index("ix_webhook_events_not_delivered", "merchant_id", "mode", "created_at",
          postgresql_where=text("state <> 'delivered'"), sqlite_where=text("state <> 'delivered'")),
    Index("ix_webhook_events_endpoint", "endpoint_id", "created_at"),
)

webhook_attempts = Table(
    "webhook_attempts",
    metadata,
    Column("id", Id, primary_key=True),
    Column("event_id", ForeignKey("webhook_events.id"), nullable=False, index=True),
    Column("attempt_no", Integer, nullable=False),
    Column("started_at", UtcDateTime(), nullable=False),
    Column("duration_ms", Integer),
    Column("http_status", Integer),
    Column("request_headers", Text),  # JSON object
    Column("response_excerpt", Text),  # at most 4 KiB
    Column("error", String(500)),
    Column("manual", Boolean, nullable=False, server_default=text("false")),
)

inbox_messages = Table(
    "inbox_messages",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("received_at", UtcDateTime(), nullable=False),
    Column("webhook_id", String(200)),
    Column("headers", Text, nullable=False),  # JSON object
    Column("body", Text, nullable=False),
    Column("signature_valid", Boolean, nullable=False),
    Column("mode", String(10)),  # the mode whose secret verified it
    Column("duplicate", Boolean, nullable=False),
    Index("ix_inbox_messages_merchant", "merchant_id", "received_at"),
    Index("ix_inbox_messages_webhook_id", "merchant_id", "webhook_id"),
)

users = Table(
    "users",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("email", String(254), nullable=False, unique=True),
    Column("password_hash", String(200), nullable=False),
    Column("role", String(20), nullable=False),  # support | finance | payouts | admin
    Column("active", Boolean, nullable=False, server_default=text("true")),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("last_login_at", UtcDateTime()),
    # TOTP second factor: the secret as a Fernet token (app/store/encryption.py), NULL when none;
    # the last time-step a code was accepted for, so a code is never accepted twice.
    Column("totp_secret", Text),
    Column("totp_last_step", BigInteger),
    # The user's own time zone (NULL: the merchant's) and locale for dates and amounts (NULL: en-GB).
    Column("time_zone", String(64)),
    Column("locale", String(16)),
)

# One row per sign-in: the session cookie carries a random key whose SHA-256 is key_hash, and
# every request checks the row is still live (ended_at NULL), so ending it signs the cookie out.
user_sessions = Table(
    "user_sessions",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", ForeignKey("users.id"), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("last_seen_at", UtcDateTime(), nullable=False),
    Column("ip", String(64)),
    Column("user_agent", String(300)),
    Column("ended_at", UtcDateTime()),
    Column("end_reason", String(40)),  # signed out | ended by user | password changed | ...
    Index("ix_user_sessions_user", "user_id", "ended_at"),
)

# One-time links that let a user choose a password: an admin's reset link or an invitation.
# Only the SHA-256 of the link's token is kept; used_at makes it single use.
password_links = Table(
    "password_links",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", ForeignKey("users.id"), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("purpose", String(10), nullable=False),  # reset | invite
    Column("created_by", String(254), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Column("used_at", UtcDateTime()),
    Index("ix_password_links_user", "user_id"),
)

# Ten one-time codes per user with a second factor, for a lost authenticator; SHA-256 only.
recovery_codes = Table(
    "recovery_codes",
    metadata,
    Column("id", Id, primary_key=True),
    Column("user_id", ForeignKey("users.id"), nullable=False),
    Column("code_hash", String(64), nullable=False),
    Column("used_at", UtcDateTime()),
    Index("ix_recovery_codes_user", "user_id"),
)

# The TOTP secret a user is enrolling (a Fernet token), until its first code confirms it.
totp_enrolments = Table(
    "totp_enrolments",
    metadata,
    Column("user_id", ForeignKey("users.id"), primary_key=True),
    Column("sealed_secret", Text, nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
)

# One row per failed sign-in (or wrong current password), read by every web process:
# app/auth/throttle.py decides from their counts; the worker deletes those past its window.
sign_in_failures = Table(
    "sign_in_failures",
    metadata,
    Column("id", Id, primary_key=True),
    Column("account", String(254), nullable=False),  # the e-mail as typed, lower case
    Column("address", String(64), nullable=False),  # the client's address
    Column("failed_at", UtcDateTime(), nullable=False),
    Index("ix_sign_in_failures_address", "address", "failed_at"),
    Index("ix_sign_in_failures_account", "account", "failed_at"),
    Index("ix_sign_in_failures_failed_at", "failed_at"),
)

# Every webhook a provider sent to a provider account's URL, verified or not, and what came of it.
provider_events = Table(
    "provider_events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("provider_account_id", ForeignKey("provider_accounts.id"), nullable=False),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("received_at", UtcDateTime(), nullable=False),
    Column("event_type", String(100)),
    Column("event_id", String(255)),  # the provider's id, when it gives one (Stripe)
    Column("body_sha256", String(64), nullable=False),  # replays are found by it
    Column("body", Text, nullable=False),
    Column("signature_valid", Boolean, nullable=False),
    Column("tx_no", String(40)),  # the transaction it was about, when found
    Column("result", String(30), nullable=False),  # applied | no change | duplicate | ignored | ...
    Column("detail", String(500)),
    Index("ix_provider_events_merchant", "merchant_id", "mode", "received_at"),
    Index("ix_provider_events_replay", "provider_account_id", "body_sha256"),
    # A payment's timeline reads the events about its transactions (migration 0030).
    Index("ix_provider_events_tx_no", "merchant_id", "mode", "tx_no"),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10)),
    Column("actor", String(254), nullable=False),  # user e-mail or api token prefix
    Column("action", String(50), nullable=False),  # refund.create, payout.create, ...
    Column("target", String(100)),
    Column("amount_minor", BigInteger),
    Column("currency", String(3)),
    Column("detail", Text),
    Column("ip", String(64)),
    Column("at", UtcDateTime(), nullable=False),
    Index("ix_audit_log_merchant", "merchant_id", "at"),
)

# Per merchant and currency: a dashboard refund or payout above this amount waits for a second
# user's approval (app/payments/approvals.py). Both modes.
approval_thresholds = Table(
    "approval_thresholds",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("updated_by", String(254), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("merchant_id", "currency", name="uq_approval_thresholds_merchant_currency"),
)

# Per user and currency: the largest refund and payout they may make or approve (NULL: no limit).
user_limits = Table(
    "user_limits",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("user_id", ForeignKey("users.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("max_refund_minor", BigInteger),
    Column("max_payout_minor", BigInteger),
    Column("updated_by", String(254), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("user_id", "currency", name="uq_user_limits_user_currency"),
)

# A dashboard refund or payout above its threshold, waiting for a second user. Its state moves
# once, from awaiting, by one conditional UPDATE (so a double click or two approvers at once
# move it once). An awaiting refund request holds its amount on the payment's refund_held_minor.
approval_requests = Table(
    "approval_requests",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("kind", String(10), nullable=False),  # refund | payout
    Column("state", String(10), nullable=False),  # awaiting | approved | rejected | expired | failed
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("original_id", ForeignKey("transactions.id")),  # the payment a refund request is of
    Column("request", Text, nullable=False),  # JSON: the refund or create request's body
    Column("form_key", String(64), nullable=False),  # the confirmation form's one-time key
    Column("requested_by", String(254), nullable=False),
    Column("requested_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Column("decided_by", String(254)),
    Column("decided_at", UtcDateTime()),
    Column("result_tx_no", String(40)),  # the refund or payout its approval made
    Column("note", String(500)),
    UniqueConstraint("merchant_id", "mode", "form_key", name="uq_approval_requests_form_key"),
    Index("ix_approval_requests_listing", "merchant_id", "mode", "state", "requested_at"),
    Index("ix_approval_requests_original", "original_id"),
    Index("ix_approval_requests_expiry", "state", "expires_at"),
)

# Staff notes on a transaction, newest first on its page; each one is also in the audit log.
transaction_notes = Table(
    "transaction_notes",
    metadata,
    Column("id", Id, primary_key=True),
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("author", String(254), nullable=False),  # the dashboard user's e-mail
    Column("body", Text, nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_transaction_notes_transaction", "transaction_id", "id"),
)

# A provider account's bank list for a currency and country, as a worker last fetched it
# (app/providers/bank_refresh.py). Requests read only this copy (app/payments/bank_lists.py);
# a row without banks is one asked for and not fetched yet.
bank_lists = Table(
    "bank_lists",
    metadata,
    Column("id", Id, primary_key=True),
    Column("provider_account_id", ForeignKey("provider_accounts.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("country", String(2), nullable=False),  # alpha-2: the country the provider lists
    Column("banks", Text),  # JSON array of {"code", "name"}; NULL until first fetched
    Column("fetched_at", UtcDateTime()),  # when the stored banks were fetched
    # When a worker should fetch it next: fetched_at + 1 hour, now when asked for, later after
    # a failure (backoff), a little ahead while a worker fetches it (its claim).
    Column("refresh_due_at", UtcDateTime(), nullable=False),
    Column("failed_fetches", Integer, nullable=False, server_default=text("0")),  # in a row
    Column("last_error", String(500)),  # why the last fetch failed; NULL after a success
    UniqueConstraint("provider_account_id", "currency", "country",
                     name="uq_bank_lists_account_currency_country"),
    Index("ix_bank_lists_refresh_due_at", "refresh_due_at"),
)

# What a provider paid out to a merchant's bank on one day in one currency (a Paystack settlement,
# a Stripe payout, the simulator's daily sandbox settlement), as a worker last fetched it
# (app/providers/settlement_fetch.py). One row per merchant, mode, provider and provider settlement
# id: a re-fetch updates it and replaces its lines in the same database transaction.
settlements = Table(
    "settlements",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("provider", String(40), nullable=False),  # paystack | stripe | simulator
    Column("provider_account_id", ForeignKey("provider_accounts.id")),  # NULL: the simulator's
    Column("provider_settlement_id", String(100), nullable=False),
    Column("settled_on", Date, nullable=False),
    Column("currency", String(3), nullable=False),
    # Minor units, as the provider reports them (app/payments/reconcile.py).
    Column("gross_minor", BigInteger, nullable=False),
    Column("fees_minor", BigInteger, nullable=False),
    Column("net_minor", BigInteger, nullable=False),
    Column("status", String(40), nullable=False),  # the provider's own word
    Column("fetched_at", UtcDateTime(), nullable=False),
    UniqueConstraint("merchant_id", "mode", "provider", "provider_settlement_id",
                     name="uq_settlements_provider_id"),
    Index("ix_settlements_listing", "merchant_id", "mode", "id"),
)

# A settlement's lines: the provider's transactions it carried and what reconciliation found.
settlement_lines = Table(
    "settlement_lines",
    metadata,
    Column("id", Id, primary_key=True),
    Column("settlement_id", ForeignKey("settlements.id"), nullable=False),
    Column("provider_transaction_id", String(100), nullable=False),
    Column("reference", String(100)),  # Paydesk's txNo when the provider keeps it
    Column("line_type", String(10), nullable=False),  # payment | refund | dispute | other
    Column("gross_minor", BigInteger, nullable=False),
    Column("fee_minor", BigInteger, nullable=False),
    Column("net_minor", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("transaction_id", ForeignKey("transactions.id")),  # the matched Paydesk transaction
    # matched | amount_differs | unknown_to_paydesk
    Column("match_result", String(30), nullable=False),
    Index("ix_settlement_lines_settlement", "settlement_id", "id"),
    Index("ix_settlement_lines_transaction", "transaction_id"),
)

# When a worker should next fetch a provider account's settlements (app/providers/settlement_fetch.py):
# a row appears with an account's first fetch; due_at moves ahead while a worker fetches (its claim).
settlement_fetches = Table(
    "settlement_fetches",
    metadata,
    Column("provider_account_id", ForeignKey("provider_accounts.id"), primary_key=True),
    Column("due_at", UtcDateTime(), nullable=False),
    Column("fetched_at", UtcDateTime()),  # the last successful fetch
    Column("failed_fetches", Integer, nullable=False, server_default=text("0")),  # in a row
    Column("last_error", String(500)),
)

# A customer's dispute of a payment (a chargeback), as its provider reports it
# (app/payments/disputes.py has its rules). `action` is what Paydesk owes the provider
# (evidence to submit, an acceptance), made by a worker from `action_due_at` on
# (app/payments/dispute_calls.py); `action_claimed_until` keeps other workers off meanwhile.
disputes = Table(
    "disputes",
    metadata,
    Column("id", Id, primary_key=True),
    Column("dispute_no", String(40), nullable=False, unique=True),  # DSP-..., the API's id
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("payment_id", ForeignKey("transactions.id"), nullable=False, index=True),
    Column("provider", String(20), nullable=False),  # stripe | paystack | simulator
    Column("provider_account_id", ForeignKey("provider_accounts.id")),  # NULL: the simulator
    Column("provider_dispute_id", String(100), nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reason", String(200)),
    Column("status", String(20), nullable=False),
    Column("provider_status", String(50)),
    Column("due_by", UtcDateTime()),
    Column("evidence", Text),  # JSON object: the drafted or sent evidence text fields
    Column("evidence_submitted_at", UtcDateTime()),
    Column("evidence_submitted_by", String(254)),
    Column("action", String(20)),  # submit_evidence | accept: owed to the provider
    Column("action_by", String(254)),
    Column("action_due_at", UtcDateTime()),
    Column("action_claimed_until", UtcDateTime()),
    Column("action_attempts", Integer, nullable=False, server_default=text("0")),
    Column("action_error", String(500)),  # why the provider refused or could not take it
    # When a worker last asked the provider where an open dispute stands (missed webhooks).
    Column("status_checked_at", UtcDateTime()),
    # When the users who answer disputes were reminded that its deadline is near (once per deadline).
    Column("reminded_at", UtcDateTime()),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("merchant_id", "mode", "provider", "provider_dispute_id",
                     name="uq_disputes_provider_dispute"),
    Index("ix_disputes_queue", "merchant_id", "mode", "status", "due_by"),
    Index("ix_disputes_action_due", "action_due_at"),
)

# Every status a dispute took, where the news came from, and when.
dispute_history = Table(
    "dispute_history",
    metadata,
    Column("id", Id, primary_key=True),
    Column("dispute_id", ForeignKey("disputes.id"), nullable=False, index=True),
    Column("from_status", String(20)),
    Column("to_status", String(20), nullable=False),
    Column("source", String(254), nullable=False),  # stripe webhook, worker, sandbox, a user, ...
    Column("note", String(500)),
    Column("at", UtcDateTime(), nullable=False),
)

# The files of a dispute's evidence (app/payments/dispute_files.py): the bytes until a worker
# uploads them to the provider, and the provider's file id once it has.
dispute_files = Table(
    "dispute_files",
    metadata,
    Column("id", Id, primary_key=True),
    Column("dispute_id", ForeignKey("disputes.id"), nullable=False, index=True),
    Column("kind", String(40), nullable=False),
    Column("filename", String(200), nullable=False),
    Column("content_type", String(100), nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("provider_file_id", String(200)),
    Column("uploaded_at", UtcDateTime()),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("created_by", String(254), nullable=False),
)

# The people a merchant pays again (issue 31): a payout's destination and billing, saved by a
# payout operator (app/payments/recipients.py). Deleting archives: a payout keeps its own copy of
# the details, and an archived recipient is never paid again. Account numbers are stored as
# transactions.payment_details stores them, and shown masked once saved.
recipients = Table(
    "recipients",
    metadata,
    Column("id", Id, primary_key=True),
    Column("public_id", String(40), nullable=False, unique=True),  # rcp_..., the API's and CSV's id
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("payment_method", String(64), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("country", String(2)),
    Column("bank", String(20)),  # NULL for methods without a bank list
    Column("holder", String(140), nullable=False),
    Column("account_number", String(64), nullable=False),  # normalised by the method's rule
    Column("label", String(100)),
    # The billing block a payout to the recipient carries (a create requires it).
    Column("first_name", String(100), nullable=False),
    Column("last_name", String(100), nullable=False),
    Column("email", String(254), nullable=False),
    Column("customer_reference", String(100), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("created_by", String(254), nullable=False),
    Column("archived_at", UtcDateTime()),
    Column("archived_by", String(254)),
    Index("ix_recipients_listing", "merchant_id", "mode", "holder"),
)

# One live (not archived) recipient per account: saving it twice finds the first.
Index("uq_recipients_account", recipients.c.merchant_id, recipients.c.mode,
      recipients.c.payment_method, func.coalesce(recipients.c.bank, ""), recipients.c.account_number,
      unique=True, postgresql_where=recipients.c.archived_at.is_(None),
      sqlite_where=recipients.c.archived_at.is_(None))


# Whose a bank account is, as a provider account's provider resolved it (Paystack's GET
# /bank/resolve), for the payout form to show before a payout is confirmed
# (app/payments/account_names.py). A request records what it wants (due_at now); a worker asks
# the provider and stores the answer (app/providers/account_resolutions.py). A row answered is
# the cache: the same account at the same bank costs no second call while the answer is fresh.
account_resolutions = Table(
    "account_resolutions",
    metadata,
    Column("id", Id, primary_key=True),
    Column("provider_account_id", ForeignKey("provider_accounts.id"), nullable=False),
    Column("bank_code", String(20), nullable=False),
    Column("account_number", String(64), nullable=False),  # normalised by the method's rule
    Column("holder_name", String(200)),  # the provider's answer; NULL until resolved
    Column("refusal", String(500)),  # the provider's words when it found no such account
    Column("last_error", String(500)),  # why the last try got no answer (it is tried again)
    Column("requested_at", UtcDateTime(), nullable=False),  # when it was last asked for
    # When a worker should ask the provider: now when asked for, later after a failed try
    # (backoff), a little ahead while a worker asks (its claim); NULL once answered.
    Column("due_at", UtcDateTime()),
    Column("failed_tries", Integer, nullable=False, server_default=text("0")),  # in a row
    Column("answered_at", UtcDateTime()),
    UniqueConstraint("provider_account_id", "bank_code", "account_number",
                     name="uq_account_resolutions_account_bank_number"),
    Index("ix_account_resolutions_due_at", "due_at"),
)


# A token's daily limit per kind (refund, payout) and currency (app.payments.tokens.TokenLimit).
api_token_limits = Table(
    "api_token_limits",
    metadata,
    Column("token_id", ForeignKey("api_tokens.id"), nullable=False),
    Column("kind", String(10), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("daily_minor", BigInteger, nullable=False),
    PrimaryKeyConstraint("token_id", "kind", "currency"),
)

# What a token with a limit has refunded or paid out on a UTC day: taken with a conditional
# upsert in the unit that writes the refund or payout (app.store.token_limits).
token_day_totals = Table(
    "token_day_totals",
    metadata,
    Column("token_id", ForeignKey("api_tokens.id"), nullable=False),
    Column("day", Date, nullable=False),
    Column("kind", String(10), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("used_minor", BigInteger, nullable=False),
    PrimaryKeyConstraint("token_id", "day", "kind", "currency"),
)

# Every API request, its bodies masked (app.api.request_log), kept REQUEST_LOG_RETENTION_DAYS.
# One row per API request (migration 0034: no foreign key; the transactions it touched on the
# row itself, not in a table of their own), written by a COPY of its process's batch.
request_log = Table(
    "request_log",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", Id, nullable=False),
    Column("mode", String(10), nullable=False),
    Column("token_id", Id),
    Column("token_label", String(100), nullable=False),
    Column("method", String(10), nullable=False),
    Column("path", String(500), nullable=False),
    Column("status", Integer, nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("request_id", String(64), nullable=False),
    Column("idempotency_key", String(255)),
    Column("request_body", Text),
    Column("response_body", Text),
    Column("at", UtcDateTime(), nullable=False),
    # The transactions it touched (its path's txNo, its body's, its answer's), in txNo order: a
    # refund names its payment and itself, no API request more.
    Column("tx_no", String(40)),
    Column("other_tx_no", String(40)),
    Index("ix_request_log_listing", "merchant_id", "mode", "at"),
    Index("ix_request_log_token", "token_id", "at"),
    # The pruning's: BRIN on PostgreSQL, rows being written in time order.
    Index("ix_request_log_at", "at", postgresql_using="brin"),
    Index("ix_request_log_tx_no", "merchant_id", "mode", "tx_no",
          postgresql_where=text("tx_no IS NOT NULL"), sqlite_where=text("tx_no IS NOT NULL")),
    Index("ix_request_log_other_tx_no", "merchant_id", "mode", "other_tx_no",
          postgresql_where=text("other_tx_no IS NOT NULL"), sqlite_where=text("other_tx_no IS NOT NULL")),
)

# Batches of payouts or refunds (app/payments/batches.py): a file or a JSON list, every row checked
# before anything is created, then (after its approval when above the threshold) run by a worker.
# state: review -> (awaiting_approval) -> running -> done, or cancelled. A worker holds a running
# batch's lease (lease_until) while it creates rows; a killed worker's lease lapses to another.
batches = Table(
    "batches",
    metadata,
    Column("id", Id, primary_key=True),
    Column("public_id", String(40), nullable=False, unique=True),  # bat_...
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("kind", String(10), nullable=False),  # payout | refund
    Column("state", String(20), nullable=False),
    Column("source", String(10), nullable=False),  # api | dashboard
    Column("file_name", String(200)),
    Column("row_count", Integer, nullable=False),
    Column("totals", Text, nullable=False),  # JSON {"EUR": "100.00"}: the valid rows' totals
    # The Idempotency-Key (API) or upload form's one-time key: one batch per key.
    Column("request_key", String(255)),
    Column("approval_id", ForeignKey("approval_requests.id")),
    Column("created_by", String(254), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("submitted_by", String(254)),
    Column("submitted_at", UtcDateTime()),
    Column("approved_by", String(254)),
    Column("approved_at", UtcDateTime()),
    Column("finished_at", UtcDateTime()),
    Column("lease_until", UtcDateTime()),
    UniqueConstraint("merchant_id", "mode", "request_key", name="uq_batches_request_key"),
    Index("ix_batches_listing", "merchant_id", "mode", "created_at"),
    Index("ix_batches_state", "state", "lease_until"),
)

# One row of a batch: its input as sent, the create or refund service's messages when it was
# refused (per field), and once run the transaction it made. state: invalid | valid | skipped
# (invalid when the valid rows were run) | created | failed (refused when run).
batch_rows = Table(
    "batch_rows",
    metadata,
    Column("id", Id, primary_key=True),
    Column("batch_id", ForeignKey("batches.id"), nullable=False),
    Column("row_number", Integer, nullable=False),
    Column("input", Text, nullable=False),  # JSON: the row as the API body it makes
    Column("errors", Text),  # JSON {"Payment.Bank": ["..."]}
    Column("state", String(10), nullable=False),
    Column("tx_no", String(40)),
    UniqueConstraint("batch_id", "row_number", name="uq_batch_rows_batch_row"),
    Index("ix_batch_rows_progress", "batch_id", "state", "row_number"),
    # The worker asks which payouts it is about to open a batch made (app.providers.calls).
    Index("ix_batch_rows_tx_no", "tx_no"),
)


# What happened that sent a webhook (issue 32): one row per change, written by the unit of work
# that makes the change, in its batch (app/store/unit_of_work.py), kept EVENT_RETENTION_DAYS.
# Its deliveries are webhook_events rows: the callbackUrl's in the same batch, the merchant's
# endpoints' when a delivery worker fans it out (`fanned_out`, app/webhooks/endpoints.py).
events = Table(
    "events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("public_id", String(40), nullable=False, unique=True),  # evt_..., the API's id
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("event_type", String(40), nullable=False),  # e.g. refund.failed
    # The transaction it is about (a dispute's payment): its deliveries are filed under it.
    Column("transaction_id", ForeignKey("transactions.id"), nullable=False),
    Column("tx_no", String(100), nullable=False),
    Column("webhook_id", String(64), nullable=False),  # the callbackUrl delivery's webhook-id
    Column("payload", Text, nullable=False),  # the webhook's exact body
    Column("created_at", UtcDateTime(), nullable=False),
    Column("fanned_out", Boolean, nullable=False, server_default=text("false")),
    Index("ix_events_listing", "merchant_id", "mode", "id"),
    Index("ix_events_tx_no", "merchant_id", "mode", "tx_no"),
    Index("ix_events_created", "created_at"),
)

# Events still to be given their endpoints' deliveries: few at any time.
Index("ix_events_fan_out", events.c.id, postgresql_where=events.c.fanned_out.is_(False),
      sqlite_where=events.c.fanned_out.is_(False))

# A merchant's webhook endpoints in one mode (issue 32): the event types they take ("*": all),
# each with its own whsec_ secrets. Deleting keeps the row (its deliveries' log names it).
webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    Column("id", Id, primary_key=True),
    Column("public_id", String(40), nullable=False, unique=True),  # we_..., the API's id
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("enabled_events", Text, nullable=False),  # JSON list of event types, or ["*"]
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("description", String(200)),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    Column("deleted_at", UtcDateTime()),
    Index("ix_webhook_endpoints_merchant", "merchant_id", "mode", "id"),
)

# An endpoint's signing secrets, sealed as webhook_secrets are; a rotated one signs beside the
# new one until expires_at.
webhook_endpoint_secrets = Table(
    "webhook_endpoint_secrets",
    metadata,
    Column("id", Id, primary_key=True),
    Column("endpoint_id", ForeignKey("webhook_endpoints.id"), nullable=False, index=True),
    Column("secret", Text, nullable=False),  # Fernet token (app/store/encryption.py)
    Column("created_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime()),
)

# A receiver check of an endpoint (issue 32, item 6): asked by a request, run by a worker (a
# correctly signed test event, a tampered one, a replay, a stale one), its findings kept as JSON.
webhook_receiver_checks = Table(
    "webhook_receiver_checks",
    metadata,
    Column("id", Id, primary_key=True),
    Column("public_id", String(40), nullable=False, unique=True),  # chk_...
    Column("endpoint_id", ForeignKey("webhook_endpoints.id"), nullable=False, index=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("state", String(10), nullable=False),  # pending | done
    Column("requested_at", UtcDateTime(), nullable=False),
    Column("requested_by", String(254), nullable=False),
    Column("claimed_until", UtcDateTime()),  # a worker is running it until then
    Column("finished_at", UtcDateTime()),
    Column("results", Text),  # JSON list of the four sends' outcomes
)

Index("ix_webhook_receiver_checks_due", webhook_receiver_checks.c.requested_at,
      postgresql_where=webhook_receiver_checks.c.state == "pending",
      sqlite_where=webhook_receiver_checks.c.state == "pending")


# E-mail notifications (app.payments.notifications): what each user chose, per kind (no row:
# not chosen), and whether sandbox events count too.
notification_choices = Table(
    "notification_choices",
    metadata,
    Column("user_id", ForeignKey("users.id"), nullable=False),
    Column("kind", String(40), nullable=False),
    Column("delivery", String(10), nullable=False),  # immediate | digest
    Column("sandbox", Boolean, nullable=False, server_default=text("false")),
    PrimaryKeyConstraint("user_id", "kind"),
)

# An event to tell users of, written in the unit of work that causes it; the worker hands it to
# the users who chose its kind (one notifications row each) and marks it handed out, in one unit.
notification_events = Table(
    "notification_events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("merchant_id", ForeignKey("merchants.id"), nullable=False),
    Column("mode", String(10), nullable=False),
    Column("kind", String(40), nullable=False),
    Column("subject", String(200), nullable=False),
    Column("body", Text, nullable=False),
    Column("target", String(200), nullable=False),  # the page, below the mode's prefix
    Column("not_for", String(254)),  # the user whose own action it is
    Column("created_at", UtcDateTime(), nullable=False),
    Column("handed_out_at", UtcDateTime()),
    Index("ix_notification_events_waiting", "handed_out_at", "id"),
)

# One user's copy of an event: e-mailed at once or in the daily digest. sent_at is set in the
# unit that claims it, before the mail goes (a crash never sends twice); a refused mail puts it
# back for a later try.
notifications = Table(
    "notifications",
    metadata,
    Column("id", Id, primary_key=True),
    Column("event_id", ForeignKey("notification_events.id"), nullable=False),
    Column("user_id", ForeignKey("users.id"), nullable=False),
    Column("delivery", String(10), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("next_try_at", UtcDateTime(), nullable=False),
    Column("sent_at", UtcDateTime()),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("error", String(500)),
    UniqueConstraint("event_id", "user_id", name="uq_notifications_event_user"),
    Index("ix_notifications_unsent", "sent_at", "next_try_at"),
    Index("ix_notifications_user", "user_id", "sent_at"),
)
