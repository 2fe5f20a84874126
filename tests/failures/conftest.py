"""Apps for the failure tests: test clients (no HTTP server), errors answered rather than raised."""
from __future__ import annotations

import uuid

import pytest

from app.store.merchants import create_merchant
from tests.conftest import make_app
from tests.support.servers import free_port


@pytest.fixture
def app(sqlite_url):
    """An app whose unexpected errors become 500 answers, as in production (not raised to the test)."""
    return make_app(sqlite_url, PROPAGATE_EXCEPTIONS=False)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def sandbox_token(app) -> str:
    """The sandbox token of a new merchant."""
    with app.extensions["paydesk"].uow() as uow:
        created = create_merchant(uow, f"Merchant {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    return created.sandbox_token


@pytest.fixture
def unreachable_app():
    """An app whose PostgreSQL server does not listen: every connection attempt is refused."""
    url = f"postgresql+psycopg://paydesk@127.0.0.1:{free_port()}/paydesk"
    app = make_app(url, PROPAGATE_EXCEPTIONS=False)
    yield app
    app.extensions["paydesk.engine"].dispose()


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}
