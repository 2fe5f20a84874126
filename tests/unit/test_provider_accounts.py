"""Provider accounts without a database: sealing secrets, checking what is connected, finding connectors."""
from __future__ import annotations

import base64
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.payments.model import FieldErrors, Mode
from app.payments.provider import ProvidersByName, ProviderUnavailable
from app.providers.accounts import (TEST_ANSWER_WAIT, ConnectionTestState, check_connect,
                                    connection_test_state, key_hint)
from app.providers.http import Timeouts
from app.providers.methods import DEFAULT_METHODS, PROVIDER_METHODS
from app.providers.paystack import PaystackConnector
from app.providers.registry import ProviderRegistry
from app.providers.simulator import SimulatorProvider
from app.providers.stripe import StripeConnector
from app.store.encryption import SecretBox, SecretBoxError
from app.store.provider_accounts import ProviderAccount

SECRET = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
# Fixed keys (not generated at import): xdist's workers must collect the same test ids.
OLD_KEY = base64.urlsafe_b64encode(bytes(range(32))).decode()
NEW_KEY = base64.urlsafe_b64encode(bytes(range(32, 64))).decode()


def test_a_sealed_secret_opens_again_and_does_not_hold_it_in_clear():
    box = SecretBox(OLD_KEY)
    sealed = box.seal(SECRET)
    assert SECRET not in sealed and "4eC39" not in sealed
    assert box.open(sealed) == SECRET


def test_after_a_rotation_old_tokens_open_and_resealing_moves_them_to_the_new_key():
    sealed_before = SecretBox(OLD_KEY).seal(SECRET)
    rotated = SecretBox(f"{NEW_KEY},{OLD_KEY}")
    assert rotated.open(sealed_before) == SECRET
    resealed = rotated.reseal(sealed_before)
    assert SecretBox(NEW_KEY).open(resealed) == SECRET
    with pytest.raises(SecretBoxError):
        SecretBox(OLD_KEY).open(resealed)


@pytest.mark.parametrize("keys", ["", "not-a-fernet-key", f"{OLD_KEY},short"],
                         ids=["empty", "not a key", "one good one bad"])
def test_a_key_setting_that_is_not_fernet_keys_is_refused_at_start(keys):
    with pytest.raises(SecretBoxError, match="PAYDESK_ENCRYPTION_KEY must be comma-separated Fernet keys"):
        SecretBox(keys)


def test_the_box_never_shows_its_keys():
    assert repr(SecretBox(OLD_KEY)) == "SecretBox()"


@pytest.mark.parametrize(("secret", "hint"), [
    ("sk_test_4eC39HqLyjWDarjtT1zdp7dc", "sk_test_…p7dc"),
    ("shortsecret1", "…ret1"),
    ("tiny", "…"),
])
def test_a_key_hint_tells_keys_apart_without_giving_one_away(secret, hint):
    assert key_hint(secret) == hint


@pytest.mark.parametrize(("provider", "secret", "webhook_secret", "base_url", "errors"), [
    ("adyen", SECRET, None, None, {"provider": ["Provider must be one of paystack, stripe"]}),
    ("paystack", "", None, None, {"secretKey": ["Secret key is required"]}),
    ("paystack", "sk test", None, None, {"secretKey": ["Secret key must be one line without spaces"]}),
    ("paystack", SECRET, "whsec_x", None, {"webhookSecret": [
        "Paystack signs its webhooks with the secret key; it has no separate webhook secret"]}),
    ("stripe", SECRET, None, None, {"webhookSecret": [
        "Stripe's webhook signing secret (whsec_...) is required: without it Stripe's webhooks "
        "cannot be verified"]}),
    ("stripe", SECRET, "whsec\nx", None, {"webhookSecret": ["Webhook secret must be one line without spaces"]}),
    ("paystack", SECRET, None, "ftp://files.example", {"baseUrl": [
        "Base URL must be an http(s) URL without query or fragment"]}),
    ("paystack", SECRET, None, "https://api.example/?a=1", {"baseUrl": [
        "Base URL must be an http(s) URL without query or fragment"]}),
])
def test_what_cannot_work_is_refused_field_by_field(provider, secret, webhook_secret, base_url, errors):
    with pytest.raises(FieldErrors) as refused:
        check_connect(provider, secret, webhook_secret, base_url)
    assert refused.value.errors == errors


