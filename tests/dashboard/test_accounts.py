"""Accounts: own password, one-time reset links and invitations, TOTP second factors, and
server-side sessions that can be ended. Each rule of issue 14 (items 1-3) has a test here."""
from __future__ import annotations

import logging
import re
import time
import uuid
from datetime import timedelta
from email import message_from_string, policy

import pyotp
import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import select, update

from app.auth.two_factor import hash_recovery_code
from app.store.merchants import create_merchant
from app.store.tables import audit_log, password_links, recovery_codes, user_sessions, users
from app.util import utcnow
from tests.support.servers import free_port

from .conftest import PASSWORD, Browserless, add_user

NEW_PASSWORD = "a fresh passphrase today"
LINK_UNUSABLE = "This link has expired or was already used. Ask your admin for a new one."
WRONG_CODE = "Incorrect or already used code."
_LINK = re.compile(r'id="revealed" class="mono" type="text" value="[^"]*(/password/[^"]+)"')
_MAILED_LINK = re.compile(r"https?://\S+(/password/\S+)")
_CODES = re.compile(r"<li>([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4})</li>")


def _deps(app):
    return app.extensions["paydesk"]


def _user_id(app, email: str) -> int:
    with _deps(app).uow(write=False) as uow:
        return uow.conn.execute(select(users.c.id).where(users.c.email == email)).scalar_one()


def _audited(app, merchant_id: int, target: str) -> list[str]:
    with _deps(app).uow(write=False) as uow:
        return list(uow.conn.execute(select(audit_log.c.action).where(
            audit_log.c.merchant_id == merchant_id, audit_log.c.target == target)
            .order_by(audit_log.c.id)).scalars())


def _signed_in(server, email: str, password: str = PASSWORD) -> Browserless:
    client = Browserless(server.url)
    assert client.login(email, password).status_code == 303
    return client


def _is_signed_in(client: Browserless) -> bool:
    response = client.get("/transactions")
    assert response.status_code in (200, 302)
    return response.status_code == 200


def _with_totp(app, email: str) -> pyotp.TOTP:
    """Give the user a second factor directly (no step used yet) and one known recovery code."""
    secret = pyotp.random_base32()
    user_id = _user_id(app, email)
    with _deps(app).uow() as uow:
        uow.conn.execute(update(users).where(users.c.id == user_id).values(
            totp_secret=_deps(app).providers.box.seal(secret), totp_last_step=None))
        uow.conn.execute(recovery_codes.insert().values(
            user_id=user_id, code_hash=hash_recovery_code("abcd-efgh-jkmn")))
        uow.commit()
    return pyotp.TOTP(secret)


def _password_step(server, email: str) -> Browserless:
    client = Browserless(server.url)
    client.get("/login")
    response = client.post("/login", {"email": email, "password": PASSWORD})
    assert response.status_code == 303 and response.headers["Location"] == "/login/code"
    client.get("/login/code")
    return client


@pytest.fixture
def admin(dashboard, merchant):
    return dashboard(merchant.merchant_id, "admin")


# -- own password ------------------------------------------------------------------------------

