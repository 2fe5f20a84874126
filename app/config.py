"""Configuration read from the environment; no secrets in code."""
from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

INSTANCE = Path(__file__).resolve().parent.parent / "instance"


def _default_database_url() -> str:
    return f"sqlite:///{INSTANCE / 'paydesk.db'}"


class Config:
    """Settings for one process; every value can come from the environment."""

    def __init__(self, **overrides):
        env = os.environ
        self.DATABASE_URL = env.get("DATABASE_URL") or _default_database_url()
        # Sessions and CSRF tokens are signed with this; set it in production so
        # every web node shares it (a random one logs everyone out on restart).
        self.SECRET_KEY = env.get("SECRET_KEY") or secrets.token_hex(32)
        self.BASE_URL = env.get("BASE_URL", "http://127.0.0.1:5000").rstrip("/")
        self.CHECKOUT_URL = env.get("CHECKOUT_URL", self.BASE_URL + "/checkout").rstrip("/")
        self.PENDING_EXPIRY = timedelta(minutes=float(env.get("PENDING_EXPIRY_MINUTES", "30")))
        self.WEBHOOK_ALLOWED_NETWORKS = env.get("WEBHOOK_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
        self.RATELIMIT_STORAGE_URI = env.get("RATELIMIT_STORAGE_URI", "memory://")
        self.SIMULATOR_LATENCY = float(env.get("SIMULATOR_LATENCY", "0"))
        self.IDEMPOTENCY_ABANDONED_AFTER = float(env.get("IDEMPOTENCY_ABANDONED_AFTER", "30"))
        self.DB_POOL_SIZE = int(env.get("DB_POOL_SIZE", "10"))
        self.SESSION_COOKIE_SECURE = env.get("SESSION_COOKIE_SECURE", "0") == "1"
        self.SESSION_COOKIE_HTTPONLY = True
        self.SESSION_COOKIE_SAMESITE = "Lax"
        self.REMEMBER_COOKIE_HTTPONLY = True
        self.PERMANENT_SESSION_LIFETIME = timedelta(hours=8)
        self.WTF_CSRF_TIME_LIMIT = None  # tied to the session's lifetime instead
        self.MAX_CONTENT_LENGTH = 1024 * 1024
        self.TESTING = False
        for key, value in overrides.items():
            setattr(self, key, value)