@pytest.mark.parametrize(("provider", "webhook_secret"), [("paystack", None), ("stripe", "whsec_abc")])
def test_a_complete_connection_passes(provider, webhook_secret):
    check_connect(provider, SECRET, webhook_secret, "http://127.0.0.1:4010")


def test_each_provider_adds_its_methods_with_fixed_ids():
    assert {provider: [m.method_id for m in methods] for provider, methods in PROVIDER_METHODS.items()} == {
        "paystack": ["paystack-card", "paystack-bank-payout"], "stripe": ["stripe-card"]}
    assert {"EUR", "USD", "GBP"} <= set(PROVIDER_METHODS["stripe"][0].currencies)
    assert all(m.provider == provider for provider, methods in PROVIDER_METHODS.items() for m in methods)


class Accounts:
    """Accounts by id as the registry reads them, counting reads."""

    def __init__(self, *accounts: ProviderAccount):
        self.rows = {account.id: account for account in accounts}
        self.reads = 0

    def __call__(self, account_id: int) -> ProviderAccount | None:
        self.reads += 1
        return self.rows.get(account_id)


def account(box: SecretBox, provider: str = "paystack", **changes) -> ProviderAccount:
    return replace(ProviderAccount(
        id=7, merchant_id=1, mode=Mode.SANDBOX, provider=provider, key_hint="sk_test_…p7dc",
        base_url="http://127.0.0.1:9", webhook_key="k", created_at=NOW, updated_at=NOW,
        disconnected_at=None, sealed_secret_key=box.seal(SECRET),
        sealed_webhook_secret=box.seal("whsec_abc") if provider == "stripe" else None), **changes)


def registry(box: SecretBox, accounts: Accounts) -> ProviderRegistry:
    simulator = SimulatorProvider()
    return ProviderRegistry(ProvidersByName({"simulator": simulator}), accounts, box,
                            return_url="http://paydesk.test/checkout/{tx_no}/return",
                            timeouts=Timeouts(1, 2), clock=lambda: NOW)


def test_the_simulators_methods_get_the_simulator_without_reading_an_account():
    box, accounts = SecretBox(OLD_KEY), Accounts()
    found = registry(box, accounts).for_method(DEFAULT_METHODS[0])
    assert (isinstance(found, SimulatorProvider), accounts.reads) == (True, 0)


@pytest.mark.parametrize("provider", ["paystack", "stripe"])
def test_only_the_simulator_answers_in_process_and_asking_reads_no_account(provider):
    box = SecretBox(OLD_KEY)
    accounts = Accounts(account(box, provider))
    providers = registry(box, accounts)
    assert isinstance(providers.in_process_provider(DEFAULT_METHODS[0]), SimulatorProvider)
    method = replace(PROVIDER_METHODS[provider][0], provider_account_id=7)
    assert providers.in_process_provider(method) is None
    assert accounts.reads == 0  # a refund of that method reads its account once, to ask it
    providers.simulators.by_name["simulator"].latency = 0.5  # rehearsing a slow provider
    assert providers.in_process_provider(DEFAULT_METHODS[0]) is None


@pytest.mark.parametrize(("provider", "connector"), [("paystack", PaystackConnector),
                                                     ("stripe", StripeConnector)])
def test_an_accounts_method_gets_its_connector_kept_until_the_secrets_change(provider, connector):
    box = SecretBox(OLD_KEY)
    accounts = Accounts(account(box, provider))
    providers = registry(box, accounts)
    method = replace(PROVIDER_METHODS[provider][0], provider_account_id=7)
    first = providers.for_method(method)
    assert isinstance(first, connector) and first.return_url == "http://paydesk.test/checkout/{tx_no}/return"
    assert providers.for_method(method) is first
    accounts.rows[7] = account(box, provider, updated_at=NOW + timedelta(seconds=1))
    assert providers.for_method(method) is not first
    assert accounts.reads == 3  # read on every use: a disconnect takes effect at once


