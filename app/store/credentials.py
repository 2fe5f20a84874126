"""What the settings page reads of the caller's credentials: API tokens and webhook signing secrets."""
from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

from sqlalchemy import Connection, or_, select

from app.payments.model import Caller
from app.payments.money import from_minor
from app.payments.tokens import SCOPES, LimitKind, TokenLimit

from .merchants import webhook_secret_text
from .unit_of_work import UnitOfWork
from .scope import scoped_to_merchant, scoped_to_mode
from .tables import api_token_limits, api_tokens, webhook_secrets


def api_tokens_of(conn: Connection, caller: Caller) -> list:
    """The merchant's API tokens of the mode (prefix, label, dates, scopes, networks, limits as
    TokenLimit; never the token), newest first."""
    rows = list(conn.execute(
        select(api_tokens.c.id, api_tokens.c.prefix, api_tokens.c.label, api_tokens.c.created_at,
               api_tokens.c.revoked_at, api_tokens.c.scopes, api_tokens.c.expires_at,
               api_tokens.c.networks, api_tokens.c.created_by)
        .where(*scoped_to_mode(api_tokens, caller))
        .order_by(api_tokens.c.revoked_at.is_not(None), api_tokens.c.id.desc())
    ))
    limits: dict[int, list[TokenLimit]] = {}
    if rows:
        for row in conn.execute(select(api_token_limits).where(
                api_token_limits.c.token_id.in_([r.id for r in rows]))
                .order_by(api_token_limits.c.kind, api_token_limits.c.currency)):
            limits.setdefault(row.token_id, []).append(TokenLimit(
                LimitKind(row.kind), row.currency, from_minor(row.daily_minor, row.currency)))
    return [SimpleNamespace(**row._asdict(), scope_list=[s for s in SCOPES if s in row.scopes.split(",")],
                            network_list=(row.networks or "").split(",") if row.networks else [],
                            limits=limits.get(row.id, [])) for row in rows]


def api_token_prefix(conn: Connection, caller: Caller, token_id: int) -> str | None:
    """The prefix of one of the merchant's tokens (of either mode, as revoke_token takes them),
    or None when it is not theirs."""
    return conn.execute(
        select(api_tokens.c.prefix).where(api_tokens.c.id == token_id,
                                          *scoped_to_merchant(api_tokens, caller))
    ).scalar()


def webhook_secrets_of(uow: UnitOfWork, caller: Caller, now: datetime) -> list[dict]:
    """The mode's signing secrets still in use, newest first, each shown only by its first characters."""
    rows = uow.conn.execute(
        select(webhook_secrets.c.id, webhook_secrets.c.secret, webhook_secrets.c.created_at,
               webhook_secrets.c.expires_at)
        .where(*scoped_to_mode(webhook_secrets, caller),
               or_(webhook_secrets.c.expires_at.is_(None), webhook_secrets.c.expires_at > now))
        .order_by(webhook_secrets.c.id.desc())
    )
    return [{"hint": webhook_secret_text(uow, row.secret)[:10] + "…", "created_at": row.created_at,
             "expires_at": row.expires_at} for row in rows]
