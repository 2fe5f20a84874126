"""Merchants and their credentials: API tokens, webhook secrets, inbox keys, dashboard users."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import Connection, insert, select, update

from app.providers.methods import DEFAULT_METHODS
from app.payments.model import Caller, Mode
from app.payments.money import from_minor, to_minor
from app.payments.tokens import (SCOPES, LimitKind, TokenGrant, TokenLimit, parse_networks,
                                 parse_scopes)
from app.payments.sandbox import FIXTURE_CREATED_BY, install_fixtures
from app.util import utcnow

from .encryption import SecretBox, SecretBoxError, reseal_column
from .tables import api_token_limits, api_tokens, merchants, users, webhook_secrets
from .users import NO_PASSWORD

if TYPE_CHECKING:
    from .unit_of_work import UnitOfWork

ROLES = ("support", "finance", "payouts", "admin")
TOKEN_PREFIX = {Mode.LIVE: "pd_live_", Mode.SANDBOX: "pd_test_"}


@dataclass
class NewMerchant:
    """Everything `merchant create` prints; the tokens are never shown again."""

    merchant_id: int
    name: str
    live_token: str
    sandbox_token: str
    live_webhook_secret: str
    sandbox_webhook_secret: str
    inbox_url: str

    def as_json(self) -> dict:
        """The CLI's --json keys."""
        return {
            "merchantId": self.merchant_id,
            "liveToken": self.live_token,
            "sandboxToken": self.sandbox_token,
            "liveWebhookSecret": self.live_webhook_secret,
            "sandboxWebhookSecret": self.sandbox_webhook_secret,
            "inboxUrl": self.inbox_url,
        }


def hash_token(token: str) -> str:
    """Stored form of an API token (256 random bits, so SHA-256 suffices)."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_webhook_secret() -> str:
    """A Standard Webhooks secret: whsec_ and 24 random bytes in base64."""
    import base64

    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def inbox_url(base_url: str, inbox_key: str) -> str:
    """Where the merchant's inbox receives webhooks."""
    return f"{base_url}/inbox/{inbox_key}"


def issue_token(conn: Connection, merchant_id: int, mode: Mode, label: str = "", *,
                scopes: Iterable[str] = SCOPES, expires_at: datetime | None = None,
                networks: Iterable = (), limits: Iterable[TokenLimit] = (),
                created_by: str | None = None) -> str:
    """Create an API token and return it; only its hash is kept. By default it holds every
    scope, never expires, and has no network list and no limits."""
    token = TOKEN_PREFIX[mode] + secrets.token_urlsafe(32)
    network_text = ",".join(str(network) for network in networks)
    token_id = conn.execute(
        insert(api_tokens).values(
            merchant_id=merchant_id,
            mode=mode.value,
            token_hash=hash_token(token),
            prefix=token[:12],
            label=label,
            created_at=utcnow(),
            scopes=",".join(scope for scope in SCOPES if scope in set(scopes)),
            expires_at=expires_at,
            networks=network_text or None,
            created_by=created_by,
        ).returning(api_tokens.c.id)
    ).scalar_one()
    limit_rows = [{"token_id": token_id, "kind": limit.kind.value, "currency": limit.currency,
                   "daily_minor": to_minor(limit.daily, limit.currency)} for limit in limits]
    if limit_rows:
        conn.execute(insert(api_token_limits), limit_rows)
    return token


