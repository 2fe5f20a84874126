"""`flask provider connect|disconnect|reencrypt`: working methods in the chosen mode, the webhook
URL kept on re-connect, secrets never printed nor stored in clear, and key rotation."""
from __future__ import annotations

import json
import uuid

import pyotp
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from app.store.encryption import SecretBox, SecretBoxError
from app.store.merchants import create_user
from app.store.two_factor import enable_totp, enrolment_secret, pending_enrolment, sealed_totp_secret
from app.store.tables import audit_log, provider_accounts, webhook_secrets
from app.util import utcnow
from tests.conftest import make_app

PAYSTACK_METHODS = ["paystack-card", "paystack-bank-payout"]


def new_secret(prefix: str = "sk_test_") -> str:
    """A key no other test uses, so finding it anywhere means this test leaked it."""
    return prefix + uuid.uuid4().hex


def run(app, *args, input=None):
    """`flask provider <args>` against the app."""
    return app.test_cli_runner().invoke(args=["provider", *args], input=input)


def connect(app, merchant, provider="paystack", mode="sandbox", *extra):
    """Connect and return the --json answer (asserting success)."""
    result = run(app, "connect", merchant.name, provider, "--mode", mode, *extra, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def method_ids(api) -> list[str]:
    response = api.get("/payment-methods")
    assert response.status_code == 200, response.text
    return [m["id"] for m in response.json()]


def stored(app, account_id: int):
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(provider_accounts)
                                .where(provider_accounts.c.id == account_id)).one()


def audited(app, merchant_id: int) -> list:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return list(uow.conn.execute(select(audit_log).where(
            audit_log.c.merchant_id == merchant_id, audit_log.c.action.like("provider.%"))
            .order_by(audit_log.c.id)))