def test_a_disconnected_or_missing_account_cannot_serve():
    box = SecretBox(OLD_KEY)
    providers = registry(box, Accounts(account(box, disconnected_at=NOW, sealed_secret_key=None)))
    for account_id in (7, 8):
        with pytest.raises(ProviderUnavailable, match="The provider account is disconnected"):
            providers.for_method(replace(PROVIDER_METHODS["paystack"][0], provider_account_id=account_id))


def test_an_account_sealed_under_a_removed_key_cannot_serve_and_says_why():
    sealed_elsewhere = account(SecretBox(NEW_KEY))
    providers = registry(SecretBox(OLD_KEY), Accounts(sealed_elsewhere))
    with pytest.raises(ProviderUnavailable, match="cannot be decrypted with PAYDESK_ENCRYPTION_KEY"):
        providers.for_account(sealed_elsewhere)


def test_webhooks_are_verified_with_stripes_whsec_and_paystacks_secret_key():
    box = SecretBox(OLD_KEY)
    providers = registry(box, Accounts())
    assert providers.webhook_secret(account(box, "stripe")) == "whsec_abc"
    assert providers.webhook_secret(account(box, "paystack")) == SECRET


@pytest.mark.parametrize(("secret", "mode", "errors"), [
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", Mode.SANDBOX,
     {"secretKey": ["This is a live key: connect it in live mode"]}),
    ("sk_test_4eC39HqLyjWDarjtT1zdp7dc", Mode.LIVE,
     {"secretKey": ["This is a sandbox key: connect it in sandbox mode"]}),
    ("rk_live_4eC39HqLyjWDarjtT1zdp7dc", Mode.SANDBOX,
     {"secretKey": ["This is a live key: connect it in live mode"]}),
])
def test_a_key_of_the_other_mode_is_refused(secret, mode, errors):
    with pytest.raises(FieldErrors) as refused:
        check_connect("paystack", secret, None, None, mode)
    assert refused.value.errors == errors


def test_a_key_that_does_not_say_its_mode_is_taken_in_either():
    for mode in Mode:
        check_connect("paystack", "a1b2c3d4e5f6a1b2c3d4e5f6", None, None, mode)


@pytest.mark.parametrize(("base_url", "message"), [
    ("https://api.example/" + "a" * 2048, "Base URL must be at most 2048 characters"),
    ("https://api.example/\x00", "Base URL must not contain control characters"),
])
def test_a_base_url_no_database_could_store_is_refused(base_url, message):
    with pytest.raises(FieldErrors) as refused:
        check_connect("paystack", SECRET, None, base_url)
    assert refused.value.errors == {"baseUrl": [message]}


def test_a_connection_test_never_asked_shows_nothing():
    assert connection_test_state(account(SecretBox(OLD_KEY)), NOW) is None


def test_a_connection_test_waits_for_its_answer_until_the_wait_is_over():
    asked = account(SecretBox(OLD_KEY), test_requested_at=NOW, test_due_at=NOW)
    assert connection_test_state(asked, NOW + TEST_ANSWER_WAIT - timedelta(microseconds=1)) == \
        ConnectionTestState(waiting=True, worked=False, message="Asking Paystack…", at=NOW)
    assert connection_test_state(asked, NOW + TEST_ANSWER_WAIT) == ConnectionTestState(
        waiting=False, worked=False, message="No answer yet from Paystack; the worker may be stopped", at=NOW)


def test_an_answered_connection_test_shows_the_stored_words_and_when():
    answered = account(SecretBox(OLD_KEY), test_requested_at=NOW, test_due_at=None,
                       test_finished_at=NOW + timedelta(seconds=2), test_worked=True,
                       test_message="Paystack answered: Connected to Paystack")
    assert connection_test_state(answered, NOW + timedelta(days=1)) == ConnectionTestState(
        waiting=False, worked=True, message="Paystack answered: Connected to Paystack",
        at=NOW + timedelta(seconds=2))
