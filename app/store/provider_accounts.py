"""A merchant's provider accounts, the methods they add, and the webhooks the providers send them.

Secrets arrive here already sealed (app/store/encryption.py) and leave sealed: this module never
sees a provider key in the clear.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select, update

from app.payments.model import Caller, Mode, PaymentMethod

from .scope import scoped_to_mode
from .tables import payment_methods, provider_accounts, provider_events


@dataclass(frozen=True)
class ProviderAccount:
    """A provider account as stored; the secrets are Fernet tokens (None once disconnected)."""

    id: int
    merchant_id: int
    mode: Mode
    provider: str
    key_hint: str
    base_url: str | None
    webhook_key: str
    created_at: datetime
    updated_at: datetime
    disconnected_at: datetime | None
    sealed_secret_key: str | None
    sealed_webhook_secret: str | None
    calls_state: str | None = None  # healthy | slow | open, as the workers last found it
    calls_state_since: datetime | None = None
    test_requested_at: datetime | None = None  # the dashboard's last "Test connection"
    test_due_at: datetime | None = None  # set while that test waits for (or is held by) a worker
    test_finished_at: datetime | None = None  # the last stored answer: when, worked, fixed words
    test_worked: bool | None = None
    test_message: str | None = None

    @property
    def connected(self) -> bool:
        """Still connected: it has its secret key and serves its methods."""
        return self.disconnected_at is None


def _account(m) -> ProviderAccount:
    """The ProviderAccount of a row, as a mapping (`Result.mappings()`)."""
    return ProviderAccount(
        id=m["id"], merchant_id=m["merchant_id"], mode=Mode(m["mode"]), provider=m["provider"],
        key_hint=m["key_hint"], base_url=m["base_url"], webhook_key=m["webhook_key"],
        created_at=m["created_at"], updated_at=m["updated_at"], disconnected_at=m["disconnected_at"],
        sealed_secret_key=m["secret_key"], sealed_webhook_secret=m["webhook_secret"],
        calls_state=m["calls_state"], calls_state_since=m["calls_state_since"],
        test_requested_at=m["test_requested_at"], test_due_at=m["test_due_at"],
        test_finished_at=m["test_finished_at"], test_worked=m["test_worked"],
        test_message=m["test_message"],
    )


def account_by_id(conn: Connection, account_id: int) -> ProviderAccount | None:
    """Any account by its id (the provider registry's read; no caller: the method named it)."""
    row = conn.execute(
        select(provider_accounts).where(provider_accounts.c.id == account_id)).mappings().first()
    return _account(row) if row else None


def accounts_by_id(conn: Connection, account_ids: set[int]) -> dict[int, ProviderAccount]:
    """The accounts of these ids, by id, in one query (a worker's batch of provider calls)."""
    if not account_ids:
        return {}
    rows = conn.execute(
        select(provider_accounts).where(provider_accounts.c.id.in_(sorted(account_ids)))).mappings()
    return {row["id"]: _account(row) for row in rows}


def account_by_webhook_key(conn: Connection, webhook_key: str) -> ProviderAccount | None:
    """The account whose inbound webhook URL carries this key."""
    row = conn.execute(
        select(provider_accounts).where(provider_accounts.c.webhook_key == webhook_key)).mappings().first()
    return _account(row) if row else None


def accounts_of(conn: Connection, caller: Caller) -> list[ProviderAccount]:
    """The caller's accounts in its mode, connected ones first, newest first."""
    rows = conn.execute(
        select(provider_accounts).where(*scoped_to_mode(provider_accounts, caller))
        .order_by(provider_accounts.c.disconnected_at.is_not(None), provider_accounts.c.id.desc())).mappings()
    return [_account(row) for row in rows]


def connected_account(conn: Connection, caller: Caller, provider: str, *,
                      for_update: bool = False) -> ProviderAccount | None:
    """The caller's connected account with this provider in its mode, if any."""
    query = select(provider_accounts).where(*scoped_to_mode(provider_accounts, caller),
                                            provider_accounts.c.provider == provider,
                                            provider_accounts.c.disconnected_at.is_(None))
    row = conn.execute(query.with_for_update() if for_update else query).mappings().first()
    return _account(row) if row else None


def caller_account(conn: Connection, caller: Caller, account_id: int) -> ProviderAccount | None:
    """One of the caller's accounts in its mode, or None when it is not theirs."""
    row = conn.execute(select(provider_accounts).where(
        provider_accounts.c.id == account_id, *scoped_to_mode(provider_accounts, caller))).mappings().first()
    return _account(row) if row else None


def add_account(conn: Connection, caller: Caller, provider: str, *, sealed_secret_key: str,
                sealed_webhook_secret: str | None, key_hint: str, base_url: str | None,
                webhook_key: str, now: datetime) -> int:
    """A new connected account; its id."""
    return conn.execute(insert(provider_accounts).values(
        merchant_id=caller.merchant_id, mode=caller.mode.value, provider=provider,
        secret_key=sealed_secret_key, webhook_secret=sealed_webhook_secret, key_hint=key_hint,
        base_url=base_url, webhook_key=webhook_key, created_at=now, updated_at=now,
    ).returning(provider_accounts.c.id)).scalar_one()


def replace_secrets(conn: Connection, account_id: int, *, sealed_secret_key: str,
                    sealed_webhook_secret: str | None, key_hint: str, base_url: str | None,
                    now: datetime) -> None:
    """New secrets (and base URL) for a connected account; its webhook URL stays."""
    conn.execute(update(provider_accounts).where(provider_accounts.c.id == account_id).values(
        secret_key=sealed_secret_key, webhook_secret=sealed_webhook_secret, key_hint=key_hint,
        base_url=base_url, updated_at=now))


def disconnect_account(conn: Connection, account_id: int, now: datetime) -> None:
    """Forget the account's secrets and stop its methods; its row stays for history."""
    conn.execute(update(provider_accounts).where(provider_accounts.c.id == account_id).values(
        secret_key=None, webhook_secret=None, disconnected_at=now, updated_at=now))
    conn.execute(update(payment_methods).where(payment_methods.c.provider_account_id == account_id)
                 .values(active=False))


def all_sealed_secrets(conn: Connection) -> list[tuple[int, str | None, str | None]]:
    """(id, sealed secret key, sealed webhook secret) of every connected account, for re-encryption."""
    return [tuple(row) for row in conn.execute(
        select(provider_accounts.c.id, provider_accounts.c.secret_key,
               provider_accounts.c.webhook_secret)
        .where(provider_accounts.c.disconnected_at.is_(None)).order_by(provider_accounts.c.id))]


def reseal(conn: Connection, account_id: int, sealed_secret_key: str | None,
           sealed_webhook_secret: str | None) -> None:
    """Store re-encrypted tokens of one account."""
    conn.execute(update(provider_accounts).where(provider_accounts.c.id == account_id).values(
        secret_key=sealed_secret_key, webhook_secret=sealed_webhook_secret))


def offer_methods(conn: Connection, caller: Caller, account_id: int,
                  methods: tuple[PaymentMethod, ...]) -> None:
    """The account's methods in the caller's mode: added, or re-pointed at it and made active."""
    for method in methods:
        values = dict(name=method.name, kind=method.kind, currencies=json.dumps(method.currencies),
                      countries=json.dumps(method.countries), bank_list=method.bank_list,
                      account_rule=method.account_rule, partial_refunds=method.partial_refunds,
                      provider=method.provider, provider_account_id=account_id, active=True)
        changed = conn.execute(update(payment_methods).where(
            payment_methods.c.merchant_id == caller.merchant_id,
            payment_methods.c.mode == caller.mode.value,
            payment_methods.c.method_id == method.method_id).values(**values)).rowcount
        if not changed:
            conn.execute(insert(payment_methods).values(
                merchant_id=caller.merchant_id, mode=caller.mode.value, method_id=method.method_id,
                **values))


def seen_before(conn: Connection, account_id: int, body_sha256: str) -> bool:
    """An event with exactly this body was verified and acted on for the account already."""
    return conn.execute(select(provider_events.c.id).where(
        provider_events.c.provider_account_id == account_id,
        provider_events.c.body_sha256 == body_sha256,
        provider_events.c.signature_valid,
        provider_events.c.result.in_(ACTED_ON),
    ).limit(1)).first() is not None


# Results of an event that was acted on: a replay of it changes nothing.
ACTED_ON = ("applied", "no change", "ignored")


def record_event(conn: Connection, account: ProviderAccount, *, received_at: datetime,
                 body: str, body_sha256: str, signature_valid: bool, result: str,
                 event_type: str | None = None, event_id: str | None = None,
                 tx_no: str | None = None, detail: str | None = None) -> None:
    """Keep a received provider webhook and what came of it."""
    conn.execute(insert(provider_events).values(
        provider_account_id=account.id, merchant_id=account.merchant_id, mode=account.mode.value,
        received_at=received_at, event_type=(event_type or "")[:100] or None,
        event_id=(event_id or "")[:255] or None, body_sha256=body_sha256, body=body,
        signature_valid=signature_valid, tx_no=tx_no, result=result,
        detail=(detail or "")[:500] or None))


def events_of(conn: Connection, caller: Caller, limit: int = 100) -> list:
    """The caller's received provider webhooks in its mode, newest first, with the provider's name."""
    return list(conn.execute(
        select(provider_events, provider_accounts.c.provider)
        .join(provider_accounts, provider_accounts.c.id == provider_events.c.provider_account_id)
        .where(*scoped_to_mode(provider_events, caller))
        .order_by(provider_events.c.id.desc()).limit(limit)))


def record_calls_state(conn: Connection, account_id: int, state: str, since: datetime) -> None:
    """How the workers' calls to the account go now (healthy, slow, open), since when."""
    conn.execute(update(provider_accounts).where(provider_accounts.c.id == account_id)
                 .values(calls_state=state, calls_state_since=since))


@dataclass(frozen=True)
class DueTest:
    """A connection test a worker should make now: the account, and when the test was asked
    (its answer is stored only while that is still the account's latest request)."""

    account_id: int
    requested_at: datetime


def request_test(conn: Connection, account_id: int, now: datetime) -> None:
    """Ask the workers to test the account's connection now; a test asked before is superseded
    (its answer, if it comes, is not stored) and the last stored answer stays until the new one."""
    conn.execute(update(provider_accounts).where(provider_accounts.c.id == account_id)
                 .values(test_requested_at=now, test_due_at=now))


def due_tests(conn: Connection, now: datetime, limit: int) -> list[DueTest]:
    """Connection tests of connected accounts due by `now`, the longest waiting first."""
    rows = conn.execute(
        select(provider_accounts.c.id, provider_accounts.c.test_requested_at)
        .where(provider_accounts.c.test_due_at <= now, provider_accounts.c.disconnected_at.is_(None))
        .order_by(provider_accounts.c.test_due_at).limit(limit))
    return [DueTest(row.id, row.test_requested_at) for row in rows]


def claim_test(conn: Connection, due: DueTest, now: datetime, until: datetime) -> bool:
    """Take a due test for one worker: it is not due again before `until` (then another worker
    takes it, if this one died). False when another worker took it first, or it was asked again."""
    return conn.execute(update(provider_accounts).where(
        provider_accounts.c.id == due.account_id, provider_accounts.c.test_due_at <= now,
        provider_accounts.c.test_requested_at == due.requested_at,
    ).values(test_due_at=until)).rowcount == 1


def save_test_result(conn: Connection, due: DueTest, *, worked: bool, message: str,
                     finished_at: datetime) -> bool:
    """Store a test's answer, unless the test was asked again meanwhile (the new request waits
    for its own answer); False then."""
    return conn.execute(update(provider_accounts).where(
        provider_accounts.c.id == due.account_id,
        provider_accounts.c.test_requested_at == due.requested_at,
    ).values(test_due_at=None, test_finished_at=finished_at, test_worked=worked,
             test_message=message)).rowcount == 1
