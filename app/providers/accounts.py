"""Connecting a merchant's provider account: checked input, sealed secrets, its methods, audited.

The dashboard's Settings -> Providers page and `flask provider connect` both come here.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.exc import IntegrityError

from app.payments.bank_lists import ListKey
from app.payments.model import Caller, FieldErrors, Mode, PaymentMethod
from app.payments.provider import BankListError, ProviderUnavailable
from app.store import provider_accounts as store
from app.store.provider_accounts import ProviderAccount
from app.store.encryption import SecretBox
from app.store.merchants import reseal_webhook_secrets
from app.store.two_factor import reseal_totp_secrets

from .http import ProviderAnswerError, ProviderRejected, answered
from .methods import PROVIDER_METHODS
from .registry import CONNECTORS, ProviderRegistry
from .stripe import WEBHOOK_EVENTS

PROVIDERS = tuple(PROVIDER_METHODS)
PROVIDER_NAMES = {"paystack": "Paystack", "stripe": "Stripe"}
WEBHOOK_PATH = "/provider-webhooks"
MAX_SECRET_LENGTH = 500
MAX_BASE_URL_LENGTH = 2048  # provider_accounts.base_url
# A test a worker has not answered by then is shown as unanswered (a worker's call takes at most
# its connect and read timeouts, 5 + 30 s) and the dashboard stops asking.
TEST_ANSWER_WAIT = timedelta(seconds=40)
# Both providers say a key's mode in its prefix (Stripe's restricted keys too).
KEY_PREFIXES = (("sk_test_", Mode.SANDBOX), ("rk_test_", Mode.SANDBOX),
                ("sk_live_", Mode.LIVE), ("rk_live_", Mode.LIVE))


@dataclass(frozen=True)
class Connected:
    """What connecting told: the account, the URL to set at the provider, the methods it added."""

    provider_account_id: int
    provider: str
    mode: str
    webhook_url: str
    methods: list[str]
    replaced: bool  # an account was connected already: its secrets were replaced

    def as_json(self) -> dict:
        """The CLI's --json output."""
        return {"providerAccountId": self.provider_account_id, "provider": self.provider,
                "mode": self.mode, "webhookUrl": self.webhook_url, "methods": self.methods}


def webhook_url(base_url: str, webhook_key: str) -> str:
    """Where the provider must send its webhooks for one account."""
    return f"{base_url.rstrip('/')}{WEBHOOK_PATH}/{webhook_key}"


def setup_steps(provider: str, mode: Mode) -> list[str]:
    """What to do at the provider with an account's webhook URL, step by step."""
    test = mode is Mode.SANDBOX
    if provider == "paystack":
        return ["In Paystack's dashboard, open Settings → API Keys & Webhooks.",
                f"Paste it as the {'Test' if test else 'Live'} Webhook URL and save.",
                "Nothing else to copy: Paystack signs its webhooks with the secret key you entered."]
    return [f"In Stripe's dashboard{' (test mode)' if test else ''}, open Developers → Webhooks and "
            "add an endpoint with this URL, or change the URL of the endpoint whose signing secret "
            "you entered.",
            f"Choose the events Paydesk reads: {', '.join(WEBHOOK_EVENTS)}.",
            "Its signing secret (whsec_…) must be the webhook secret you entered. If Stripe shows "
            "another, connect Stripe again with it: the webhook URL stays the same."]


def key_hint(secret_key: str) -> str:
    """Enough of a key to tell it apart (its prefix and last 4), never enough to use it."""
    prefix = secret_key[:8] if len(secret_key) >= 24 else ""
    return f"{prefix}…{secret_key[-4:]}" if len(secret_key) >= 12 else "…"