def revoke_token(conn: Connection, merchant_id: int, token_id: int) -> bool:
    """Revoke one of the merchant's tokens; False when it is not theirs or already revoked."""
    result = conn.execute(
        update(api_tokens)
        .where(api_tokens.c.id == token_id, api_tokens.c.merchant_id == merchant_id,
               api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return result.rowcount == 1


def add_webhook_secret(uow: UnitOfWork, merchant_id: int, mode: Mode) -> str:
    """Create a merchant's webhook secret for the mode and return it; stored only sealed."""
    secret = new_webhook_secret()
    uow.conn.execute(
        insert(webhook_secrets).values(
            merchant_id=merchant_id, mode=mode.value, secret=_box(uow).seal(secret), created_at=utcnow()
        )
    )
    return secret


def rotate_webhook_secret(uow: UnitOfWork, merchant_id: int, mode: Mode,
                          overlap: timedelta = timedelta(hours=24)) -> str:
    """A new secret; the old ones keep signing beside it for `overlap` so receivers can switch."""
    now = utcnow()
    uow.conn.execute(
        update(webhook_secrets)
        .where(webhook_secrets.c.merchant_id == merchant_id, webhook_secrets.c.mode == mode.value,
               webhook_secrets.c.expires_at.is_(None))
        .values(expires_at=now + overlap)
    )
    return add_webhook_secret(uow, merchant_id, mode)


def active_webhook_secrets(uow: UnitOfWork, merchant_id: int, mode: Mode,
                           now: datetime | None = None) -> list[str]:
    """Secrets that sign deliveries now, newest first."""
    now = now or utcnow()
    rows = uow.conn.execute(
        select(webhook_secrets.c.secret)
        .where(webhook_secrets.c.merchant_id == merchant_id, webhook_secrets.c.mode == mode.value,
               (webhook_secrets.c.expires_at.is_(None)) | (webhook_secrets.c.expires_at > now))
        .order_by(webhook_secrets.c.id.desc())
    )
    return [webhook_secret_text(uow, sealed) for sealed in rows.scalars()]


def webhook_secret_text(uow: UnitOfWork, sealed: str) -> str:
    """The whsec_ secret a stored token holds: every reader of webhook_secrets.secret comes here."""
    return _box(uow).open(sealed)


def reseal_webhook_secrets(uow: UnitOfWork) -> int:
    """Seal every webhook secret again under the first key (after a key rotation); how many."""
    return reseal_column(uow.conn, webhook_secrets.c.secret, webhook_secrets.c.id, _box(uow))


def _box(uow: UnitOfWork) -> SecretBox:
    if uow.box is None:
        raise SecretBoxError("webhook secrets are kept sealed: this unit of work was made without "
                             "the SecretBox of PAYDESK_ENCRYPTION_KEY")
    return uow.box


def authenticate_token(conn: Connection, token: str) -> Caller | None:
    """The caller a bearer token stands for, with what the token allows (its grant), or None for
    an unknown or revoked token. Expiry and networks are the request's to check (each request,
    also when the caller is remembered)."""
    rows = conn.execute(
        select(api_tokens.c.id, api_tokens.c.merchant_id, api_tokens.c.mode, api_tokens.c.prefix,
               api_tokens.c.label, api_tokens.c.scopes, api_tokens.c.expires_at, api_tokens.c.networks,
               api_token_limits.c.kind, api_token_limits.c.currency, api_token_limits.c.daily_minor)
        .select_from(api_tokens.outerjoin(api_token_limits, api_token_limits.c.token_id == api_tokens.c.id))
        .where(api_tokens.c.token_hash == hash_token(token), api_tokens.c.revoked_at.is_(None))
    ).all()
    if not rows:
        return None
    row = rows[0]
    grant = TokenGrant(
        token_id=row.id, label=row.label or row.prefix, scopes=parse_scopes(row.scopes),
        expires_at=row.expires_at, networks=parse_networks(row.networks or ""),
        limits=tuple(TokenLimit(LimitKind(r.kind), r.currency, from_minor(r.daily_minor, r.currency))
                     for r in rows if r.kind is not None))
    return Caller(merchant_id=row.merchant_id, mode=Mode(row.mode), actor=f"api:{row.prefix}", grant=grant)


def create_merchant(uow: UnitOfWork, name: str, base_url: str) -> NewMerchant:
    """A merchant with tokens and secrets for both modes, the default methods and sandbox fixtures."""
    now = utcnow()
    inbox_key = secrets.token_urlsafe(24)
    merchant_id = uow.conn.execute(
        insert(merchants)
        .values(name=name, inbox_key=inbox_key, created_at=now,
                default_callback_url=inbox_url(base_url, inbox_key))
        .returning(merchants.c.id)
    ).scalar_one()
    for method in DEFAULT_METHODS:
        uow.methods.add(merchant_id, method)
    result = NewMerchant(
        merchant_id=merchant_id,
        name=name,
        live_token=issue_token(uow.conn, merchant_id, Mode.LIVE, "created with the merchant"),
        sandbox_token=issue_token(uow.conn, merchant_id, Mode.SANDBOX, "created with the merchant"),
        live_webhook_secret=add_webhook_secret(uow, merchant_id, Mode.LIVE),
        sandbox_webhook_secret=add_webhook_secret(uow, merchant_id, Mode.SANDBOX),
        inbox_url=inbox_url(base_url, inbox_key),
    )
    install_fixtures(uow, Caller(merchant_id, Mode.SANDBOX, FIXTURE_CREATED_BY),
                     inbox_url(base_url, inbox_key), now)
    return result


def merchant_by_name(conn: Connection, name: str):
    """The merchant row with this name, or None."""
    return conn.execute(select(merchants).where(merchants.c.name == name)).first()


def merchant_by_id(conn: Connection, merchant_id: int):
    """The merchant row with this id, or None."""
    return conn.execute(select(merchants).where(merchants.c.id == merchant_id)).first()


class MerchantRepository:
    """What the services read of a merchant's own settings."""

    def __init__(self, uow: "UnitOfWork"):
        self._uow = uow

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def default_callback_url(self, caller: Caller) -> str | None:
        """Where the caller's merchant's own notifications go by default (its Paydesk inbox)."""
        return self.conn.execute(
            select(merchants.c.default_callback_url).where(merchants.c.id == caller.merchant_id)
        ).scalar()


def create_user(conn: Connection, merchant_id: int, email: str, role: str,
                password_hash: str | None) -> int:
    """A dashboard user of the merchant, with the Argon2id hash of their password (app.passwords;
    none yet when invited: no password signs them in until they choose one through their
    invitation link)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    return conn.execute(
        insert(users)
        .values(merchant_id=merchant_id, email=email.lower(), role=role,
                password_hash=password_hash if password_hash is not None else NO_PASSWORD,
                created_at=utcnow())
        .returning(users.c.id)
    ).scalar_one()


def set_time_zone(conn: Connection, merchant_id: int, time_zone: str) -> None:
    """The IANA time zone the merchant's members read times in (stored times stay UTC)."""
    conn.execute(update(merchants).where(merchants.c.id == merchant_id).values(time_zone=time_zone))
