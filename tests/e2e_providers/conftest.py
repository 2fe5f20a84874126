"""End-to-end fixtures: Paydesk over HTTP on databases of its own, fake Paystack and Stripe servers,
provider accounts connected through app.providers.accounts.connect, a merchant webhook receiver."""
from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer

import pytest
import requests
from cryptography.fernet import Fernet
from sqlalchemy import delete, select, update

from app.cli import upgrade_database
from app.payments.model import Caller, Mode
from app.providers import accounts
from app.store import provider_accounts as account_store
from app.store.encryption import SecretBox
from app.providers.bank_refresh import refresh_due_lists
from app.store.tables import (
    account_resolutions, bank_lists, disputes, provider_accounts, status_history, transactions,
    webhook_events,
)
from app.util import utcnow
from app.webhooks.dispatcher import deliver_due
from app.webhooks.guard import AddressGuard, parse_networks
from app.webhooks.settings import ALLOWED_NETWORKS_SETTING, DeliverySettings
from tests.conftest import BACKENDS, make_app
from tests.providers.fake_provider import FakeProvider, RunningFakeProvider, Seen, _handler
from tests.support.databases import create_postgres_database
from tests.support.network import LOOPBACK
from tests.support.servers import ThreadedServer, free_port
from tests.webhooks.receiver import Receiver

# The app's Fernet key for this package's runs (never the one in instance/).
ENCRYPTION_KEY = Fernet.generate_key().decode()
# Provider keys as the providers issue them (format only; made up).
PAYSTACK_SECRET = "sk_live_7c3e9a1f5b2d8e4c6a0f9b3d7e1c5a2f8b4d6e09"
STRIPE_SECRET = "sk_test_51NzQ3pKf0c2b7a1d4e6f80a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9"
STRIPE_WEBHOOK_SECRET = "whsec_8d4b1f0e6c2a9b7d3f5e1c0a4b8d2f6e"
# A short read timeout, so the timeout tests take half a second per provider call.
READ_TIMEOUT = 0.5


@pytest.fixture(scope="package", params=BACKENDS)
def server(request, tmp_path_factory):
    """Paydesk over HTTP on a database only these tests use (the worker's checks and webhook
    deliveries then see only this package's transactions)."""
    drop = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('e2e_providers') / 'paydesk.db'}"
    else:
        url, drop = create_postgres_database()
    upgrade_database(url)
    port = free_port()
    app = make_app(url, port, PAYDESK_ENCRYPTION_KEY=ENCRYPTION_KEY, PROVIDER_READ_TIMEOUT=READ_TIMEOUT,
                   PROVIDER_CONNECT_TIMEOUT=1.0)
    with ThreadedServer(app, port) as running:
        running.app = app
        running.database_url = url
        yield running
    app.extensions["paydesk.engine"].dispose()
    if drop:
        drop()


@pytest.fixture
def deps(app):
    """The app's services (real clock)."""
    return app.extensions["paydesk"]


@pytest.fixture(autouse=True)
def nothing_left_over(server):
    """After each test, its transactions stop being due for the worker, its webhooks for delivery,
    its bank lists for fetching, its account names for resolving and its disputes for their calls and checks, so the next test's
    worker round and deliveries see only its own."""
    yield
    deps = server.app.extensions["paydesk"]
    with deps.uow() as uow:
        uow.conn.execute(update(transactions).where(transactions.c.provider_check_at.is_not(None))
                         .values(provider_check_at=None))
        uow.conn.execute(update(webhook_events).where(webhook_events.c.state == "pending")
                         .values(state="failed", next_attempt_at=None))
        uow.conn.execute(delete(bank_lists))
        uow.conn.execute(delete(account_resolutions))
        uow.conn.execute(update(disputes).values(action=None, action_due_at=None,
                                                 status_checked_at=datetime(9999, 1, 1, tzinfo=UTC)))
        uow.commit()


def fetch_bank_lists(deps) -> int:
    """A worker's pass over the due bank lists (app.providers.bank_refresh), at the clock of
    `deps` (services from later() for a time to come); how many it tried."""
    return refresh_due_lists(deps, deps.providers)


def later(deps, seconds: float):
    """The services with a clock `seconds` ahead of real time (the worker, some time from now)."""
    return dataclasses.replace(deps, clock=lambda: utcnow() + timedelta(seconds=seconds))


# Fake providers


def on_request(fake: FakeProvider, method: str, path: str, hook: Callable[[Seen], None]) -> Callable[[], None]:
    """Run hook(request) inside the fake provider's handler, before it answers METHOD path.

    Returns a function that removes the hook again.
    """
    answer = fake.answer
    active = [True]

    def answering(m: str, p: str):
        if active[0] and (m, p) == (method, path):
            hook(fake.requests_to(method, path)[-1])
        return answer(m, p)

    fake.answer = answering
    return lambda: active.__setitem__(0, False)


class FakeOnPort:
    """A fake provider on a port chosen in advance: nothing listens there until start()."""

    def __init__(self):
        self.provider = FakeProvider()
        self.port = free_port()
        self.provider.url = f"http://127.0.0.1:{self.port}"
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> FakeProvider:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self.provider))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()
        return self.provider

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


@pytest.fixture
def paystack_fake():
    """A fake Paystack on a local port."""
    with RunningFakeProvider() as fake:
        yield fake


