"""The flask commands: merchant create, user create, demo."""
from __future__ import annotations

import json
import re
import uuid

from sqlalchemy import select

from app.store.tables import transactions, users
from tests.conftest import Api, make_app


def test_merchant_create_prints_working_credentials_as_json(app, server):
    name = f"Cli {uuid.uuid4().hex[:8]}"
    result = app.test_cli_runner().invoke(args=["merchant", "create", name, "--json"])
    assert result.exit_code == 0, result.output
    created = json.loads(result.output)
    assert set(created) == {"merchantId", "liveToken", "sandboxToken", "liveWebhookSecret",
                            "sandboxWebhookSecret", "inboxUrl"}
    assert created["sandboxWebhookSecret"].startswith("whsec_")
    assert created["inboxUrl"].startswith(f"{server.url}/inbox/")
    assert Api(server.url, created["sandboxToken"]).status("SBX-CAPTURED")["Status"] == "Captured"
    again = app.test_cli_runner().invoke(args=["merchant", "create", name])
    assert again.exit_code != 0
    assert f"merchant {name} already exists" in again.output


def test_user_create_hashes_the_password_with_argon2id(app):
    name = f"Cli {uuid.uuid4().hex[:8]}"
    app.test_cli_runner().invoke(args=["merchant", "create", name])
    email = f"{uuid.uuid4().hex[:8]}@Example.com"
    result = app.test_cli_runner().invoke(
        args=["user", "create", email, "--merchant", name, "--role", "finance", "--password", "s3cret-pass"])
    assert result.exit_code == 0, result.output
    with app.extensions["paydesk"].uow(write=False) as uow:
        row = uow.conn.execute(select(users).where(users.c.email == email.lower())).first()
    assert row.role == "finance"
    assert row.password_hash.startswith("$argon2id$")
    refused = app.test_cli_runner().invoke(
        args=["user", "create", "x@example.com", "--merchant", name, "--role", "boss"])
    assert refused.exit_code != 0


def test_demo_is_idempotent_and_reprints_the_same_tokens(tmp_path, sqlite_url):
    app = make_app(f"sqlite:///{tmp_path / 'demo.db'}", INSTANCE_PATH=tmp_path)
    from app.cli import upgrade_database

    upgrade_database(app.config["DATABASE_URL"])
    first = app.test_cli_runner().invoke(args=["demo"])
    second = app.test_cli_runner().invoke(args=["demo"])
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    assert "Sandbox API token:  pd_test_" in first.output
    assert "finance@demo.test" in first.output
    assert _demo_recipients(app) == [("Chinedu Okafor", "sandbox", "•••• 6785"),
                                     ("Greta Schmidt", "sandbox", "•••• 3000")]  # seeded once
    # the sample payments' webhooks go to the merchant's own inbox, where the demo can read them,
    # not to an address that cannot answer
    inbox = re.search(r"Inbox URL: +(\S+)", first.output).group(1)
    assert _demo_callback_urls(app) == {inbox}
    app.extensions["paydesk.engine"].dispose()


def _demo_callback_urls(app) -> set[str]:
    """The callback URLs of the demo merchant's transactions."""
    with app.extensions["paydesk"].uow(write=False) as uow:
        return set(uow.conn.execute(select(transactions.c.callback_url).distinct()).scalars())


def _demo_recipients(app) -> list[tuple]:
    """The demo merchant's saved recipients (both modes): holder, mode, masked account."""
    from app.payments import recipients
    from app.payments.model import Caller, Mode
    from app.store.merchants import merchant_by_name

    deps = app.extensions["paydesk"]
    with deps.uow(write=False) as uow:
        merchant_id = merchant_by_name(uow.conn, "Demo Shop").id
    return [(r.holder, mode.value, r.masked_account_number) for mode in Mode
            for r in recipients.list_recipients(deps, Caller(merchant_id, mode, "test"))]

