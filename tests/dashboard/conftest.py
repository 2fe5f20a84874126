"""Dashboard test helpers: users of a merchant and signed-in HTTP sessions on the live server."""
from __future__ import annotations

import re
import uuid

import pytest
import requests
from sqlalchemy import delete

from app.store.merchants import create_user
from app.store.tables import sign_in_failures
from app.web import password_hasher

PASSWORD = "correct horse battery staple"
# Sandbox pages' URLs start with this; the sign-in pages have one URL for both modes.
SANDBOX = "/test"
_SIGN_IN_PAGES = ("/login", "/logout", "/password/")
_CSRF = re.compile(r'"X-CSRFToken": "([^"]+)"')
_SANDBOX_LINK = re.compile(r'<a href="([^"]*)" data-mode="sandbox"')


def add_user(app, merchant_id: int, role: str, password: str = PASSWORD) -> str:
    """A dashboard user of the merchant with this role; returns the e-mail."""
    email = f"{role}-{uuid.uuid4().hex[:10]}@shop.test"
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        create_user(uow.conn, merchant_id, email, role, password_hasher(app).hash(password))
        uow.commit()
    return email


class Browserless:
    """A requests session on the dashboard that keeps the CSRF token of the last page it read.
    Its dashboard paths are those of the mode it looks at (`prefix`: "" for live, SANDBOX)."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.session = requests.Session()
        self.csrf = None
        self.prefix = ""

    def url(self, path: str) -> str:
        """The full URL of a dashboard path in the client's mode (a path already in it stays as it is)."""
        if self.prefix and not path.startswith((self.prefix + "/", *_SIGN_IN_PAGES)):
            path = self.prefix + path
        return self.base_url + path

    def get(self, path: str, **kwargs) -> requests.Response:
        """GET a dashboard path (redirects not followed unless asked)."""
        kwargs.setdefault("allow_redirects", False)
        response = self.session.get(self.url(path), timeout=30, **kwargs)
        html = "text/html" in response.headers.get("Content-Type", "")
        found = _CSRF.search(response.text) if html else None
        if found:
            self.csrf = found.group(1)
        return response

    def post(self, path: str, data: dict | None = None, *, csrf: bool = True, headers=None,
             **kwargs) -> requests.Response:
        """POST a form, with the CSRF token unless csrf=False."""
        if self.csrf is None:
            self.get("/login")
        form = dict(data or {})
        if csrf:
            form["csrf_token"] = self.csrf
        kwargs.setdefault("allow_redirects", False)
        return self.session.post(self.url(path), data=form, headers=headers, timeout=30, **kwargs)

    def login(self, email: str, password: str = PASSWORD) -> requests.Response:
        """Sign in through the form; afterwards the session's CSRF token is the new one."""
        self.get("/login")
        response = self.post("/login", {"email": email, "password": password})
        self.get("/transactions")
        return response


@pytest.fixture
def dashboard(server):
    """Factory: a signed-in dashboard session for a new user of the merchant with the role."""

    def sign_in(merchant_id: int, role: str) -> Browserless:
        client = Browserless(server.url)
        response = client.login(add_user(server.app, merchant_id, role))
        assert response.status_code == 303, response.text
        return client

    return sign_in


@pytest.fixture(autouse=True)
def no_failed_sign_ins_from_the_server_s_clients(request):
    """Every test on the live server starts with no failed sign-in from 127.0.0.1, the address all
    their clients share: one test's wrong passwords never add up to another's per-address limit."""
    if "server" in request.fixturenames:
        server = request.getfixturevalue("server")
        with server.app.extensions["paydesk"].uow() as uow:
            uow.conn.execute(delete(sign_in_failures).where(sign_in_failures.c.address == "127.0.0.1"))
            uow.commit()


@pytest.fixture
def finance(dashboard, merchant) -> Browserless:
    """A finance user of the test's merchant."""
    return dashboard(merchant.merchant_id, "finance")


def switch_to_sandbox(client: Browserless) -> None:
    """Look at sandbox data from now on: follow the switch's Sandbox link from the list, as a user
    would, and use the sandbox's URLs (SANDBOX + path) afterwards."""
    link = _SANDBOX_LINK.search(client.get("/transactions").text)
    assert link and link.group(1) == SANDBOX + "/transactions"
    client.prefix = SANDBOX
    assert "Sandbox: test data only" in client.get("/transactions").text