@pytest.fixture
def stripe_fake():
    """A fake Stripe on a local port."""
    with RunningFakeProvider() as fake:
        yield fake


@dataclasses.dataclass
class Account:
    """A connected provider account: who it belongs to, its webhook URL, its id."""

    caller: Caller
    connected: accounts.Connected
    secret: str  # what its webhooks are signed with

    @property
    def webhook_url(self) -> str:
        return self.connected.webhook_url

    @property
    def id(self) -> int:
        return self.connected.provider_account_id


def connect(app, merchant, mode: Mode, provider: str, base_url: str) -> Account:
    """Connect the merchant's account with the provider in the mode, as Settings -> Providers does."""
    deps = app.extensions["paydesk"]
    caller = Caller(merchant.merchant_id, mode, "admin@e2e.test")
    connected = accounts.connect(
        deps.uow, SecretBox(app.config["PAYDESK_ENCRYPTION_KEY"]), caller, provider,
        secret_key=PAYSTACK_SECRET if provider == "paystack" else STRIPE_SECRET,
        webhook_secret=STRIPE_WEBHOOK_SECRET if provider == "stripe" else None,
        base_url=base_url, paydesk_url=app.config["BASE_URL"], now=utcnow())
    return Account(caller, connected, PAYSTACK_SECRET if provider == "paystack" else STRIPE_WEBHOOK_SECRET)


@pytest.fixture
def paystack_account(app, merchant, paystack_fake) -> Account:
    """The merchant's live Paystack account, on the fake Paystack."""
    return connect(app, merchant, Mode.LIVE, "paystack", paystack_fake.url)


@pytest.fixture
def stripe_account(app, merchant, stripe_fake) -> Account:
    """The merchant's sandbox Stripe account, on the fake Stripe."""
    return connect(app, merchant, Mode.SANDBOX, "stripe", stripe_fake.url)


# The merchant's side


@pytest.fixture
def receiver():
    """The merchant's webhook receiver (answers 204)."""
    with Receiver() as running:
        yield running


@pytest.fixture
def deliver(deps):
    """Deliver every due merchant webhook now, or at the clock of `at` (services from later());
    loopback receivers allowed; returns attempts made."""
    settings = DeliverySettings(guard=AddressGuard(ALLOWED_NETWORKS_SETTING, parse_networks(LOOPBACK)),
                                connect_timeout=1.0, timeout=5.0, concurrency=4, per_merchant=4)
    return lambda at=None: deliver_due(at or deps, settings)


def payment_request(method: str, currency: str, amount, callback_url: str, **fields) -> dict:
    """A create request for a card payment at a provider."""
    body = {
        "amount": amount, "currency": currency, "reference": f"order-{uuid.uuid4().hex[:12]}",
        "statementDescriptor": "PAYDESK E2E", "callbackUrl": callback_url,
        "successUrl": "https://shop.example/paid", "pendingUrl": "https://shop.example/waiting",
        "failureUrl": "https://shop.example/failed",
        "billing": {"firstName": "Ada", "lastName": "Obi", "email": "ada@example.com",
                    "customerReference": "cust-1"},
        "payment": {"paymentMethod": method},
    }
    body.update(fields)
    return body


def post_webhook(account: Account, body: bytes, headers: dict) -> requests.Response:
    """A provider's delivery to the account's webhook URL."""
    return requests.post(account.webhook_url, data=body, headers=headers, timeout=10)


# Reading what Paydesk stored


def history(deps, tx_no: str) -> list[tuple]:
    """(from, to, source, note) of every status change of the transaction, oldest first."""
    with deps.uow(write=False) as uow:
        rows = uow.conn.execute(
            select(status_history.c.from_status, status_history.c.to_status, status_history.c.source,
                   status_history.c.note)
            .join(transactions, transactions.c.id == status_history.c.transaction_id)
            .where(transactions.c.tx_no == tx_no).order_by(status_history.c.id)).all()
    return [tuple(row) for row in rows]


def outgoing(deps, tx_no: str) -> list[tuple[str, dict]]:
    """(event type, payload) of every merchant webhook of the transaction, oldest first."""
    with deps.uow(write=False) as uow:
        rows = uow.conn.execute(
            select(webhook_events.c.event_type, webhook_events.c.payload)
            .join(transactions, transactions.c.id == webhook_events.c.transaction_id)
            .where(transactions.c.tx_no == tx_no).order_by(webhook_events.c.id)).all()
    return [(row.event_type, json.loads(row.payload)) for row in rows]


def provider_events(deps, account: Account) -> list[dict]:
    """The account's received provider webhooks, oldest first, as dicts."""
    with deps.uow(write=False) as uow:
        rows = account_store.events_of(uow.conn, account.caller)
    return [dict(row._mapping) for row in reversed(rows)
            if row._mapping["provider_account_id"] == account.id]


def account_row(deps, account_id: int) -> dict:
    """The provider_accounts row as stored."""
    with deps.uow(write=False) as uow:
        return dict(uow.conn.execute(select(provider_accounts)
                                     .where(provider_accounts.c.id == account_id)).one()._mapping)


def stored(deps, tx_no: str) -> dict:
    """The transactions row as stored (a fresh read)."""
    with deps.uow(write=False) as uow:
        return dict(uow.conn.execute(select(transactions).where(transactions.c.tx_no == tx_no)).one()._mapping)


def wait_until(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll `check` until it is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.02)