def test_a_wrong_current_password_changes_nothing(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    client = _signed_in(server, email)
    client.get("/account")
    response = client.post("/account/password", {"current_password": "not my password",
                                                  "new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD})
    assert response.status_code == 422
    assert "Your current password is not correct." in response.text
    assert Browserless(server.url).login(email, NEW_PASSWORD).status_code == 401
    assert "user.password_change" not in _audited(app, merchant.merchant_id, email)


@pytest.mark.parametrize("new, confirm, message", [
    ("short", "short", "Use 12 to 1024 characters"),
    ("password1234", "password1234", "This is a very common password."),
    (NEW_PASSWORD, NEW_PASSWORD + "!", "The two passwords differ"),
])
def test_new_passwords_must_be_long_uncommon_and_typed_twice(server, merchant, app, new, confirm, message):
    client = _signed_in(server, add_user(app, merchant.merchant_id, "support"))
    client.get("/account")
    response = client.post("/account/password", {"current_password": PASSWORD, "new_password": new,
                                                 "confirm": confirm})
    assert response.status_code == 422
    assert message in response.text


def test_a_password_change_keeps_this_session_and_ends_the_others(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "finance")
    here, elsewhere = _signed_in(server, email), _signed_in(server, email)
    here.get("/account")
    response = here.post("/account/password", {"current_password": PASSWORD,
                                               "new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD})
    assert response.status_code == 303 and response.headers["Location"] == "/account"
    assert _is_signed_in(here) and not _is_signed_in(elsewhere)
    assert Browserless(server.url).login(email, PASSWORD).status_code == 401
    assert Browserless(server.url).login(email, NEW_PASSWORD).status_code == 303
    assert _audited(app, merchant.merchant_id, email) == ["user.password_change"]


# -- reset links and invitations ---------------------------------------------------------------

def _reset_link(admin: Browserless, app, email: str) -> str:
    admin.get("/settings")
    response = admin.post(f"/settings/users/{_user_id(app, email)}/reset-link")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    return _LINK.search(response.text).group(1)


def _choose_password(server, link: str, password: str = NEW_PASSWORD):
    client = Browserless(server.url)
    page = client.get(link)
    if page.status_code != 200:
        return page
    return client.post(link, {"new_password": password, "confirm": password})


def test_a_reset_link_works_once_and_signs_the_user_out_everywhere(server, merchant, app, admin):
    email = add_user(app, merchant.merchant_id, "finance")
    victim_session = _signed_in(server, email)
    link = _reset_link(admin, app, email)
    done = _choose_password(server, link)
    assert done.status_code == 303 and done.headers["Location"] == "/login"
    assert not _is_signed_in(victim_session)
    assert Browserless(server.url).login(email, NEW_PASSWORD).status_code == 303
    reused = _choose_password(server, link, "another fine passphrase")
    assert reused.status_code == 404
    assert LINK_UNUSABLE in reused.text
    assert Browserless(server.url).login(email, "another fine passphrase").status_code == 401
    assert _audited(app, merchant.merchant_id, email) == ["user.reset_link", "user.password_set"]


def test_an_expired_reset_link_is_refused(server, merchant, app, admin):
    email = add_user(app, merchant.merchant_id, "support")
    link = _reset_link(admin, app, email)
    with _deps(app).uow() as uow:  # issued an hour and a second ago
        uow.conn.execute(update(password_links).where(password_links.c.user_id == _user_id(app, email))
                         .values(expires_at=utcnow() - timedelta(seconds=1)))
        uow.commit()
    response = _choose_password(server, link)
    assert response.status_code == 404
    assert LINK_UNUSABLE in response.text
    assert Browserless(server.url).login(email, PASSWORD).status_code == 303  # password unchanged


def test_reset_links_expire_in_an_hour_and_a_new_one_retires_the_old(server, merchant, app, admin):
    email = add_user(app, merchant.merchant_id, "support")
    first = _reset_link(admin, app, email)
    second = _reset_link(admin, app, email)
    with _deps(app).uow(write=False) as uow:
        created, expires = uow.conn.execute(select(password_links.c.created_at, password_links.c.expires_at)
                                            .order_by(password_links.c.id.desc()).limit(1)).one()
        stored = list(uow.conn.execute(select(password_links.c.token_hash).where(
            password_links.c.user_id == _user_id(app, email))).scalars())
    assert expires - created == timedelta(hours=1)
    assert all(first.rsplit("/", 1)[1] not in h and second.rsplit("/", 1)[1] not in h for h in stored)
    assert _choose_password(server, first).status_code == 404
    assert _choose_password(server, second).status_code == 303


def test_without_smtp_the_link_is_logged_and_shown(server, merchant, app, admin, caplog):
    email = add_user(app, merchant.merchant_id, "support")
    with caplog.at_level(logging.INFO, logger="paydesk.mail"):
        admin.get("/settings")
        response = admin.post(f"/settings/users/{_user_id(app, email)}/reset-link")
    link = _LINK.search(response.text).group(1)
    assert f"E-mail is not set up, so it was not e-mailed: pass it on to {email} yourself." in response.text
    assert any(link in record.getMessage() and email in record.getMessage() for record in caplog.records)


class _Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.rcpt_tos, envelope.content.decode()))
        return "250 OK"


@pytest.fixture
def smtp(app):
    """A local SMTP server, and the app configured to send through it for this test."""
    inbox, port = _Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    saved = {key: app.config[key] for key in ("SMTP_HOST", "SMTP_PORT", "SMTP_STARTTLS")}
    app.config.update(SMTP_HOST="127.0.0.1", SMTP_PORT=port, SMTP_STARTTLS=False)
    yield inbox
    app.config.update(saved)
    controller.stop()


def test_an_invitation_is_emailed_when_smtp_is_set_and_lets_the_user_choose_a_password(
        server, merchant, app, admin, smtp):
    email = f"invited-{merchant.merchant_id}@shop.test"
    admin.get("/settings")
    response = admin.post("/settings/users", {"email": email.upper(), "role": "support"})
    assert (response.status_code, response.headers["Location"]) == (303, "/settings#users")
    assert f"Invitation sent to {email}." in admin.get("/settings").text
    (recipients, message), = smtp.messages
    assert recipients == [email] and "Subject: You are invited to Paydesk" in message
    link = _MAILED_LINK.search(message).group(1)
    assert "expires in 7 days" in message
    for guess in ("!", "", PASSWORD):  # no password signs an invited user in
        assert Browserless(server.url).login(email, guess).status_code in (401, 422)
    assert _choose_password(server, link).status_code == 303
    assert Browserless(server.url).login(email, NEW_PASSWORD).status_code == 303
    assert _audited(app, merchant.merchant_id, email) == ["user.create", "user.invite_link",
                                                          "user.password_set"]


def _another_merchants_user(app) -> str:
    with _deps(app).uow() as uow:
        other = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    return add_user(app, other.merchant_id, "support")


def _users_with(app, email: str) -> list:
    with _deps(app).uow(write=False) as uow:
        return list(uow.conn.execute(select(users).where(users.c.email == email)).all())


def test_another_merchants_user_gets_the_answer_a_new_address_gets_and_a_notice_by_e_mail(
        server, merchant, app, admin, smtp):
    fresh, taken = f"fresh-{uuid.uuid4().hex[:8]}@shop.test", _another_merchants_user(app)
    before = _users_with(app, taken)
    admin.get("/settings")
    answers = []
    for email in (fresh, taken):
        response = admin.post("/settings/users", {"email": email.upper(), "role": "admin"})
        flashed = admin.get("/settings").text
        answers.append((response.status_code, response.headers["Location"], response.content,
                        f"Invitation sent to {email}." in flashed))
    assert answers[0] == answers[1] == (303, "/settings#users", answers[0][2], True)
    assert _users_with(app, taken) == before  # still the other merchant's, unchanged
    assert _audited(app, merchant.merchant_id, taken) == []
    invitation, notice = smtp.messages
    assert invitation[0] == [fresh] and "Subject: You are invited to Paydesk" in invitation[1]
    assert notice[0] == [taken] and "Subject: Someone tried to add you to Paydesk" in notice[1]
    text = message_from_string(notice[1], policy=policy.default).get_content()
    assert "This address already signs in to Paydesk for another merchant" in " ".join(text.split())
    assert "/password/" not in text


def test_a_user_of_the_same_merchant_is_said_to_be_one_already(server, merchant, app, admin, smtp):
    existing = add_user(app, merchant.merchant_id, "support")
    before = _users_with(app, existing)
    admin.get("/settings")
    response = admin.post("/settings/users", {"email": existing.upper(), "role": "admin"})
    assert response.status_code == 422
    assert "This e-mail is already a user of this merchant." in response.text
    assert _users_with(app, existing) == before
    assert smtp.messages == []


# -- two-factor sign-in ------------------------------------------------------------------------

def test_enrolment_shows_a_qr_code_confirms_a_code_and_shows_ten_recovery_codes_once(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    client = _signed_in(server, email)
    page = client.get("/account/two-factor")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert '<img src="data:image/svg+xml;charset=utf-8,' in page.text
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', page.text).group(1)
    wrong = client.post("/account/two-factor", {"current_password": PASSWORD,
                                                "code": "000000" if pyotp.TOTP(secret).now() != "000000"
                                                else "111111"})
    assert wrong.status_code == 422 and "That code is not right." in wrong.text
    done = client.post("/account/two-factor", {"current_password": PASSWORD,
                                               "code": pyotp.TOTP(secret).now()})
    assert done.status_code == 200 and done.headers["Cache-Control"] == "no-store"
    codes = _CODES.findall(done.text)
    assert len(set(codes)) == 10
    with _deps(app).uow(write=False) as uow:
        stored = set(uow.conn.execute(select(recovery_codes.c.code_hash).where(
            recovery_codes.c.user_id == _user_id(app, email))).scalars())
        sealed = uow.conn.execute(select(users.c.totp_secret).where(users.c.email == email)).scalar_one()
    assert stored == {hash_recovery_code(code) for code in codes}  # hashes only
    assert secret not in sealed
    assert "10 of 10 recovery codes unused" in client.get("/account").text
    assert _audited(app, merchant.merchant_id, email) == ["user.two_factor_enable"]


def test_sign_in_asks_for_the_code_and_refuses_a_wrong_one(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    totp = _with_totp(app, email)
    client = _password_step(server, email)
    assert not _is_signed_in(client)  # the password alone signs in no one
    client.get("/login/code")
    wrong = client.post("/login/code", {"code": str((int(totp.now()) + 1) % 1_000_000).zfill(6)})
    assert wrong.status_code == 401 and WRONG_CODE in wrong.text
    right = client.post("/login/code", {"code": totp.now()})
    assert right.status_code == 303 and right.headers["Location"] == "/transactions"
    assert _is_signed_in(client)


def test_a_code_is_refused_when_replayed_within_its_window(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    totp = _with_totp(app, email)
    code = totp.now()
    assert _password_step(server, email).post("/login/code", {"code": code}).status_code == 303
    replay = _password_step(server, email).post("/login/code", {"code": code})
    assert replay.status_code == 401 and WRONG_CODE in replay.text
    earlier = totp.at(time.time() - 30)  # the step before: older than the one used, so refused too
    assert _password_step(server, email).post("/login/code", {"code": earlier}).status_code == 401


def test_a_recovery_code_works_once(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    _with_totp(app, email)
    first = _password_step(server, email).post("/login/code", {"code": "ABCD EFGH JKMN"})
    assert first.status_code == 303
    again = _password_step(server, email).post("/login/code", {"code": "abcd-efgh-jkmn"})
    assert again.status_code == 401 and WRONG_CODE in again.text
    assert _audited(app, merchant.merchant_id, email) == ["user.recovery_code_use"]


def test_wrong_codes_are_rate_limited_like_passwords(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    totp = _with_totp(app, email)
    client = _password_step(server, email)
    for _ in range(5):
        assert client.post("/login/code", {"code": "abcd-abcd-abcd"}).status_code == 401
    refused = client.post("/login/code", {"code": totp.now()})
    assert refused.status_code == 429
    assert "Too many failed sign-in attempts. Wait 15 minutes and try again." in refused.text


def test_the_code_page_needs_the_password_first(server):
    client = Browserless(server.url)
    response = client.get("/login/code")
    assert response.status_code == 302 and response.headers["Location"] == "/login"


def test_a_required_second_factor_sends_users_without_one_to_enrol(server, merchant, app):
    admin_email = add_user(app, merchant.merchant_id, "admin")
    admin = _signed_in(server, admin_email)
    _with_totp(app, admin_email)  # the admin has one: only the others are sent to enrol
    admin.get("/settings")
    assert admin.post("/settings/two-factor", {"required": "1"}).status_code == 303
    email = add_user(app, merchant.merchant_id, "finance")
    client = Browserless(server.url)
    client.login(email)
    for path in ("/transactions", "/account", "/account/sessions"):
        response = client.get(path)
        assert response.status_code == 302 and response.headers["Location"] == "/account/two-factor"
    assert client.get("/account/two-factor").status_code == 200
    htmx = client.get("/transactions?q=x", headers={"HX-Request": "true"})
    assert htmx.status_code == 403 and htmx.headers["HX-Redirect"] == "/account/two-factor"
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', client.get("/account/two-factor").text).group(1)
    assert client.post("/account/two-factor", {"current_password": PASSWORD,
                                               "code": pyotp.TOTP(secret).now()}).status_code == 200
    assert client.get("/transactions").status_code == 200
    admin.get("/settings")
    assert admin.post("/settings/two-factor", {"required": "0"}).status_code == 303
    with _deps(app).uow(write=False) as uow:
        actions = list(uow.conn.execute(select(audit_log.c.action).where(
            audit_log.c.merchant_id == merchant.merchant_id, audit_log.c.action.like("merchant.%"))
            .order_by(audit_log.c.id)).scalars())
    assert actions == ["merchant.two_factor_required", "merchant.two_factor_optional"]


def test_an_admin_resets_a_second_factor_and_the_user_is_signed_out(server, merchant, app, admin):
    email = add_user(app, merchant.merchant_id, "finance")
    totp = _with_totp(app, email)
    client = _password_step(server, email)
    assert client.post("/login/code", {"code": totp.now()}).status_code == 303
    admin.get("/settings")
    assert admin.post(f"/settings/users/{_user_id(app, email)}/two-factor/reset",
                      {"current_password": PASSWORD}).status_code == 303
    assert not _is_signed_in(client)
    assert Browserless(server.url).login(email).headers["Location"] == "/overview"  # no code now (finance lands on the Overview)
    with _deps(app).uow(write=False) as uow:
        left = uow.conn.execute(select(recovery_codes.c.id).where(
            recovery_codes.c.user_id == _user_id(app, email))).all()
    assert left == []
    assert _audited(app, merchant.merchant_id, email) == ["user.two_factor_reset"]


# -- server-side sessions ----------------------------------------------------------------------

def test_a_copied_cookie_of_a_signed_out_session_no_longer_works(server, merchant, app):
    client = _signed_in(server, add_user(app, merchant.merchant_id, "support"))
    copy = Browserless(server.url)
    copy.session.cookies.update(client.session.cookies)
    assert _is_signed_in(copy)
    assert client.post("/logout").status_code == 303
    assert not _is_signed_in(copy)


def test_users_see_their_sessions_and_end_one(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    here = _signed_in(server, email)
    other = Browserless(server.url)
    other.session.headers["User-Agent"] = "Other browser 1.0"
    other.login(email)
    page = here.get("/account/sessions").text
    assert "Other browser 1.0" in page and "this session" in page and "127.0.0.1" in page
    with _deps(app).uow(write=False) as uow:
        other_id = uow.conn.execute(select(user_sessions.c.id).where(
            user_sessions.c.user_id == _user_id(app, email),
            user_sessions.c.user_agent == "Other browser 1.0")).scalar_one()
    assert here.post(f"/account/sessions/{other_id}/end").status_code == 303
    assert not _is_signed_in(other) and _is_signed_in(here)
    assert "Other browser 1.0" not in here.get("/account/sessions").text
    assert _audited(app, merchant.merchant_id, email) == ["user.session_end"]


def test_ending_this_session_signs_out(server, merchant, app):
    email = add_user(app, merchant.merchant_id, "support")
    client = _signed_in(server, email)
    page = client.get("/account/sessions").text
    session_id = re.search(r'/account/sessions/(\d+)/end', page).group(1)
    response = client.post(f"/account/sessions/{session_id}/end")
    assert response.status_code == 303 and response.headers["Location"] == "/login"
    assert not _is_signed_in(client)


def test_another_users_session_cannot_be_ended(server, merchant, app):
    victim = _signed_in(server, add_user(app, merchant.merchant_id, "support"))
    victim_page = victim.get("/account/sessions").text
    victim_session = re.search(r'/account/sessions/(\d+)/end', victim_page).group(1)
    intruder = _signed_in(server, add_user(app, merchant.merchant_id, "admin"))
    intruder.get("/account/sessions")
    assert intruder.post(f"/account/sessions/{victim_session}/end").status_code == 404
    assert _is_signed_in(victim)


def test_deactivation_ends_every_session(server, merchant, app, admin):
    email = add_user(app, merchant.merchant_id, "finance")
    _signed_in(server, email), _signed_in(server, email)
    admin.get("/settings")
    assert admin.post(f"/settings/users/{_user_id(app, email)}/active", {"active": "0"}).status_code == 303
    with _deps(app).uow(write=False) as uow:
        reasons = list(uow.conn.execute(select(user_sessions.c.end_reason).where(
            user_sessions.c.user_id == _user_id(app, email))).scalars())
    assert reasons == ["deactivated", "deactivated"]


def test_wrong_current_passwords_are_rate_limited(server, merchant, app):
    client = _signed_in(server, add_user(app, merchant.merchant_id, "support"))
    client.get("/account")
    wrong = {"current_password": "guess", "new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    for _ in range(5):
        assert client.post("/account/password", wrong).status_code == 422
    refused = client.post("/account/password", {**wrong, "current_password": PASSWORD})
    assert refused.status_code == 429
    assert "Too many wrong current passwords. Wait 15 minutes and try again." in refused.text