def check_connect(provider: str, secret_key: str, webhook_secret: str | None,
                  base_url: str | None, mode: Mode | None = None) -> None:
    """Refuse what cannot work, field by field, before anything is written."""
    errors: dict[str, list[str]] = {}
    if provider not in PROVIDERS:
        errors["provider"] = [f"Provider must be one of {', '.join(PROVIDERS)}"]
    if not secret_key:
        errors["secretKey"] = ["Secret key is required"]
    elif not _is_token(secret_key):
        errors["secretKey"] = ["Secret key must be one line without spaces"]
    elif mode is not None and key_mode(secret_key) not in (None, mode):
        errors["secretKey"] = [f"This is a {key_mode(secret_key).value} key: connect it in "
                               f"{key_mode(secret_key).value} mode"]
    if provider == "stripe" and not webhook_secret:
        errors["webhookSecret"] = ["Stripe's webhook signing secret (whsec_...) is required: "
                                   "without it Stripe's webhooks cannot be verified"]
    elif provider == "paystack" and webhook_secret:
        errors["webhookSecret"] = ["Paystack signs its webhooks with the secret key; "
                                   "it has no separate webhook secret"]
    elif webhook_secret and not _is_token(webhook_secret):
        errors["webhookSecret"] = ["Webhook secret must be one line without spaces"]
    if base_url:
        parts = urlsplit(base_url)
        if len(base_url) > MAX_BASE_URL_LENGTH:
            errors["baseUrl"] = [f"Base URL must be at most {MAX_BASE_URL_LENGTH} characters"]
        elif not base_url.isprintable():
            errors["baseUrl"] = ["Base URL must not contain control characters"]
        elif parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            errors["baseUrl"] = ["Base URL must be an http(s) URL without query or fragment"]
    if errors:
        raise FieldErrors(errors)


def key_mode(secret_key: str) -> Mode | None:
    """The mode a Paystack or Stripe secret key is for, by its prefix (None when it does not say)."""
    for prefix, mode in KEY_PREFIXES:
        if secret_key.startswith(prefix):
            return mode
    return None


def _is_token(text: str) -> bool:
    return len(text) <= MAX_SECRET_LENGTH and text.isprintable() and not any(c.isspace() for c in text)


def connect(uow_factory: Callable[..., Any], box: SecretBox, caller: Caller, provider: str, *,
            secret_key: str, webhook_secret: str | None, base_url: str | None,
            paydesk_url: str, now: datetime) -> Connected:
    """Connect (or re-key) the caller's account with the provider in its mode and offer its methods."""
    secret_key, webhook_secret = secret_key.strip(), (webhook_secret or "").strip() or None
    base_url = (base_url or "").strip().rstrip("/") or None
    check_connect(provider, secret_key, webhook_secret, base_url, caller.mode)
    sealed = dict(sealed_secret_key=box.seal(secret_key),
                  sealed_webhook_secret=box.seal(webhook_secret) if webhook_secret else None,
                  key_hint=key_hint(secret_key), base_url=base_url)
    methods = PROVIDER_METHODS[provider]
    try:
        with uow_factory() as uow:
            existing = store.connected_account(uow.conn, caller, provider, for_update=True)
            if existing:
                account_id, webhook_key = existing.id, existing.webhook_key
                store.replace_secrets(uow.conn, account_id, now=now, **sealed)
            else:
                webhook_key = secrets.token_urlsafe(32)
                account_id = store.add_account(uow.conn, caller, provider, webhook_key=webhook_key,
                                               now=now, **sealed)
            store.offer_methods(uow.conn, caller, account_id, methods)
            for key in bank_lists_offered(provider, account_id, methods):
                uow.bank_lists.make_due(key, now)  # usually stored before anybody asks
            uow.methods.forget_merchant(caller.merchant_id)
            uow.audit(caller, "provider.update" if existing else "provider.connect",
                      f"{provider}:{account_id}", detail={
                          "provider": provider, "keyHint": sealed["key_hint"], "baseUrl": base_url,
                          "webhookSecret": bool(webhook_secret),
                          "methods": [m.method_id for m in methods]})
            uow.commit()
    except IntegrityError:
        raise FieldErrors.one("provider", f"{PROVIDER_NAMES[provider]} was being connected at the same "
                              "time by someone else; reload and try again") from None
    return Connected(account_id, provider, caller.mode.value, webhook_url(paydesk_url, webhook_key),
                     [m.method_id for m in methods], replaced=existing is not None)


def bank_lists_offered(provider: str, account_id: int, methods: tuple[PaymentMethod, ...]) -> list[ListKey]:
    """The bank lists the account's payout methods offer, one per currency (and its country)."""
    connector = CONNECTORS[provider]
    keys = []
    for method in methods:
        for currency in method.currencies if method.bank_list else ():
            try:
                keys.append(ListKey(account_id, currency, connector.bank_list_country(method, currency, None)))
            except BankListError:
                continue  # the provider lists no banks in this currency
    return keys


