"""Webhook test fixtures: a server on databases of their own, receivers, events, a controllable clock."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from sqlalchemy import update

from app.cli import upgrade_database
from app.payments import create
from app.payments.model import Caller, Mode
from app.payments.schemas import parse_create
from app.store.tables import webhook_events
from app.util import utcnow
from app.webhooks import log
from app.webhooks.settings import ALLOWED_NETWORKS_SETTING, DeliverySettings
from app.webhooks.guard import AddressGuard, parse_networks
from tests.conftest import BACKENDS, make_app, payment_body
from tests.support.databases import create_postgres_database
from tests.support.network import LOOPBACK, connections, fake_dns  # noqa: F401 - fixtures
from tests.support.servers import ThreadedServer, free_port

from .receiver import Receiver


@pytest.fixture(scope="package", params=BACKENDS)
def server(request, tmp_path_factory):
    """Paydesk over HTTP on a database only these tests use, so no other test's events are delivered."""
    drop = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('webhooks') / 'paydesk.db'}"
    else:
        url, drop = create_postgres_database()
    upgrade_database(url)
    port = free_port()
    app = make_app(url, port)
    with ThreadedServer(app, port) as running:
        running.app = app
        running.database_url = url
        yield running
    if "paydesk.webhooks" in app.extensions:
        app.extensions["paydesk.webhooks"].close()
    app.extensions["paydesk.engine"].dispose()
    if drop:
        drop()


@pytest.fixture(autouse=True)
def nothing_left_pending(request):
    """After each test, its undelivered events stop being due, so the next test sees only its own."""
    app = request.getfixturevalue("app") if "app" in request.fixturenames else None
    yield
    if app is not None:
        deps = app.extensions["paydesk"]
        with deps.uow() as uow:
            uow.conn.execute(update(webhook_events).where(webhook_events.c.state == "pending")
                             .values(state="failed", next_attempt_at=None))
            uow.commit()


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture
def clock():
    """Starts a second ahead of real time, so events enqueued just now are due."""
    return FakeClock(utcnow() + timedelta(seconds=1))


@pytest.fixture
def deps(app):
    """The app's services with the real clock."""
    return app.extensions["paydesk"]


@pytest.fixture
def fake_deps(deps, clock):
    """The app's services on the test's clock."""
    return dataclasses.replace(deps, clock=clock)


def delivery_settings(allowed: str = LOOPBACK, **overrides) -> DeliverySettings:
    """Quick settings for tests: short time limits, a few threads."""
    values = {"guard": AddressGuard(ALLOWED_NETWORKS_SETTING, parse_networks(allowed)),
              "connect_timeout": 1.0, "timeout": 2.0, "concurrency": 8, "per_merchant": 4}
    values.update(overrides)
    return DeliverySettings(**values)


@pytest.fixture
def settings() -> DeliverySettings:
    """Delivery settings allowing loopback receivers."""
    return delivery_settings()


@pytest.fixture
def receiver():
    """A receiver answering 204."""
    with Receiver() as running:
        yield running


def enqueue_events(deps, merchant_id: int, url: str, count: int = 1,
                   mode: Mode = Mode.SANDBOX) -> list[str]:
    """A payment with callbackUrl `url` and `count` outbox events for it; returns their webhook ids."""
    caller = Caller(merchant_id, mode, "test")
    tx = create.create_transaction(deps, caller, parse_create(payment_body(callbackUrl=url)))
    with deps.uow() as uow:
        for _ in range(count):
            uow.enqueue_webhook(tx)
        rows = uow.conn.execute(
            webhook_events.select().where(webhook_events.c.transaction_id == tx.id)
            .order_by(webhook_events.c.id)).all()
        uow.commit()
    return [row.webhook_id for row in rows]


def event_row(deps, webhook_id: str):
    """The outbox row of an event."""
    with deps.uow(write=False) as uow:
        return uow.conn.execute(
            webhook_events.select().where(webhook_events.c.webhook_id == webhook_id)).one()


def attempts(deps, merchant, webhook_id: str, mode: Mode = Mode.SANDBOX) -> list[log.Attempt]:
    """The logged attempts of one of the merchant's events."""
    with deps.uow(write=False) as uow:
        return log.attempts_of(uow.conn, Caller(merchant.merchant_id, mode, "test"), webhook_id)
