"""Configuration read from the environment; no secrets in code."""
from __future__ import annotations

import os
import secrets
import time
from datetime import timedelta
from pathlib import Path

INSTANCE = Path(__file__).resolve().parent.parent / "instance"


def _default_database_url() -> str:
    return f"sqlite:///{INSTANCE / 'paydesk.db'}"


def _instance_secret_key() -> str:
    """A key generated once and kept in instance/, so every process on this machine shares it."""
    return _instance_file("secret-key", lambda: secrets.token_hex(32))


def _instance_encryption_key() -> str:
    """The Fernet key provider secrets are encrypted with, generated once into instance/."""
    from cryptography.fernet import Fernet

    return _instance_file("encryption-key", lambda: Fernet.generate_key().decode())


def _instance_file(name: str, generate) -> str:
    """The text of instance/<name>, written once (mode 0600) with generate() by the first process."""
    path = INSTANCE / name
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        INSTANCE.mkdir(parents=True, exist_ok=True)
        key = generate()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            time.sleep(0.1)
            return path.read_text().strip()
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        return key


class Config:
    """Settings for one process; every value can come from the environment."""

    def __init__(self, **overrides):
        env = os.environ
        self.INSTANCE_PATH = Path(env.get("INSTANCE_PATH") or INSTANCE)
        self.DATABASE_URL = env.get("DATABASE_URL") or _default_database_url()
        # Sessions and CSRF tokens are signed with this. Set it in production so every
        # web node shares it; without it, one is generated and kept in instance/.
        self.SECRET_KEY = env.get("SECRET_KEY") or overrides.get("SECRET_KEY") or _instance_secret_key()
        # Fernet keys for provider secrets at rest, comma-separated: the first encrypts, every
        # one decrypts (rotation: put the new key first, run `flask provider reencrypt`).
        self.PAYDESK_ENCRYPTION_KEY = (env.get("PAYDESK_ENCRYPTION_KEY")
                                       or overrides.get("PAYDESK_ENCRYPTION_KEY")
                                       or _instance_encryption_key())
        self.BASE_URL = env.get("BASE_URL", "http://127.0.0.1:5000").rstrip("/")
        self.CHECKOUT_URL = env.get("CHECKOUT_URL", self.BASE_URL + "/checkout").rstrip("/")
        self.PENDING_EXPIRY = timedelta(minutes=float(env.get("PENDING_EXPIRY_MINUTES", "30")))
        # Networks beyond the public Internet that webhook deliveries and provider calls may reach,
        # comma-separated CIDRs; empty by default, so nothing on the host or its private network
        # is reachable through a merchant's callbackUrl or a provider account's base URL.
        # `make run` allows loopback for the built-in inbox.
        self.WEBHOOK_ALLOWED_NETWORKS = env.get("WEBHOOK_ALLOWED_NETWORKS", "")
        self.PROVIDER_ALLOWED_NETWORKS = env.get("PROVIDER_ALLOWED_NETWORKS", "")
        # Webhook delivery: a 2xx within WEBHOOK_TIMEOUT seconds is success; threads per worker.
        self.WEBHOOK_CONNECT_TIMEOUT = float(env.get("WEBHOOK_CONNECT_TIMEOUT", "5"))
        self.WEBHOOK_TIMEOUT = float(env.get("WEBHOOK_TIMEOUT", "15"))
        self.WEBHOOK_CONCURRENCY = int(env.get("WEBHOOK_CONCURRENCY", "16"))
        # Days the event log (GET /api/v1/events) keeps an event; a worker prunes older ones.
        self.EVENT_RETENTION_DAYS = float(env.get("EVENT_RETENTION_DAYS", "30"))
        # Seconds to wait for a provider's connection and then for its answer (Paystack, Stripe).
        self.PROVIDER_CONNECT_TIMEOUT = float(env.get("PROVIDER_CONNECT_TIMEOUT", "5"))
        self.PROVIDER_READ_TIMEOUT = float(env.get("PROVIDER_READ_TIMEOUT", "30"))
        self.SIMULATOR_LATENCY = float(env.get("SIMULATOR_LATENCY", "0"))
        # Days after its capture a provider pays a payment out at most: a Captured payment older
        # than this that no stored settlement carries is missing_from_settlement (reconcile verify).
        self.SETTLEMENT_DELAY = timedelta(days=float(env.get("SETTLEMENT_DELAY_DAYS", "2")))
        # A worker's provider calls (app/providers/calls.py): in flight, per provider account,
        # failures in a row that open an account's breaker, its cool-off, the poll beside NOTIFY.
        self.PROVIDER_CALL_THREADS = int(env.get("PROVIDER_CALL_THREADS", "100"))
        self.PROVIDER_ACCOUNT_CONCURRENCY = int(env.get("PROVIDER_ACCOUNT_CONCURRENCY", "64"))
        self.PROVIDER_BREAKER_FAILURES = int(env.get("PROVIDER_BREAKER_FAILURES", "5"))
        self.PROVIDER_BREAKER_COOL_OFF = float(env.get("PROVIDER_BREAKER_COOL_OFF", "30"))
        self.PROVIDER_CALL_POLL = float(env.get("PROVIDER_CALL_POLL", "0.5"))
        # `flask worker` lowers its CPU priority by this much (its nice value, and its autogroup's
        # when it leads its own session: app.worker.lower_cpu_priority). 0 by default: measured
        # on a shared 2-core node, 1 to 5 delayed the hand-off 2 to 50 times and bought the status
        # reads' tail little (docs/benchmarks.md, "The worker's priority").
        self.WORKER_NICENESS = int(env.get("WORKER_NICENESS", "0"))
        # A demo deployment (`make run`): the simulator may decide live payments and payouts,
        # its checkout page letting the payer approve them. Off, live mode takes real providers only.
        self.DEMO_MODE = env.get("DEMO_MODE", "0") == "1"
        self.IDEMPOTENCY_ABANDONED_AFTER = float(env.get("IDEMPOTENCY_ABANDONED_AFTER", "30"))
        # Seconds a worker holds a running batch between chunks; a killed worker's batch goes on
        # in another after it (app/payments/batches.py).
        self.BATCH_LEASE_SECONDS = float(env.get("BATCH_LEASE_SECONDS", "30"))
        # Seconds a checked API token is remembered per process (revocation delay); 0 = off.
        self.TOKEN_CACHE_SECONDS = float(env.get("TOKEN_CACHE_SECONDS", "5"))
        # The API request log (app/api/request_log.py): kept this many days (the worker prunes),
        # written by a thread every FLUSH_MS milliseconds or BATCH rows (0: on the request's thread).
        self.REQUEST_LOG_ENABLED = env.get("REQUEST_LOG_ENABLED", "1") == "1"
        self.REQUEST_LOG_RETENTION_DAYS = float(env.get("REQUEST_LOG_RETENTION_DAYS", "30"))
        self.REQUEST_LOG_FLUSH_MS = float(env.get("REQUEST_LOG_FLUSH_MS", "200"))
        self.REQUEST_LOG_BATCH = int(env.get("REQUEST_LOG_BATCH", "500"))
        self.DB_POOL_SIZE = int(env.get("DB_POOL_SIZE", "10"))
        # Seconds a pooled PostgreSQL connection may sit unused before it is pinged on checkout.
        self.DB_PING_IDLE_AFTER = float(env.get("DB_PING_IDLE_AFTER", "2"))
        self.PROXY_FIX_HOPS = int(env.get("PROXY_FIX_HOPS", "0"))
        self.SESSION_COOKIE_SECURE = env.get("SESSION_COOKIE_SECURE", "0") == "1"
        self.SESSION_COOKIE_HTTPONLY = True
        self.SESSION_COOKIE_SAMESITE = "Lax"
        self.REMEMBER_COOKIE_HTTPONLY = True
        # Argon2id parameters of dashboard passwords (app/passwords.py): "standard" everywhere
        # but the test suite, which uses "fast".
        self.PASSWORD_HASH_PROFILE = env.get("PASSWORD_HASH_PROFILE", "standard")
        self.PERMANENT_SESSION_LIFETIME = timedelta(hours=8)
        self.WTF_CSRF_TIME_LIMIT = None  # tied to the session's lifetime instead
        self.MAX_CONTENT_LENGTH = 1024 * 1024
        # Outgoing e-mail (password reset links, invitations, notices). Without SMTP_HOST they are
        # written to the log instead; a reset link is also shown to the admin who made it.
        self.SMTP_HOST = env.get("SMTP_HOST", "")
        self.SMTP_PORT = int(env.get("SMTP_PORT", "587"))
        self.SMTP_USERNAME = env.get("SMTP_USERNAME", "")
        self.SMTP_PASSWORD = env.get("SMTP_PASSWORD", "")
        self.SMTP_STARTTLS = env.get("SMTP_STARTTLS", "1") == "1"
        self.SMTP_FROM = env.get("SMTP_FROM", "Paydesk <paydesk@localhost>")
        self.SMTP_TIMEOUT = float(env.get("SMTP_TIMEOUT", "10"))
        # The daily digest of e-mail notifications goes out at this hour, UTC (0-23).
        self.NOTIFICATION_DIGEST_HOUR = int(env.get("NOTIFICATION_DIGEST_HOUR", "7")) % 24
        self.TESTING = False
        for key, value in overrides.items():
            setattr(self, key, value)
