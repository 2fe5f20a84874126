"""Roles: what support, finance, payouts and admin may do, refused by the server (403) otherwise.
CSRF: every form and htmx POST without a valid token is refused (400)."""
from __future__ import annotations

import uuid

import pytest

from app.store.merchants import ROLES, create_merchant

from .conftest import SANDBOX, Browserless, add_user

ALLOWED = {
    "refund": {"finance", "admin"},
    "cancel": {"finance", "admin"},
    "resend": {"finance", "admin"},
    "payout": {"payouts", "admin"},
    "settings": {"admin"},
    "overview": {"finance", "admin"},
    "approve": {"finance", "payouts", "admin"},
    "note": {"support", "finance", "payouts", "admin"},
    "batches": {"finance", "payouts", "admin"},
}
# (action, method, path): paths name nothing that exists, so an allowed role gets past the role
# check to a 404 or a form error, and a refused one gets 403 before anything is looked up.
GUARDED = [
    ("refund", "post", "/transactions/PAY-NONE/refund/review"),
    ("refund", "post", "/transactions/PAY-NONE/refund"),
    ("cancel", "post", "/transactions/PAY-NONE/cancel"),
    ("resend", "post", "/webhooks/msg_none/resend"),
    ("payout", "get", "/payouts/new"),
    ("payout", "get", "/payouts/new/destination?method=ng-bank-payout"),
    ("payout", "get", "/payouts/banks?method=ng-bank-payout&currency=NGN"),
    ("payout", "get", "/payouts/iban-bank?account_number=DE89370400440532013000"),
    ("payout", "get", "/payouts/account-name?method=ng-bank-payout&currency=NGN&bank=058"
                      "&account_number=0123456785"),
    ("payout", "post", "/payouts"),
    ("payout", "post", "/payouts/review"),
    ("settings", "get", "/settings"),
    ("settings", "get", "/developers"),
    ("settings", "get", "/developers/requests/0"),
    ("settings", "post", "/settings/tokens/0/revoke"),
    ("settings", "post", "/settings/users/0/role"),
    ("settings", "post", "/settings/users/0/active"),
    ("overview", "get", "/overview"),
    ("batches", "get", "/batches"),
    ("batches", "get", "/batches/template/payout.csv"),
    ("batches", "post", "/batches"),
    ("batches", "get", "/batches/bat_none"),
    ("batches", "post", "/batches/bat_none/run"),
    ("batches", "post", "/batches/bat_none/cancel"),
    ("batches", "get", "/batches/bat_none/results.csv"),
    ("approve", "get", "/approvals"),
    ("approve", "post", "/approvals/0/approve"),
    ("approve", "post", "/approvals/0/reject"),
    ("settings", "get", "/settings/approvals"),
    ("settings", "post", "/settings/approvals/thresholds"),
    ("settings", "post", "/settings/approvals/limits"),
    ("note", "post", "/transactions/PAY-NONE/notes"),
    ("settings", "post", "/settings/users/0/reset-link"),
    ("settings", "post", "/settings/users/0/two-factor/reset"),
    ("settings", "post", "/settings/two-factor"),
    ("settings", "post", "/settings/time-zone"),
    ("payout", "get", "/recipients"),
    ("payout", "get", "/recipients/new"),
    ("payout", "post", "/recipients"),
    ("payout", "post", "/recipients/rcp_none/archive"),
    ("payout", "get", "/recipients/rcp_none/pay"),
    ("payout", "post", "/recipients/rcp_none/pay/review"),
    ("payout", "post", "/recipients/rcp_none/pay"),
    ("payout", "post", "/transactions/POU-NONE/save-recipient"),
    ("settings", "get", "/settings/webhook-endpoints"),
    ("settings", "post", "/settings/webhook-endpoints"),
    ("settings", "get", "/settings/webhook-endpoints/we_none"),
    ("settings", "post", "/settings/webhook-endpoints/we_none"),
    ("settings", "post", "/settings/webhook-endpoints/we_none/rotate"),
    ("settings", "post", "/settings/webhook-endpoints/we_none/delete"),
    ("settings", "post", "/settings/webhook-endpoints/we_none/resend-failed"),
    ("settings", "post", "/settings/webhook-endpoints/we_none/check"),
    ("settings", "get", "/settings/webhook-endpoints/we_none/checks/chk_none"),
]
READ_FOR_EVERYONE = ["/transactions", "/transactions/export.csv", "/customer?reference=cust-1", "/webhooks", "/webhooks/inbox", "/audit",
                     "/audit/export.csv", "/account", "/account/sessions", "/account/two-factor"]
