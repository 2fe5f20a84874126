"""Settings (admin): tokens shown once, revocation, secret rotation, users and roles, sandbox reset,
each written to the audit log."""
from __future__ import annotations

import logging
import re

import pytest
from sqlalchemy import select

from app.store.tables import audit_log, users
from tests.conftest import Api

from .conftest import PASSWORD, Browserless, add_user

_REVEALED = re.compile(r'id="revealed" class="mono" type="text" value="([^"]+)"')


@pytest.fixture
def admin(dashboard, merchant):
    return dashboard(merchant.merchant_id, "admin")


def _audit(app, merchant_id: int) -> list:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return list(uow.conn.execute(select(audit_log).where(audit_log.c.merchant_id == merchant_id)
                                     .order_by(audit_log.c.id)))


def test_a_new_token_is_shown_once_works_and_can_be_revoked(admin, server, merchant, app):
    response = admin.post("/settings/tokens", {"label": "checkout server", "scopes": ["read", "refunds"]})
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    token = _REVEALED.search(response.text).group(1)
    assert token.startswith("pd_live_")
    assert Api(server.url, token).get("/payment-methods").status_code == 200
    settings = admin.get("/settings").text
    assert token not in settings and token[:12] + "…" in settings and "checkout server" in settings
    revoke_form = r'/settings/tokens/(\d+)/revoke" data-confirm="Revoke token ' + re.escape(token[:12])
    token_id = re.search(revoke_form, settings).group(1)
    assert admin.post(f"/settings/tokens/{token_id}/revoke").status_code == 303
    assert Api(server.url, token).get("/payment-methods").status_code == 401
    actions = [(row.action, row.target) for row in _audit(app, merchant.merchant_id)]
    assert ("token.create", token[:12]) in actions and ("token.revoke", token[:12]) in actions


def test_rotating_the_secret_shows_the_new_one_once_and_keeps_the_old_for_a_day(admin, merchant, app):
    response = admin.post("/settings/webhook-secret")
    secret = _REVEALED.search(response.text).group(1)
    assert secret.startswith("whsec_") and secret != merchant.live_webhook_secret
    settings = admin.get("/settings").text
    assert secret not in settings
    assert settings.count("<strong>retires") == 1  # the old secret, still signing for 24 hours
    audited = [(r.action, r.target) for r in _audit(app, merchant.merchant_id)]
    assert ("webhook_secret.rotate", secret[:10]) in audited


def test_admins_add_users_change_roles_and_deactivate(admin, server, merchant, app, caplog):
    email = f"new-{merchant.merchant_id}@shop.test"
    with caplog.at_level(logging.INFO, logger="paydesk.mail"):
        invited = admin.post("/settings/users", {"email": email.upper(), "role": "support"})
    assert invited.status_code == 303  # the invitation is e-mailed (logged: no SMTP here), not shown
    [logged] = [r.getMessage() for r in caplog.records if email in r.getMessage()]
    link = re.search(r"(/password/\S+)", logged).group(1)
    chooser = Browserless(server.url)
    chooser.get(link)
    assert chooser.post(link, {"new_password": "twelve chars!", "confirm": "twelve chars!"}).status_code == 303
    newcomer = Browserless(server.url)
    assert newcomer.login(email, "twelve chars!").status_code == 303
    assert newcomer.get("/settings").status_code == 403
    with app.extensions["paydesk"].uow(write=False) as uow:
        user_id = uow.conn.execute(select(users.c.id).where(users.c.email == email)).scalar_one()
    assert admin.post(f"/settings/users/{user_id}/role", {"role": "admin"}).status_code == 303
    assert newcomer.get("/settings").status_code == 200  # the new role applies at once
    assert admin.post(f"/settings/users/{user_id}/active", {"active": "0"}).status_code == 303
    assert newcomer.get("/settings").status_code == 302
    actions = [(r.action, r.target) for r in _audit(app, merchant.merchant_id)]
    assert [a for a in actions if a[1] == email] == [
        ("user.create", email), ("user.invite_link", email), ("user.password_set", email),
        ("user.role", email), ("user.deactivate", email)]


@pytest.mark.parametrize("form, message", [
    ({"email": "not an address", "role": "support"}, "Enter a valid e-mail address"),
    ({"email": "a@shop.test", "role": "owner"}, "Not a valid choice"),
])
def test_new_users_are_checked(admin, form, message):
    response = admin.post("/settings/users", form)
    assert response.status_code == 422
    assert message in response.text


def test_the_last_active_admin_cannot_be_demoted_or_deactivated(server, merchant, app):
    first, second = (add_user(app, merchant.merchant_id, "admin") for _ in range(2))
    with app.extensions["paydesk"].uow(write=False) as uow:
        ids = dict(uow.conn.execute(select(users.c.email, users.c.id)
                                    .where(users.c.email.in_([first, second]))).all())
    client = Browserless(server.url)
    client.login(first, PASSWORD)
    assert client.post(f"/settings/users/{ids[second]}/role", {"role": "support"}).status_code == 303
    for path, form in (("role", {"role": "support"}), ("active", {"active": "0"})):
        assert client.post(f"/settings/users/{ids[first]}/{path}", form).status_code == 303
        assert "A merchant needs at least one active admin" in client.get("/settings").text
    assert client.get("/settings").status_code == 200  # still admin, still signed in


def test_sandbox_reset_restores_the_test_transactions(admin, sandbox, merchant, app):
    assert sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 100}).status_code == 200
    assert sandbox.status("SBX-CAPTURED")["Status"] == "Refunded"
    assert admin.post("/settings/sandbox/reset").status_code == 303
    assert sandbox.status("SBX-CAPTURED")["Status"] == "Captured"
    assert "sandbox.reset" in [r.action for r in _audit(app, merchant.merchant_id)]


def test_settings_show_the_inbox_url(admin, merchant):
    assert merchant.inbox_url in admin.get("/settings").text
