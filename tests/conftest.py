"""Fixtures: the app on SQLite and PostgreSQL, live HTTP servers, merchants and API clients."""
from __future__ import annotations

import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from app import create_app
from app.cli import upgrade_database
from app.config import Config
from app.store.merchants import create_merchant
from app.worker import run_round, stop_background_work
from tests.support.databases import RevisionTemplates, create_postgres_database
from tests.support.network import LOOPBACK_ALLOWED
from tests.support.servers import TEST_PASSWORD_HASH_PROFILE, ThreadedServer, free_port

BACKENDS = ["sqlite", "postgres"]
TESTS = Path(__file__).resolve().parent
# Where every test starts real processes (gunicorn, workers, a PostgreSQL cluster, Prism, Chromium,
# the benchmark's wrk): marked slow, so `make test-fast` (-m "not slow") leaves them out.
SLOW = ("faults", "scaleout", "browser", "bench/test_bench_smoke.py", "bench/test_overview_bench.py",
        "bench/test_request_log_bench_smoke.py",
        "providers/test_paystack_contract.py", "store/test_crash_recovery.py")


def pytest_collection_modifyitems(items):
    """Mark the tests under SLOW as slow."""
    for item in items:
        where = item.path.relative_to(TESTS).as_posix()
        if any(where == path or where.startswith(path + "/") for path in SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres_url():
    """A fresh PostgreSQL database for the whole run, migrated, dropped at the end."""
    url, drop = create_postgres_database()
    upgrade_database(url)
    yield url
    drop()


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory):
    """A SQLite database file for the whole run, migrated."""
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'paydesk.db'}"
    upgrade_database(url)
    return url


@pytest.fixture(scope="session")
def revision_templates(tmp_path_factory):
    """Databases at old revisions for the migration tests, each built once per test process."""
    templates = RevisionTemplates(tmp_path_factory.mktemp("revisions"))
    yield templates
    templates.drop_all()


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request):
    """Each test using this runs on SQLite and on PostgreSQL."""
    return request.getfixturevalue(f"{request.param}_url")


def make_app(database_url: str, port: int | None = None, **overrides):
    """An app on the database, its BASE_URL pointing at the port it will be served on, allowed to
    reach loopback (webhooks and providers) unless the overrides say otherwise.

    It runs as a demo (DEMO_MODE) unless told otherwise: the tests make live payments the
    simulator decides. Its passwords are hashed with the fast test parameters unless
    PASSWORD_HASH_PROFILE says otherwise."""
    base = f"http://127.0.0.1:{port}" if port else "http://paydesk.test"
    overrides.setdefault("DEMO_MODE", True)
    overrides.setdefault("PASSWORD_HASH_PROFILE", TEST_PASSWORD_HASH_PROFILE)
    config = Config(DATABASE_URL=database_url, TESTING=True, SECRET_KEY="test-secret",
                    BASE_URL=base, CHECKOUT_URL=base + "/checkout", **{**LOOPBACK_ALLOWED, **overrides})
    return create_app(config)


@contextmanager
def serving(database_url: str, **overrides):
    """Paydesk over real HTTP on the database, with make_app's settings and these overrides; the
    running server (its app as `.app`) until the block ends."""
    port = free_port()
    app = make_app(database_url, port, **overrides)
    with ThreadedServer(app, port) as running:
        running.app = app
        yield running
    app.extensions["paydesk.engine"].dispose()


@pytest.fixture(scope="session")
def server(database_url):
    """Paydesk over real HTTP on the database (one per backend for the run)."""
    with serving(database_url) as running:
        yield running


@pytest.fixture(scope="session")
def real_money_server(database_url):
    """A second server on the same database that does not run as a demo (no DEMO_MODE), as a
    production deployment: in live mode the simulator decides nothing there."""
    with serving(database_url, DEMO_MODE=False) as running:
        yield running


@pytest.fixture
def app(server):
    """The app object behind the live server."""
    return server.app


