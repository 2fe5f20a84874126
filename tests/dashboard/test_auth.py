"""Sign-in: Argon2id passwords, rate limits, a new session on sign-in, cookie flags, sign-out."""
from __future__ import annotations

import uuid

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select, update

from app.store.merchants import create_merchant
from app.store.tables import users
from app.web import password_hasher
from tests.conftest import serving

from .conftest import PASSWORD, Browserless, add_user

WRONG = "Incorrect e-mail or password."


def test_sign_in_opens_the_transactions_list_with_safe_cookies(server, merchant):
    client = Browserless(server.url)
    email = add_user(server.app, merchant.merchant_id, "support")
    response = client.login(email)
    assert response.status_code == 303
    assert response.headers["Location"] == "/transactions"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # SESSION_COOKIE_SECURE=1 turns it on behind HTTPS
    assert client.get("/").headers["Location"] == "/transactions"
    assert client.get("/transactions").status_code == 200


def test_wrong_password_and_unknown_email_get_the_same_answer(server, merchant):
    email = add_user(server.app, merchant.merchant_id, "support")
    for who, password in ((email, "not the password"), (f"nobody-{uuid.uuid4().hex}@x.test", PASSWORD)):
        client = Browserless(server.url)
        client.get("/login")
        response = client.post("/login", {"email": who, "password": password})
        assert response.status_code == 401
        assert WRONG in response.text
        assert client.get("/transactions").status_code == 302


def test_failed_sign_ins_are_rate_limited_per_account(server, merchant):
    email = add_user(server.app, merchant.merchant_id, "finance")
    client = Browserless(server.url)
    client.get("/login")
    for _ in range(5):
        assert client.post("/login", {"email": email, "password": "guess"}).status_code == 401
    refused = client.post("/login", {"email": email, "password": PASSWORD})
    assert refused.status_code == 429
    assert "Too many failed sign-in attempts. Wait 15 minutes and try again." in refused.text
    other = add_user(server.app, merchant.merchant_id, "finance")
    assert Browserless(server.url).login(other).status_code == 303  # other accounts unaffected


def test_sign_in_starts_a_new_session_with_a_new_csrf_token(server, merchant):
    client = Browserless(server.url)
    client.get("/login")
    token_before = client.csrf
    cookie_before = client.session.cookies.get("session")
    client.post("/login", {"email": add_user(server.app, merchant.merchant_id, "admin"),
                           "password": PASSWORD})
    assert client.session.cookies.get("session") != cookie_before
    stale = client.session.post(server.url + "/settings/webhook-secret", data={"csrf_token": token_before},
                                allow_redirects=False, timeout=30)
    assert stale.status_code == 400
    client.get("/transactions")
    assert client.csrf != token_before
    assert client.post("/settings/webhook-secret").status_code == 200


@pytest.fixture
def standard_server(database_url):
    """Paydesk over HTTP with the production password hashing parameters (the suite's are cheaper)."""
    with serving(database_url, PASSWORD_HASH_PROFILE="standard") as running:
        yield running


def test_outdated_password_hashes_are_upgraded_on_sign_in(standard_server):
    server = standard_server
    with server.app.extensions["paydesk"].uow() as uow:
        merchant = create_merchant(uow, f"Merchant {uuid.uuid4().hex[:10]}", server.app.config["BASE_URL"])
        uow.commit()
    email = add_user(server.app, merchant.merchant_id, "support")
    weak = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash(PASSWORD)
    deps = server.app.extensions["paydesk"]
    with deps.uow() as uow:
        uow.conn.execute(update(users).where(users.c.email == email).values(password_hash=weak))
        uow.commit()
    assert Browserless(server.url).login(email).status_code == 303
    with deps.uow(write=False) as uow:
        stored, last_login = uow.conn.execute(
            select(users.c.password_hash, users.c.last_login_at).where(users.c.email == email)).one()
    assert stored != weak and stored.startswith("$argon2id$")
    assert not password_hasher(server.app).check_needs_rehash(stored)  # the production parameters
    assert last_login is not None


def test_next_goes_back_to_the_page_but_never_off_site(server, merchant):
    email = add_user(server.app, merchant.merchant_id, "support")
    client = Browserless(server.url)
    assert client.get("/webhooks").headers["Location"] == "/login?next=/webhooks"
    client.get("/login")
    response = client.post("/login?next=/webhooks", {"email": email, "password": PASSWORD})
    assert response.headers["Location"] == "/webhooks"
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        other = Browserless(server.url)
        other.get("/login")
        answer = other.post(f"/login?next={target}", {"email": email, "password": PASSWORD})
        assert answer.headers["Location"] == "/transactions"


def test_sign_out_needs_a_post_with_the_csrf_token(server, merchant):
    client = Browserless(server.url)
    client.login(add_user(server.app, merchant.merchant_id, "support"))
    assert client.get("/logout").status_code == 405
    assert client.post("/logout", csrf=False).status_code == 400
    assert client.post("/logout").headers["Location"] == "/login"
    assert client.get("/transactions").status_code == 302


def test_deactivated_users_are_signed_out_at_once(server, merchant, dashboard):
    admin = dashboard(merchant.merchant_id, "admin")
    email = add_user(server.app, merchant.merchant_id, "finance")
    victim = Browserless(server.url)
    victim.login(email)
    deps = server.app.extensions["paydesk"]
    with deps.uow(write=False) as uow:
        user_id = uow.conn.execute(select(users.c.id).where(users.c.email == email)).scalar_one()
    assert admin.post(f"/settings/users/{user_id}/active", {"active": "0"}).status_code == 303
    assert victim.get("/transactions").status_code == 302
    assert victim.login(email).status_code == 401


def test_htmx_requests_without_a_session_are_sent_to_the_login_page(server):
    response = Browserless(server.url).get("/transactions?q=x", headers={"HX-Request": "true"})
    assert response.status_code == 401
    assert response.headers["HX-Redirect"] == "/login?next=/transactions?q%3Dx"


@pytest.mark.parametrize("path", ["/", "/transactions", "/transactions/export.csv", "/transactions/PAY-1",
                                  "/payouts/new", "/webhooks", "/webhooks/inbox", "/audit", "/settings",
                                  "/account", "/account/sessions", "/account/two-factor"])
def test_every_page_needs_sign_in(server, path):
    response = Browserless(server.url).get(path)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login?next=")