# What pages poll: every role that reads the page may (they name nothing here, so 404), no one signed out.
PROGRESS = ["/transactions/PAY-NONE/progress", "/webhooks/msg_none/progress?after=0"]
# Every POST of the dashboard; without the token none of them may do anything.
POSTS = ["/login", "/logout", "/transactions/PAY-NONE/refund/review",
         "/transactions/PAY-NONE/refund", "/transactions/PAY-NONE/cancel", "/payouts", "/payouts/review",
         "/webhooks/msg_none/resend", "/settings/tokens",
         "/settings/tokens/0/revoke", "/settings/webhook-secret", "/settings/users",
         "/settings/users/0/role", "/settings/users/0/active", "/settings/sandbox/reset",
         "/approvals/0/approve", "/approvals/0/reject", "/settings/approvals/thresholds",
         "/settings/approvals/limits", "/transactions/PAY-NONE/notes",
         "/settings/users/0/reset-link", "/settings/users/0/two-factor/reset", "/settings/two-factor",
         "/account/password", "/account/two-factor", "/account/sessions/0/end", "/login/code",
         "/password/any-token", "/recipients", "/recipients/rcp_none/archive",
         "/recipients/rcp_none/pay/review", "/recipients/rcp_none/pay", "/transactions/POU-NONE/save-recipient",
         "/settings/webhook-endpoints", "/settings/webhook-endpoints/we_none",
         "/settings/webhook-endpoints/we_none/rotate", "/settings/webhook-endpoints/we_none/delete",
         "/settings/webhook-endpoints/we_none/resend-failed", "/settings/webhook-endpoints/we_none/check",
         "/settings/time-zone", "/account/display", "/account/notifications"]


@pytest.fixture(scope="module")
def signed_in(server):
    """One signed-in session per role, for a merchant of this module."""
    deps = server.app.extensions["paydesk"]
    with deps.uow() as uow:
        created = create_merchant(uow, f"Roles {uuid.uuid4().hex[:8]}", server.app.config["BASE_URL"])
        uow.commit()
    sessions = {}
    for role in ROLES:
        client = Browserless(server.url)
        client.login(add_user(server.app, created.merchant_id, role))
        sessions[role] = client
    return sessions


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action, method, path", GUARDED)
def test_each_role_may_do_only_what_it_is_allowed(signed_in, role, action, method, path):
    client = signed_in[role]
    response = client.get(path) if method == "get" else client.post(path, {"role": "support"})
    if role in ALLOWED[action]:
        assert response.status_code != 403, response.text
    else:
        assert response.status_code == 403
        assert "Your role does not allow this action." in response.text


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action, method, path", GUARDED)
def test_each_role_may_do_only_what_it_is_allowed_in_the_sandbox_too(signed_in, role, action, method, path):
    test_each_role_may_do_only_what_it_is_allowed(signed_in, role, action, method, SANDBOX + path)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", READ_FOR_EVERYONE)
def test_every_role_reads_transactions_webhooks_and_the_audit_log(signed_in, role, path):
    assert signed_in[role].get(path).status_code == 200


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", PROGRESS)
def test_every_role_may_ask_for_progress_and_no_one_signed_out(signed_in, server, role, path):
    response = signed_in[role].get(path)
    assert response.status_code == 404
    assert "There is nothing here in this mode." in response.text
    signed_out = Browserless(server.url).get(path)
    assert signed_out.status_code == 302 and signed_out.headers["Location"].startswith("/login")


def test_links_to_what_a_role_cannot_do_are_not_shown(signed_in):
    page = signed_in["support"].get("/transactions").text
    assert "New payout" not in page and "Settings" not in page
    admin_page = signed_in["admin"].get("/transactions").text
    assert "New payout" in admin_page and "Settings" in admin_page


@pytest.mark.parametrize("path", POSTS)
def test_posts_without_a_csrf_token_are_refused(signed_in, path):
    client = signed_in["admin"]
    response = client.post(path, {"mode": "sandbox", "email": "x@y.example", "password": "whatever"},
                           csrf=False)
    assert response.status_code == 400
    forged = client.post(path, {"mode": "sandbox"}, csrf=False, headers={"X-CSRFToken": "forged"})
    assert forged.status_code == 400


@pytest.mark.parametrize("path", [path for path in POSTS if not path.startswith(("/login", "/logout", "/password/"))])
def test_sandbox_posts_without_a_csrf_token_are_refused(signed_in, path):
    test_posts_without_a_csrf_token_are_refused(signed_in, SANDBOX + path)


def test_htmx_posts_carry_the_token_in_a_header(signed_in):
    client = signed_in["admin"]
    response = client.session.post(client.base_url + "/settings/webhook-secret",
                                   headers={"X-CSRFToken": client.csrf, "HX-Request": "true"},
                                   allow_redirects=False, timeout=30)
    assert response.status_code == 200
