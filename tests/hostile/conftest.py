"""The hostile-input corpus: Flask test clients (fast, no sockets) on the app of the live server,
for API tokens and for a signed-in dashboard admin whose forms carry the CSRF token."""
from __future__ import annotations

import itertools
import json
import re
import uuid

import pytest
from flask.testing import FlaskClient

from app.store.merchants import create_user
from app.web import password_hasher
from tests.dashboard.conftest import PASSWORD, add_user

_CSRF_INPUT = re.compile(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"')
# Every sign-in comes from its own documentation address (RFC 5737), so the corpus's failed
# sign-ins never reach the per-address limit of the other tests' clients.
_ADDRESSES = (f"192.0.2.{i % 250 + 1}" for i in itertools.count())


def own_address() -> str:
    """A client address (IPv6 documentation prefix) for one signed-in client alone."""
    return f"2001:db8:ffff::{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}"


def fresh_address() -> dict:
    """A WSGI environ with a client address no other request has used."""
    return {"REMOTE_ADDR": next(_ADDRESSES)}


def assert_no_server_error(response, what: str) -> None:
    """Hostile input is the client's mistake: never a 5xx."""
    assert response.status_code < 500, f"{what}: {response.status_code} {response.get_data()[:300]!r}"


def assert_json_answer(response, what: str) -> None:
    """Every API refusal (4xx) is JSON, and so is every success with a body (Flask's own answer
    to OPTIONS is an empty 200). Werkzeug's routing redirects (308 to the URL with merged
    slashes) keep their own small HTML body."""
    assert_no_server_error(response, what)
    if response.status_code >= 400 or (response.status_code < 300 and response.get_data()):
        assert response.mimetype == "application/json", f"{what}: {response.status_code} {response.mimetype}"
        json.loads(response.get_data())


class SignedIn:
    """A test client of a dashboard user, with the CSRF token its forms send."""

    def __init__(self, client: FlaskClient, csrf_token: str):
        self.client = client
        self.csrf_token = csrf_token


def csrf_token_of(page) -> str:
    found = _CSRF_INPUT.search(page.get_data(as_text=True))
    assert found, "no CSRF token on the page"
    return found.group(1)


def sign_in(app, merchant_id: int, role: str) -> SignedIn:
    """A new user of the merchant with the role, signed in through the login form."""
    email = add_user(app, merchant_id, role)
    client = app.test_client()
    # Its own address: the forms that ask for the password again count wrong ones per address.
    client.environ_base["REMOTE_ADDR"] = own_address()
    token = csrf_token_of(client.get("/login"))
    response = client.post("/login", data={"email": email, "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 303, response.get_data(as_text=True)
    return SignedIn(client, csrf_token_of(client.get("/settings")))


@pytest.fixture
def admin(app, merchant) -> SignedIn:
    """A signed-in admin of the test's merchant (the corpus posts to the sandbox's URLs)."""
    return sign_in(app, merchant.merchant_id, "admin")


@pytest.fixture
def colleague_id(app, merchant) -> int:
    """Another user of the merchant (support), whose role and access the admin's forms change."""
    with app.extensions["paydesk"].uow() as uow:
        user_id = create_user(uow.conn, merchant.merchant_id, f"colleague-{merchant.merchant_id}@shop.test",
                              "support", password_hasher(app).hash(PASSWORD))
        uow.commit()
    return user_id