class Api:
    """A bearer-token client for /api/v1 on the live server."""

    def __init__(self, base_url: str, token: str):
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def post(self, path: str, body=None, *, data=None, headers=None) -> requests.Response:
        """POST a JSON body (or raw data) to /api/v1<path>."""
        return self.session.post(f"{self.base_url}/api/v1{path}", json=body, data=data,
                                 headers=headers, timeout=30)

    def get(self, path: str, headers=None) -> requests.Response:
        """GET /api/v1<path>."""
        return self.session.get(f"{self.base_url}/api/v1{path}", headers=headers, timeout=30)

    def status(self, tx_no: str) -> dict:
        """The status response of tx_no (asserting 200)."""
        response = self.get(f"/transactions/{tx_no}/status")
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def worker_round(app):
    """run(): one worker round on the live app (app.worker.run_round); the delivery and provider
    call threads it starts are stopped after the test."""
    yield lambda: run_round(app)
    stop_background_work(app)


@pytest.fixture
def merchant(app):
    """A new merchant for this test alone: its tokens, secrets and inbox."""
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        created = create_merchant(uow, f"Merchant {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    return created


@pytest.fixture
def simulator_behind_a_network(app):
    """The live app's simulator as a provider behind a network: a request commits the Pending
    transaction and hands the call to a worker (the simulator rehearsing a slow provider, 1 ms a
    call, as SIMULATOR_LATENCY does). Without it the simulator answers inside the request, once
    the Pending refund is committed."""
    simulator = app.extensions["paydesk"].providers.simulators.by_name["simulator"]
    simulator.latency = 0.001
    yield simulator
    simulator.latency = 0.0


@pytest.fixture
def sandbox(server, merchant) -> Api:
    """API client with the merchant's sandbox token."""
    return Api(server.url, merchant.sandbox_token)


@pytest.fixture
def live(server, merchant) -> Api:
    """API client with the merchant's live token."""
    return Api(server.url, merchant.live_token)


def payment_body(**overrides) -> dict:
    """A valid create request for a card payment; overrides replace top-level fields."""
    body = {
        "amount": 100,
        "currency": "EUR",
        "reference": f"order-{uuid.uuid4().hex[:12]}",
        "statementDescriptor": "PAYDESK TEST",
        "callbackUrl": "https://merchant.example/webhooks",
        "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                    "customerReference": "cust-1"},
        "payment": {"paymentMethod": "card"},
    }
    body.update(overrides)
    return body


@pytest.fixture
def captured_payment(sandbox, app):
    """Factory: a sandbox card payment of the given amount, moved to Captured; returns its txNo."""

    def make(amount=100, currency="EUR", method="card") -> str:
        created = sandbox.post("/transactions", payment_body(amount=amount, currency=currency,
                                                             payment={"paymentMethod": method}))
        assert created.status_code == 200, created.text
        tx_no = created.json()["transactionId"]
        moved = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
        assert moved.status_code == 200, moved.text
        return tx_no

    return make


def connect_paystack(app, merchant_id: int, mode=None) -> int:
    """The merchant's Paystack account in live mode (or `mode`), at an address never called: its
    bank lists are due for a worker and none is stored yet. Returns the account's id."""
    from app.payments.model import Caller, Mode
    from app.providers import accounts
    from app.store.encryption import SecretBox
    from app.util import utcnow

    mode = mode or Mode.LIVE
    prefix = "sk_live_" if mode is Mode.LIVE else "sk_test_"
    connected = accounts.connect(
        app.extensions["paydesk"].uow, SecretBox(app.config["PAYDESK_ENCRYPTION_KEY"]),
        Caller(merchant_id, mode, "admin@tests.example"), "paystack", secret_key=prefix + "a" * 40,
        webhook_secret=None, base_url="https://paystack.invalid", paydesk_url=app.config["BASE_URL"],
        now=utcnow())
    return connected.provider_account_id
