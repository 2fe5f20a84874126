"""Turning two-factor sign-in on or off: the secret being enrolled stays on the server (never in
the readable session cookie), and the password is asked again (the user's, or the admin's for a
reset: users cannot turn their own second factor off)."""
from __future__ import annotations

import json
import re

import pyotp
import pytest
from sqlalchemy import select

from app.auth.throttle import PER_ACCOUNT_FROM_ADDRESS
from app.store.tables import audit_log, totp_enrolments, users
from tests.hostile.conftest import csrf_token_of, own_address

from .conftest import PASSWORD, add_user

WRONG_PASSWORD = "Your current password is not correct."
TOO_MANY = "Too many failed sign-in attempts. Wait 15 minutes and try again."
_SECRET = re.compile(r'id="totp-secret">([A-Z2-7]+)<')


def signed_in(app, email: str, address: str | None = None):
    """A Flask test client of the user, signed in from an address of its own."""
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address or own_address()
    token = csrf_token_of(client.get("/login"))
    assert client.post("/login", data={"email": email, "password": PASSWORD,
                                       "csrf_token": token}).status_code == 303
    return client


def enrolment_page(client) -> tuple[str, str]:
    """The secret the enrolment page shows, and its form's CSRF token."""
    page = client.get("/account/two-factor")
    assert page.status_code == 200
    return _SECRET.search(page.get_data(as_text=True)).group(1), csrf_token_of(page)


def second_factor_and_audit(app, email: str) -> tuple:
    with app.extensions["paydesk"].uow(write=False) as uow:
        user_id, secret = uow.conn.execute(select(users.c.id, users.c.totp_secret)
                                           .where(users.c.email == email)).one()
        actions = list(uow.conn.execute(select(audit_log.c.action).where(
            audit_log.c.target == email).order_by(audit_log.c.id)).scalars())
    return secret, actions


def test_the_secret_being_enrolled_is_kept_on_the_server_not_in_the_cookie(app, merchant):
    email = add_user(app, merchant.merchant_id, "support")
    client = signed_in(app, email)
    secret, _token = enrolment_page(client)
    cookie = client.get_cookie("session").value
    session = app.session_interface.get_signing_serializer(app).loads(cookie)
    assert secret not in json.dumps(session)
    with app.extensions["paydesk"].uow(write=False) as uow:
        sealed = uow.conn.execute(select(totp_enrolments.c.sealed_secret).join(
            users, users.c.id == totp_enrolments.c.user_id).where(users.c.email == email)).scalar_one()
    assert secret not in sealed
    assert app.extensions["paydesk"].providers.box.open(sealed) == secret
    # The same secret in another session of the user (their phone may have scanned it already).
    assert enrolment_page(signed_in(app, email))[0] == secret


@pytest.mark.parametrize("password,error", [
    ("", "Enter your password"),
    ("not my password", WRONG_PASSWORD),
])
def test_turning_two_factor_on_needs_the_password(app, merchant, password, error):
    email = add_user(app, merchant.merchant_id, "support")
    client = signed_in(app, email)
    secret, token = enrolment_page(client)
    refused = client.post("/account/two-factor", data={
        "current_password": password, "code": pyotp.TOTP(secret).now(), "csrf_token": token})
    assert refused.status_code == 422 and error in refused.get_data(as_text=True)
    assert second_factor_and_audit(app, email) == (None, [])
    done = client.post("/account/two-factor", data={
        "current_password": PASSWORD, "code": pyotp.TOTP(secret).now(), "csrf_token": token})
    assert done.status_code == 200 and "Recovery codes" in done.get_data(as_text=True)
    sealed, actions = second_factor_and_audit(app, email)
    assert sealed is not None and actions == ["user.two_factor_enable"]


def test_wrong_passwords_on_the_enrolment_form_count_as_failed_sign_ins(app, merchant):
    email, address = add_user(app, merchant.merchant_id, "support"), own_address()
    client = signed_in(app, email, address)
    secret, token = enrolment_page(client)
    for _ in range(PER_ACCOUNT_FROM_ADDRESS):
        wrong = client.post("/account/two-factor", data={
            "current_password": "a guess", "code": pyotp.TOTP(secret).now(), "csrf_token": token})
        assert wrong.status_code == 422
    refused = client.post("/account/two-factor", data={
        "current_password": PASSWORD, "code": pyotp.TOTP(secret).now(), "csrf_token": token})
    assert refused.status_code == 429 and TOO_MANY in refused.get_data(as_text=True)
    assert second_factor_and_audit(app, email) == (None, [])
    other_browser = app.test_client()
    other_browser.environ_base["REMOTE_ADDR"] = address
    login = other_browser.post("/login", data={"email": email, "password": PASSWORD, "csrf_token":
                                               csrf_token_of(other_browser.get("/login"))})
    assert login.status_code == 429 and TOO_MANY in login.get_data(as_text=True)
    signed_in(app, email)  # from another address, the owner still signs in


@pytest.mark.parametrize("password", ["", "not my password"])
def test_an_admin_resets_a_second_factor_only_with_their_own_password(app, merchant, password):
    admin = signed_in(app, add_user(app, merchant.merchant_id, "admin"))
    email = add_user(app, merchant.merchant_id, "finance")
    member = signed_in(app, email)
    secret, token = enrolment_page(member)
    assert member.post("/account/two-factor", data={
        "current_password": PASSWORD, "code": pyotp.TOTP(secret).now(), "csrf_token": token}
    ).status_code == 200
    with app.extensions["paydesk"].uow(write=False) as uow:
        user_id = uow.conn.execute(select(users.c.id).where(users.c.email == email)).scalar_one()
    reset = f"/settings/users/{user_id}/two-factor/reset"
    token = csrf_token_of(admin.get("/settings"))
    refused = admin.post(reset, data={"current_password": password, "csrf_token": token})
    assert refused.status_code == 422 and WRONG_PASSWORD in refused.get_data(as_text=True)
    sealed, actions = second_factor_and_audit(app, email)
    assert sealed is not None and actions == ["user.two_factor_enable"]
    assert member.get("/account").status_code == 200  # still signed in
    done = admin.post(reset, data={"current_password": PASSWORD, "csrf_token": token})
    assert done.status_code == 303
    assert second_factor_and_audit(app, email) == (None, ["user.two_factor_enable",
                                                          "user.two_factor_reset"])
    assert member.get("/account").status_code == 302