def disconnect(uow_factory: Callable[..., Any], caller: Caller, account_id: int, now: datetime) -> bool:
    """Forget the account's secrets and stop its methods (history stays readable); False if not theirs."""
    with uow_factory() as uow:
        account = store.caller_account(uow.conn, caller, account_id)
        if account is None or not account.connected:
            return False
        store.disconnect_account(uow.conn, account_id, now)
        uow.methods.forget_merchant(caller.merchant_id)
        uow.audit(caller, "provider.disconnect", f"{account.provider}:{account_id}",
                  detail={"provider": account.provider, "keyHint": account.key_hint})
        uow.commit()
    return True


def request_test(uow_factory: Callable[..., Any], caller: Caller, account_id: int,
                 now: datetime) -> bool:
    """Ask the workers to test the caller's connected account (audited); False if not theirs or
    disconnected. No provider is called here: a request never waits on one."""
    with uow_factory() as uow:
        account = store.caller_account(uow.conn, caller, account_id)
        if account is None or not account.connected:
            return False
        store.request_test(uow.conn, account_id, now)
        uow.audit(caller, "provider.test", f"{account.provider}:{account_id}",
                  detail={"provider": account.provider, "keyHint": account.key_hint})
        uow.commit()
    return True


def test_connection(registry: ProviderRegistry, account: ProviderAccount) -> tuple[bool, str]:
    """A harmless call with the account's key (its balance): (worked, what happened in fixed words).

    The base URL is the merchant's to choose, so no word of the answer is shown: only its HTTP
    status and a fixed explanation (the connector logs the answer itself). A worker makes this
    call (app/providers/connection_tests.py), never a request.
    """
    name = PROVIDER_NAMES[account.provider]
    try:
        return True, f"{name} answered: {registry.for_account(account).test_connection()}"
    except (ProviderRejected, ProviderAnswerError) as failed:
        return False, answered(name, failed.http_status)
    except ProviderUnavailable as error:
        return False, str(error)  # Paydesk's own words: not asked, not reached, no answer in time


@dataclass(frozen=True)
class ConnectionTestState:
    """Where an account's last "Test connection" stands, in the words the dashboard shows."""

    waiting: bool  # asked, no answer yet: the dashboard asks again shortly
    worked: bool  # the provider answered as it should (False while waiting or overdue)
    message: str
    at: datetime  # when answered, or when asked while there is no answer


def connection_test_state(account: ProviderAccount, now: datetime) -> ConnectionTestState | None:
    """Where the account's latest test stands: its stored answer; "Asking Paystack…" while no worker
    has answered it; "No answer yet…" once that took longer than TEST_ANSWER_WAIT. None if never asked."""
    if account.test_requested_at is None:
        return None
    if account.test_due_at is None:  # answered
        return ConnectionTestState(False, bool(account.test_worked), account.test_message or "",
                                   account.test_finished_at or account.test_requested_at)
    name = PROVIDER_NAMES[account.provider]
    if now - account.test_requested_at < TEST_ANSWER_WAIT:
        return ConnectionTestState(True, False, f"Asking {name}…", account.test_requested_at)
    return ConnectionTestState(False, False, f"No answer yet from {name}; the worker may be stopped",
                               account.test_requested_at)


def reencrypt_all(uow_factory: Callable[..., Any], box: SecretBox) -> tuple[int, int, int]:
    """Re-seal every stored secret under the first key (after a key rotation), all or none: how
    many provider accounts, users' two-factor secrets and merchants' webhook signing secrets."""
    with uow_factory() as uow:
        rows = store.all_sealed_secrets(uow.conn)
        for account_id, secret_key, webhook_secret in rows:
            store.reseal(uow.conn, account_id, box.reseal(secret_key) if secret_key else None,
                         box.reseal(webhook_secret) if webhook_secret else None)
        two_factor_secrets = reseal_totp_secrets(uow.conn, box)
        signing_secrets = reseal_webhook_secrets(uow)
        uow.commit()
    return len(rows), two_factor_secrets, signing_secrets