def test_connect_prints_the_account_its_webhook_url_and_methods_as_json(app, server, merchant,
                                                                        sandbox, live):
    result = run(app, "connect", merchant.name, "paystack", "--mode", "sandbox",
                 "--secret-key", new_secret(), "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert result.stdout == json.dumps(answer, indent=2) + "\n"  # nothing but the JSON
    assert set(answer) == {"providerAccountId", "provider", "mode", "webhookUrl", "methods"}
    assert answer["provider"] == "paystack" and answer["mode"] == "sandbox"
    assert answer["methods"] == PAYSTACK_METHODS
    row = stored(app, answer["providerAccountId"])
    assert row.merchant_id == merchant.merchant_id and row.mode == "sandbox"
    assert answer["webhookUrl"] == f"{server.url}/provider-webhooks/{row.webhook_key}"
    assert set(PAYSTACK_METHODS) <= set(method_ids(sandbox))
    assert not set(PAYSTACK_METHODS) & set(method_ids(live))


def test_connect_in_live_offers_the_methods_in_live_only(app, merchant, sandbox, live):
    answer = connect(app, merchant, "stripe", "live", "--secret-key", new_secret("sk_live_"),
                     "--webhook-secret", new_secret("whsec_"))
    assert answer["mode"] == "live" and answer["methods"] == ["stripe-card"]
    assert "stripe-card" in method_ids(live)
    assert "stripe-card" not in method_ids(sandbox)


def test_without_json_it_says_where_to_set_the_webhook_url(app, merchant):
    result = run(app, "connect", merchant.name, "paystack", "--mode", "sandbox",
                 "--secret-key", new_secret())
    assert result.exit_code == 0, result.output
    row_id = int(result.output.split("(provider account ", 1)[1].split(")", 1)[0])
    url = f"/provider-webhooks/{stored(app, row_id).webhook_key}"
    assert f"Connected Paystack for {merchant.name} in sandbox (provider account {row_id})." in result.output
    assert "Methods: paystack-card, paystack-bank-payout" in result.output
    assert "Webhook URL: http://" in result.output and url in result.output
    assert "Set this webhook URL at Paystack:" in result.output
    assert "Settings → API Keys & Webhooks" in result.output
    assert "Test Webhook URL" in result.output


def test_reconnecting_replaces_the_secret_and_keeps_the_webhook_url_and_account(app, merchant):
    first = connect(app, merchant, "paystack", "sandbox", "--secret-key", new_secret())
    replacement = new_secret()
    again = run(app, "connect", merchant.name, "paystack", "--mode", "sandbox",
                "--secret-key", replacement)
    assert again.exit_code == 0, again.output
    assert (f"Replaced the secrets of {merchant.name}'s Paystack account in sandbox "
            f"(provider account {first['providerAccountId']}); its webhook URL is unchanged.") in again.output
    second = connect(app, merchant, "paystack", "sandbox", "--secret-key", replacement)
    assert second == first
    box = app.extensions["paydesk"].providers.box
    assert box.open(stored(app, first["providerAccountId"]).secret_key) == replacement
    actions = [(r.action, r.actor, r.mode) for r in audited(app, merchant.merchant_id)]
    assert actions == [("provider.connect", "cli", "sandbox"), ("provider.update", "cli", "sandbox"),
                       ("provider.update", "cli", "sandbox")]


def test_secrets_are_never_printed_and_stored_only_encrypted(app, merchant):
    secret_key, webhook_secret = new_secret("sk_live_"), new_secret("whsec_")
    printed = run(app, "connect", merchant.name, "stripe", "--mode", "live",
                  "--secret-key", secret_key, "--webhook-secret", webhook_secret)
    as_json = run(app, "connect", merchant.name, "stripe", "--mode", "live",
                  "--secret-key", secret_key, "--webhook-secret", webhook_secret, "--json")
    for result in (printed, as_json):
        assert result.exit_code == 0, result.output
        assert secret_key not in result.output and webhook_secret not in result.output
        assert secret_key[-4:] not in result.output  # not even the hint
    row = stored(app, json.loads(as_json.stdout)["providerAccountId"])
    in_clear = " ".join(str(value) for value in row)
    assert secret_key not in in_clear and webhook_secret not in in_clear
    assert row.key_hint == f"sk_live_…{secret_key[-4:]}"
    box = app.extensions["paydesk"].providers.box
    assert box.open(row.secret_key) == secret_key
    assert box.open(row.webhook_secret) == webhook_secret
    audit = " ".join(str(r.detail) for r in audited(app, merchant.merchant_id))
    assert secret_key not in audit and webhook_secret not in audit


def test_an_omitted_secret_key_is_asked_for_without_echo(app, merchant):
    secret_key = new_secret()
    result = run(app, "connect", merchant.name, "paystack", "--mode", "sandbox", "--json",
                 input=secret_key + "\n")
    assert result.exit_code == 0, result.output
    assert secret_key not in result.output
    answer = json.loads(result.stdout)  # the question went to stderr: stdout is the JSON alone
    box = app.extensions["paydesk"].providers.box
    assert box.open(stored(app, answer["providerAccountId"]).secret_key) == secret_key


def test_an_unknown_merchant_is_an_error(app):
    name = f"Nobody {uuid.uuid4().hex[:8]}"
    result = run(app, "connect", name, "paystack", "--mode", "sandbox", "--secret-key", new_secret())
    assert result.exit_code != 0
    assert f"Error: no merchant named {name}" in result.output
    assert run(app, "disconnect", name, "1").exit_code != 0


@pytest.mark.parametrize("args, message", [
    (["stripe", "--secret-key", "sk_test_abcdefabcdefabcdef"],
     "Stripe's webhook signing secret (whsec_...) is required"),
    (["paystack", "--secret-key", "sk_test_abcdefabcdefabcdef", "--webhook-secret", "whsec_x"],
     "Paystack signs its webhooks with the secret key; it has no separate webhook secret"),
    (["paystack", "--secret-key", "sk_test_abcdefabcdefabcdef", "--base-url", "ftp://fake.test"],
     "Base URL must be an http(s) URL without query or fragment"),
    (["paystack", "--secret-key", "sk_test_abc def"], "Secret key must be one line without spaces"),
    (["paystack", "--secret-key", " "], "Secret key is required"),
    (["paystack", "--secret-key", "sk_live_abcdefabcdefabcdef"],
     "This is a live key: connect it in live mode"),
])
def test_field_errors_exit_non_zero_with_their_messages(app, merchant, sandbox, args, message):
    result = run(app, "connect", merchant.name, *args, "--mode", "sandbox")
    assert result.exit_code == 1
    assert f"Error: not connected:\n  {message}" in result.output
    secret = args[args.index("--secret-key") + 1].strip()
    assert not secret or secret not in result.output
    assert not {"paystack-card", "stripe-card"} & set(method_ids(sandbox))
    assert audited(app, merchant.merchant_id) == []


def test_disconnect_hides_the_methods_and_is_audited(app, merchant, sandbox):
    answer = connect(app, merchant, "paystack", "sandbox", "--secret-key", new_secret())
    account_id = answer["providerAccountId"]
    result = run(app, "disconnect", merchant.name, str(account_id))
    assert result.exit_code == 0, result.output
    assert result.output == (f"Disconnected {merchant.name}'s Paystack account in sandbox (provider "
                             f"account {account_id}): its secrets are forgotten and its methods "
                             "take no new transactions.\n")
    assert not set(PAYSTACK_METHODS) & set(method_ids(sandbox))
    row = stored(app, account_id)
    assert row.secret_key is None and row.disconnected_at is not None
    again = run(app, "disconnect", merchant.name, str(account_id))
    assert again.exit_code == 1
    assert f"Error: provider account {account_id} is disconnected already" in again.output
    actions = [(r.action, r.actor, r.target) for r in audited(app, merchant.merchant_id)]
    assert actions[-1] == ("provider.disconnect", "cli", f"paystack:{account_id}")


def test_another_merchants_account_cannot_be_disconnected(app, merchant):
    other = f"Cli {uuid.uuid4().hex[:8]}"
    assert app.test_cli_runner().invoke(args=["merchant", "create", other]).exit_code == 0
    account_id = connect(app, merchant, "paystack", "sandbox", "--secret-key", new_secret())["providerAccountId"]
    refused = run(app, "disconnect", other, str(account_id))
    assert refused.exit_code == 1
    assert f"Error: {other} has no provider account {account_id}" in refused.output
    assert stored(app, account_id).disconnected_at is None
    assert run(app, "disconnect", merchant.name, str(2**63)).exit_code == 2  # no row can have it


@pytest.fixture
def rotated(app, database_url):
    """An app on the same database whose PAYDESK_ENCRYPTION_KEY is "new,old"; afterwards every
    secret is sealed under the old key again, as the other tests' server expects."""
    old, new = app.config["PAYDESK_ENCRYPTION_KEY"], Fernet.generate_key().decode()
    apps = []

    def with_keys(keys: str):
        made = make_app(database_url, PAYDESK_ENCRYPTION_KEY=keys)
        apps.append(made)
        return made

    yield with_keys(f"{new},{old}"), new, old
    assert run(with_keys(f"{old},{new}"), "reencrypt").exit_code == 0
    for made in apps:
        made.extensions["paydesk.engine"].dispose()


def test_reencrypt_seals_every_secret_under_the_new_key(app, merchant, rotated):
    rotated_app, new, old = rotated
    secret_key, webhook_secret = new_secret("sk_live_"), new_secret("whsec_")
    account_id = connect(app, merchant, "stripe", "live", "--secret-key", secret_key,
                         "--webhook-secret", webhook_secret)["providerAccountId"]
    before = stored(app, account_id)
    result = run(rotated_app, "reencrypt")
    assert result.exit_code == 0, result.output
    count = int(result.output.split("Re-encrypted the secrets of ", 1)[1].split(" ", 1)[0])
    assert count >= 1
    assert "under the first key of PAYDESK_ENCRYPTION_KEY" in result.output
    after = stored(app, account_id)
    assert after.secret_key != before.secret_key
    assert SecretBox(new).open(after.secret_key) == secret_key
    assert SecretBox(new).open(after.webhook_secret) == webhook_secret
    with pytest.raises(SecretBoxError):
        SecretBox(old).open(after.secret_key)  # the old key can be removed now
    assert rotated_app.extensions["paydesk"].providers.box.open(after.secret_key) == secret_key
    assert secret_key not in result.output


def test_reencrypt_seals_the_webhook_signing_secrets_under_the_new_key_too(app, merchant, rotated):
    rotated_app, new, old = rotated
    result = run(rotated_app, "reencrypt")
    assert result.exit_code == 0, result.output
    signing = int(result.output.split(" provider account", 1)[1].split(" and ", 1)[1].split(" ", 1)[0])
    assert signing >= 2  # this merchant's live and sandbox secrets at least
    assert " webhook signing secrets under the first key of PAYDESK_ENCRYPTION_KEY" in result.output
    with app.extensions["paydesk"].uow(write=False) as uow:
        stored_secrets = list(uow.conn.execute(
            select(webhook_secrets.c.secret).where(webhook_secrets.c.merchant_id == merchant.merchant_id)
            .order_by(webhook_secrets.c.id)).scalars())
    assert [SecretBox(new).open(raw) for raw in stored_secrets] == [merchant.live_webhook_secret,
                                                                     merchant.sandbox_webhook_secret]
    with pytest.raises(SecretBoxError):
        SecretBox(old).open(stored_secrets[0])  # the old key can be removed now
    assert merchant.live_webhook_secret not in result.output


def test_reencrypt_seals_the_two_factor_secrets_under_the_new_key_too(app, merchant, rotated):
    """A user's TOTP secret, and one being enrolled, are sealed under the new key: dropping the
    old key afterwards must not lock anyone out of two-factor sign-in."""
    rotated_app, new, old = rotated
    box = app.extensions["paydesk"].providers.box
    enabled, enrolling = pyotp.random_base32(), pyotp.random_base32()
    with app.extensions["paydesk"].uow() as uow:
        user_id = create_user(uow.conn, merchant.merchant_id, f"totp-{uuid.uuid4().hex[:8]}@shop.test",
                              "finance", None)
        enable_totp(uow.conn, user_id, box.seal(enabled), 0, ["0" * 64])
        other_id = create_user(uow.conn, merchant.merchant_id, f"enrol-{uuid.uuid4().hex[:8]}@shop.test",
                               "support", None)
        enrolment_secret(uow.conn, other_id, box.seal(enrolling), utcnow())
        uow.commit()
    result = run(rotated_app, "reencrypt")
    assert result.exit_code == 0, result.output
    assert " two-factor secret" in result.output
    with app.extensions["paydesk"].uow(write=False) as uow:
        sealed_enabled, _ = sealed_totp_secret(uow.conn, user_id)
        sealed_enrolling = pending_enrolment(uow.conn, other_id)
    assert SecretBox(new).open(sealed_enabled) == enabled
    assert SecretBox(new).open(sealed_enrolling) == enrolling
    for sealed in (sealed_enabled, sealed_enrolling):
        with pytest.raises(SecretBoxError):
            SecretBox(old).open(sealed)  # the old key can be removed now
    assert enabled not in result.output
