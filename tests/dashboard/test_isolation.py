"""Users of merchant A never see or touch merchant B's data, over every dashboard URL, live
(/path) and sandbox (/test/path)."""
from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
import requests
from sqlalchemy import select

from app.payments import recipients
from app.payments.model import Caller, Mode
from app.payments.notes import add_note
from app.providers.accounts import connect
from app.store import notifications as notification_store
from app.store import provider_accounts as provider_store
from app.store.merchants import create_merchant
from app.api.request_log import flush_request_log
from app.store.tables import api_tokens, audit_log, merchants, request_log, transaction_notes, users, webhook_events
from app.util import utcnow
from app.webhooks import endpoints as webhook_endpoints
from app.webhooks import receiver_check
from tests.conftest import Api, payment_body

from .conftest import SANDBOX, Browserless, add_user
from .test_payouts import nuban


@dataclass
class OtherMerchant:
    """Merchant B with something of every kind: payments, a refund, a payout, webhooks, an inbox
    message, a token, a user, audit entries, a sandbox payment, a provider account and its event."""

    api: Api
    sandbox: Api
    payment: str
    reference: str
    refund: str
    payout: str
    sandbox_payment: str
    webhook_id: str
    inbox_marker: str
    token_id: int
    token_prefix: str
    user_id: int
    user_email: str
    provider_account_id: int
    provider_webhook_key: str
    provider_event_marker: str
    note_marker: str = ""  # a note on B's live payment
    merchant_id: int = 0
    app: object = None
    dispute_no: str = ""  # a dispute of B's sandbox (made by _b_dispute when first needed)
    recipient_id: str = ""  # a saved recipient of B's live mode (made by _b_recipient when first needed)
    endpoint_ids: dict | None = None  # B's webhook endpoint per mode (made by _b_endpoint when first needed)


def _provider_account(app, merchant_id: int) -> tuple[int, str, str]:
    """A connected Paystack account of the merchant (live) with one received event: its id,
    webhook key and a marker in the event."""
    deps = app.extensions["paydesk"]
    caller = Caller(merchant_id, Mode.LIVE, "test")
    connected = connect(deps.uow, deps.providers.box, caller, "paystack",
                        secret_key=f"sk_live_{uuid.uuid4().hex}", webhook_secret=None,
                        base_url="http://127.0.0.1:9", paydesk_url=app.config["BASE_URL"], now=utcnow())
    marker = f"provider-marker-{uuid.uuid4().hex}"
    with deps.uow() as uow:
        account = provider_store.caller_account(uow.conn, caller, connected.provider_account_id)
        provider_store.record_event(uow.conn, account, received_at=utcnow(), body=marker,
                                    body_sha256=hashlib.sha256(marker.encode()).hexdigest(),
                                    signature_valid=True, result="ignored", event_type=marker)
        uow.commit()
    return account.id, account.webhook_key, marker


def _provider_connected(other: "OtherMerchant") -> bool:
    """B's Paystack account still serves B's live methods."""
    return "paystack-card" in {m["id"] for m in other.api.get("/payment-methods").json()}


def _captured(api: Api, reference: str) -> str:
    created = api.post("/transactions", payment_body(reference=reference))
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


@pytest.fixture(scope="module")
def other(server) -> OtherMerchant:
    """Made once per backend: the checks only read B, or change what they then check themselves."""
    app = server.app
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        created = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    live, sandbox = Api(server.url, created.live_token), Api(server.url, created.sandbox_token)
    reference = f"secret-order-{uuid.uuid4().hex[:8]}"
    # Live payments cannot be moved by the sandbox helper: capture through the hosted checkout.
    payment = _captured(live, reference)
    checkout = requests.Session()
    page = checkout.get(f"{server.url}/checkout/{payment}", timeout=30).text
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    approved = checkout.post(f"{server.url}/checkout/{payment}",
                             data={"csrf_token": token, "decision": "approve"}, timeout=30)
    assert approved.status_code == 200
    refund = live.post("/transactions/refund", {"txNo": payment, "amount": 10})
    assert refund.status_code == 200, refund.text
    payout = live.post("/transactions", payment_body(
        transactionAction="PAYMENT", currency="KES",
        payment={"paymentMethod": "mobile-money-payout", "holder": "B Holder",
                 "accountNumber": "+254712345678"}))
    assert payout.status_code == 200, payout.text
    sandbox_payment = _captured(sandbox, f"sandbox-{reference}")
    marker = f"inbox-marker-{uuid.uuid4().hex}"
    requests.post(created.inbox_url, data=marker, timeout=30)
    email = add_user(app, created.merchant_id, "admin")
    with deps.uow(write=False) as uow:
        webhook_id = uow.conn.execute(select(webhook_events.c.webhook_id).where(
            webhook_events.c.merchant_id == created.merchant_id).limit(1)).scalar_one()
        token_id, prefix = uow.conn.execute(select(api_tokens.c.id, api_tokens.c.prefix).where(
            api_tokens.c.merchant_id == created.merchant_id, api_tokens.c.mode == "live")).one()
        user_id = uow.conn.execute(select(users.c.id).where(users.c.email == email)).scalar_one()
    note_marker = f"note-marker-{uuid.uuid4().hex}"
    add_note(deps, Caller(created.merchant_id, Mode.LIVE, email), payment, note_marker)
    return OtherMerchant(live, sandbox, payment, reference, refund.json()["refundTxNo"],
                         payout.json()["transactionId"], sandbox_payment, webhook_id, marker,
                         token_id, prefix, user_id, email,
                         *_provider_account(app, created.merchant_id), note_marker=note_marker,
                         merchant_id=created.merchant_id, app=app)


def _never_shows(response, other: OtherMerchant, typed: str = "") -> None:
    """Nothing of B in the answer (except what A typed, which the page repeats)."""
    assert response.status_code == 200, response.text
    for secret in (other.payment, other.reference, other.refund, other.payout, other.webhook_id,
                   other.inbox_marker, other.token_prefix, other.user_email, other.sandbox_payment,
                   other.provider_webhook_key, other.provider_event_marker, other.note_marker):
        if secret != typed:
            assert secret not in response.text


def _not_found(response) -> None:
    assert response.status_code == 404
    assert "There is nothing here in this mode." in response.text
    assert "open it there" not in response.text  # the other mode's link is for one's own merchant only


def _payment_untouched(other: OtherMerchant) -> None:
    status = other.api.status(other.payment)
    assert status["Status"] == "Captured"


# Endpoint -> what merchant A's admin does with merchant B's identifiers, and what must hold.
def check_home(a, other):
    assert a.get("/").headers["Location"] == a.prefix + "/overview"  # an admin lands on the Overview


def check_overview(a, other):
    # B has a captured payment, a refund and a payout today (live) and a payment in its sandbox.
    # A has nothing live, and in its sandbox only its own fixtures: five Captured 100.00 EUR
    # payments and one Declined.
    for query in ("", "?days=7", "?days=90"):
        response = a.get("/overview" + query)
        _never_shows(response, other)
        if a.prefix == SANDBOX:
            assert re.search(r'scope="row">Captured</th><td class="num">.*?500\.00.*?</td>'
                             r'<td class="num">5</td>', response.text)
        else:
            assert "Nothing in this period" in response.text


def check_transactions(a, other):
    for query in ("", "?kind=refund", "?kind=payout"):
        _never_shows(a.get("/transactions" + query), other)
    for typed in (other.reference, other.payment, other.payout, other.refund):
        response = a.get(f"/transactions?q={typed}")
        _never_shows(response, other, typed)
        assert "No transactions" in response.text


def check_export(a, other):
    for query in ("", f"?q={other.reference}", f"?q={other.payment}"):
        _never_shows(a.get("/transactions/export.csv" + query), other)  # CSV never repeats the query
    assert a.get(f"/transactions/export.csv?q={other.reference}").text.count("\n") == 1  # header only


def check_customer(a, other):
    # B's customer, with a reference and an e-mail of its own: A's page of them is empty.
    marker = uuid.uuid4().hex[:10]
    billing = {"firstName": "B", "lastName": "Customer", "email": f"b-{marker}@b.example",
               "customerReference": f"b-customer-{marker}"}
    for api in (other.api, other.sandbox):
        created = api.post("/transactions", payment_body(billing=billing))
        assert created.status_code == 200, created.text
        b_tx_no = created.json()["transactionId"]
        for query in (f"?reference=b-customer-{marker}", f"?email=B-{marker}@b.example", "?reference=cust-1",
                      "?email=ada@example.com"):
            response = a.get("/customer" + query)
            _never_shows(response, other)
            assert b_tx_no not in response.text and "B Customer" not in response.text
        assert "No transactions of this customer" in a.get(f"/customer?reference=b-customer-{marker}").text


def check_transaction(a, other):
    for tx_no in (other.payment, other.refund, other.payout, other.sandbox_payment):
        _not_found(a.get(f"/transactions/{tx_no}"))


def check_transaction_refunds(a, other):
    for tx_no in (other.payment, other.sandbox_payment):
        _not_found(a.get(f"/transactions/{tx_no}/refunds"))


def check_transaction_progress(a, other):
    for tx_no in (other.payment, other.refund, other.payout, other.sandbox_payment):
        _not_found(a.get(f"/transactions/{tx_no}/progress"))


def check_review_refund(a, other):
    _not_found(a.post(f"/transactions/{other.payment}/refund/review", {"amount": "5.00"}))


def check_refund(a, other):
    _not_found(a.post(f"/transactions/{other.payment}/refund", {"amount": "5.00"}))
    _payment_untouched(other)


def check_add_transaction_note(a, other):
    for tx_no in (other.payment, other.refund, other.payout, other.sandbox_payment):
        _not_found(a.post(f"/transactions/{tx_no}/notes", {"body": "A's note"}))
        _not_found(a.post(f"/transactions/{tx_no}/notes", {"body": "A's note"},
                          headers={"HX-Request": "true"}))
    deps = other.app.extensions["paydesk"]
    with deps.uow(write=False) as uow:
        bodies = uow.conn.execute(select(transaction_notes.c.body).where(
            transaction_notes.c.merchant_id == other.merchant_id)).scalars().all()
    assert bodies == [other.note_marker]


def check_cancel_payment(a, other):
    for tx_no in (other.payment, other.payout, other.sandbox_payment):
        _not_found(a.post(f"/transactions/{tx_no}/cancel", {"step": "confirm"}))
    _payment_untouched(other)


def check_new_payout(a, other):
    _never_shows(a.get("/payouts/new"), other)


def check_payout_destination(a, other):
    _never_shows(a.get("/payouts/new/destination?method=ng-bank-payout"), other)


def check_payout_banks(a, other):
    _never_shows(a.get("/payouts/banks?method=ng-bank-payout&currency=NGN"), other)


def check_iban_bank(a, other):
    _never_shows(a.get("/payouts/iban-bank?account_number=DE89370400440532013000"), other)


def check_account_name(a, other):
    # Methods are the signed-in merchant's: another merchant's Paystack payout method names nothing.
    response = a.get("/payouts/account-name?method=paystack-bank-payout&currency=NGN&bank=058"
                     "&account_number=0123456785")
    assert response.status_code == 200 and response.text.strip() == ""
    _never_shows(a.get("/payouts/account-name?method=ng-bank-payout&currency=NGN&bank=058"
                       "&account_number=0123456785"), other)


def check_create_payout(a, other):
    # A payout is always created for the signed-in user's merchant: nothing of B is named in it.
    response = a.post("/payouts", {"method": "mobile-money-payout", "currency": "KES", "amount": "5",
                                   "reference": f"a-{uuid.uuid4().hex[:8]}", "statement_descriptor": "A",
                                   "callback_url": "https://a.example/h", "holder": "A",
                                   "account_number": "+254712345678", "first_name": "A",
                                   "last_name": "B", "email": "a@example.com", "customer_reference": "c"})
    assert response.status_code == 303
    tx_no = response.headers["Location"].rsplit("/", 1)[1]
    assert other.api.get(f"/transactions/{tx_no}/status").status_code == 404
    assert other.sandbox.get(f"/transactions/{tx_no}/status").status_code == 404


def check_review_payout(a, other):
    # A payout is always reviewed for the signed-in user's merchant: B's reference is free for A.
    response = a.post("/payouts/review", {"method": "mobile-money-payout", "currency": "KES", "amount": "5",
                                          "reference": other.reference, "statement_descriptor": "A",
                                          "callback_url": "https://a.example/h", "holder": "A",
                                          "account_number": "+254712345678", "first_name": "A",
                                          "last_name": "B", "email": "a@example.com", "customer_reference": "c"})
    _never_shows(response, other, other.reference)
    assert "Confirm payout" in response.text


def check_webhook_progress(a, other):
    _not_found(a.get(f"/webhooks/{other.webhook_id}/progress?after=0"))


def check_webhooks(a, other):
    _never_shows(a.get("/webhooks"), other)


def check_resend_webhook(a, other):
    _not_found(a.post(f"/webhooks/{other.webhook_id}/resend"))


def check_inbox(a, other):
    _never_shows(a.get("/webhooks/inbox"), other)


def check_audit(a, other):
    _never_shows(a.get("/audit"), other)
    check_audit_filtered(a, other)


def check_audit_filtered(a, other):
    for query in (f"?tx_no={other.payment}", f"?tx_no={other.refund}", f"?user={other.user_email}",
                  "?action=refund.create", "?user=api:"):
        _never_shows(a.get("/audit" + query), other, query.split("=", 1)[1])


def check_export_audit(a, other):
    for query in ("", f"?tx_no={other.payment}", "?action=refund.create", "?user=api:"):
        _never_shows(a.get("/audit/export.csv" + query), other)  # CSV never repeats the query
    assert a.get(f"/audit/export.csv?tx_no={other.payment}").text.count("\n") == 1  # header only


def check_settings(a, other):
    _never_shows(a.get("/settings"), other)


def _b_logged_request(other) -> int:
    """B's request about its live payment, written to the log; its row's id."""
    assert other.api.get(f"/transactions/{other.payment}/status").status_code == 200
    flush_request_log(other.app)
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(request_log.c.id).where(
            request_log.c.merchant_id == other.merchant_id).order_by(request_log.c.id.desc())).scalar()


def check_developers(a, other):
    _b_logged_request(other)
    for query in ("", f"?tx={other.payment}", f"?token={other.token_id}", "?status=200", "?path=status"):
        _never_shows(a.get("/developers" + query), other, query.split("=", 1)[-1])


def check_developer_request(a, other):
    _not_found(a.get(f"/developers/requests/{_b_logged_request(other)}"))


def check_create_token(a, other):
    response = a.post("/settings/tokens", {"label": "a token", "scopes": "read"})
    assert response.status_code == 200
    assert other.token_prefix not in response.text


def check_revoke(a, other):
    _not_found(a.post(f"/settings/tokens/{other.token_id}/revoke"))
    assert other.api.get("/payment-methods").status_code == 200


def check_rotate_secret(a, other):
    assert a.post("/settings/webhook-secret").status_code == 200


def check_add_user(a, other):
    response = a.post("/settings/users", {"email": other.user_email, "role": "admin",
                                          "password": "long enough password"})
    # What a new address gets: A cannot tell that B has this user, and B's user stays B's.
    assert (response.status_code, response.headers["Location"]) == (303, f"{a.prefix}/settings#users")
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        owners = uow.conn.execute(select(users.c.merchant_id, users.c.role)
                                  .where(users.c.email == other.user_email)).all()
    assert [tuple(owner) for owner in owners] == [(other.merchant_id, "admin")]


def check_change_role(a, other):
    _not_found(a.post(f"/settings/users/{other.user_id}/role", {"role": "support"}))


def check_set_active(a, other):
    _not_found(a.post(f"/settings/users/{other.user_id}/active", {"active": "0"}))


def check_reset_sandbox(a, other):
    assert other.sandbox.post("/sandbox/reset").status_code == 200  # run once per mode on the same B
    refunded = other.sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 100})
    assert refunded.status_code == 200
    assert a.post("/settings/sandbox/reset").status_code == 303
    assert other.sandbox.status("SBX-CAPTURED")["Status"] == "Refunded"


def check_providers(a, other):
    _never_shows(a.get("/settings/providers"), other)


def check_connect_provider(a, other):
    # An account is always connected for the signed-in user's merchant: B's stays as it was.
    key = "sk_test_a0123456789" if a.prefix == SANDBOX else "sk_live_a0123456789"  # each mode's own
    response = a.post("/settings/providers", {"provider": "paystack", "secret_key": key,
                                              "webhook_secret": "", "base_url": ""})
    _never_shows(response, other)
    assert _provider_connected(other)


def check_test_provider_connection(a, other):
    path = f"/settings/providers/{other.provider_account_id}/test"
    _not_found(a.post(path))
    _not_found(a.post(path, headers={"HX-Request": "true"}))


def check_provider_connection_test(a, other):
    path = f"/settings/providers/{other.provider_account_id}/test"
    _not_found(a.get(path))
    _not_found(a.get(path, headers={"HX-Request": "true"}))


def check_confirm_disconnect_provider(a, other):
    _not_found(a.get(f"/settings/providers/{other.provider_account_id}/disconnect"))


def check_disconnect_provider(a, other):
    _not_found(a.post(f"/settings/providers/{other.provider_account_id}/disconnect"))
    assert _provider_connected(other)


def check_provider_events(a, other):
    _never_shows(a.get("/webhooks/providers"), other)


def _b_approval(other: OtherMerchant) -> tuple["Browserless", str]:
    """B's admin signed in, and a refund request of B's awaiting approval (made once, through B's
    own dashboard: a threshold of 5.00 EUR and a refund of 6.00)."""
    if not hasattr(other, "approval_id"):
        b = Browserless(other.api.base_url)
        assert b.login(other.user_email).status_code == 303
        b.get("/settings/approvals")
        assert b.post("/settings/approvals/thresholds", {"currency": "EUR", "amount": "5"}).status_code == 303
        b.post(f"/transactions/{other.payment}/refund", {"amount": "6.00", "request_key": "b-request"})
        listed = b.get("/approvals").text
        other.approval_id = re.search(r"/approvals/(\d+)/reject", listed).group(1)
        other.b_admin = b
    return other.b_admin, other.approval_id


def _b_request_awaits(other: OtherMerchant) -> None:
    b, approval_id = _b_approval(other)
    assert f"/approvals/{approval_id}/reject" in b.get("/approvals").text  # B may still withdraw it


def check_approvals_list(a, other):
    _b_approval(other)
    page = a.get("/approvals")
    _never_shows(page, other)
    # B's request is counted for no one of A (the menu's count, the other mode's notice).
    assert 'class="nav-count"' not in page.text and "awaiting-elsewhere" not in page.text


def check_approve_request(a, other):
    _, approval_id = _b_approval(other)
    _not_found(a.post(f"/approvals/{approval_id}/approve"))
    _b_request_awaits(other)
    _payment_untouched(other)


def check_reject_request(a, other):
    _, approval_id = _b_approval(other)
    _not_found(a.post(f"/approvals/{approval_id}/reject"))
    _b_request_awaits(other)


def check_approval_settings(a, other):
    _b_approval(other)
    _never_shows(a.get("/settings/approvals"), other)


def check_set_approval_threshold(a, other):
    b, _ = _b_approval(other)
    assert a.post("/settings/approvals/thresholds", {"currency": "EUR", "amount": "777"}).status_code == 303
    page = b.get("/settings/approvals").text
    assert "5.00" in page and "777" not in page


def check_set_user_limits(a, other):
    _not_found(a.post("/settings/approvals/limits", {"user_id": str(other.user_id), "currency": "EUR",
                                                     "max_refund": "1", "max_payout": "1"}))


def check_password_reset_link(a, other):
    _not_found(a.post(f"/settings/users/{other.user_id}/reset-link"))


def check_reset_two_factor(a, other):
    _not_found(a.post(f"/settings/users/{other.user_id}/two-factor/reset"))


def check_require_two_factor(a, other):
    # The rule is always the signed-in user's merchant's: B's stays optional.
    assert a.post("/settings/two-factor", {"required": "1"}).status_code == 303
    b = Browserless(a.base_url)
    b.login(other.user_email)
    assert b.get("/transactions").status_code == 200  # not sent to enrol


def check_account(a, other):
    _never_shows(a.get("/account"), other)


def check_quick_search(a, other):
    for typed in (other.reference, other.payment, other.sandbox_payment):
        found = a.get(f"/search?q={typed}", headers={"HX-Request": "true"})
        _never_shows(found, other, typed)
        assert 'data-href="' in found.text and "No transaction matches" in found.text


def check_save_notifications(a, other):
    a.get("/account")
    assert a.post("/account/notifications", {"delivery-money_failed": "immediate"}).status_code == 303
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        assert notification_store.choices_of(uow.conn, other.user_id) == {}


def check_change_password(a, other):
    response = a.post("/account/password", {"current_password": "wrong", "new_password": "x",
                                            "confirm": "x"})
    assert response.status_code == 422
    _never_shows_in(response, other)


def check_two_factor(a, other):
    _never_shows(a.get("/account/two-factor"), other)


def check_enable_two_factor(a, other):
    a.get("/account/two-factor")
    response = a.post("/account/two-factor", {"code": "000000"})
    assert response.status_code in (200, 422)
    _never_shows_in(response, other)


def check_account_sessions(a, other):
    _never_shows(a.get("/account/sessions"), other)


def check_end_session(a, other):
    b = Browserless(a.base_url)
    b.login(other.user_email)
    with_id = b.get("/account/sessions").text
    session_id = with_id.split("/account/sessions/")[1].split("/end")[0]
    _not_found(a.post(f"/account/sessions/{session_id}/end"))
    assert b.get("/transactions").status_code == 200  # B's user is still signed in


def check_set_merchant_time_zone(a, other):
    # The zone is always the signed-in admin's merchant's: B's stays UTC.
    assert a.post("/settings/time-zone", {"time_zone": "Asia/Tokyo"}).status_code == 303
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        assert uow.conn.execute(select(merchants.c.time_zone).where(
            merchants.c.id == other.merchant_id)).scalar_one() == "UTC"


def check_change_display(a, other):
    assert a.post("/account/display", {"locale": "de-DE", "time_zone": "Asia/Tokyo"}).status_code == 303
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        assert uow.conn.execute(select(users.c.locale, users.c.time_zone).where(
            users.c.id == other.user_id)).one() == (None, None)


def check_login_code(a, other):
    assert a.get("/login/code").status_code == 302  # signed in already: off to the list


def check_set_password(a, other):
    response = a.get("/password/not-a-link-of-anyone")
    assert response.status_code == 404
    assert "This link has expired or was already used." in response.text


def _never_shows_in(response, other: OtherMerchant) -> None:
    """Nothing of B in a form's error answer."""
    for secret in (other.user_email, other.token_prefix, other.payment):
        assert secret not in response.text


def check_login(a, other):
    assert a.get("/login").status_code == 302  # signed in already: off to the list


def check_logout(a, other):
    assert a.post("/logout").status_code == 303
    assert a.get("/transactions").status_code == 302


def _other_settlement(other: OtherMerchant) -> str:
    """B's sandbox settlement of today (the simulator's daily settlement): its id."""
    ran = other.sandbox.post("/sandbox/settlements/run")
    assert ran.status_code == 200, ran.text
    return ran.json()["settlements"][-1]["id"]


def check_reconciliation(a, other):
    settlement_id = _other_settlement(other)
    response = a.get("/reconciliation")
    _never_shows(response, other)
    assert settlement_id not in response.text


def check_settlement(a, other):
    _not_found(a.get(f"/reconciliation/{_other_settlement(other)}"))


def check_export_settlement(a, other):
    _not_found(a.get(f"/reconciliation/{_other_settlement(other)}/export.csv"))


CHECKS = {
    "dashboard.home": check_home,
    "dashboard.overview": check_overview,
    "dashboard.transactions": check_transactions,
    "dashboard.export_transactions": check_export,
    "dashboard.transaction": check_transaction,
    "dashboard.customer": check_customer,
    "dashboard.transaction_refunds": check_transaction_refunds,
    "dashboard.transaction_progress": check_transaction_progress,
    "dashboard.review_refund": check_review_refund,
    "dashboard.refund": check_refund,
    "dashboard.cancel_payment": check_cancel_payment,
    "dashboard.add_transaction_note": check_add_transaction_note,
    "dashboard.new_payout": check_new_payout,
    "dashboard.payout_destination": check_payout_destination,
    "dashboard.payout_banks": check_payout_banks,
    "dashboard.iban_bank_hint": check_iban_bank,
    "dashboard.account_name_hint": check_account_name,
    "dashboard.create_payout": check_create_payout,
    "dashboard.review_payout": check_review_payout,
    "dashboard.webhooks": check_webhooks,
    "dashboard.resend_webhook": check_resend_webhook,
    "dashboard.webhook_progress": check_webhook_progress,
    "dashboard.inbox": check_inbox,
    "dashboard.audit": check_audit,
    "dashboard.reconciliation": check_reconciliation,
    "dashboard.settlement": check_settlement,
    "dashboard.export_settlement": check_export_settlement,
    "dashboard.export_audit": check_export_audit,
    "dashboard.settings": check_settings,
    "dashboard.create_token": check_create_token,
    "dashboard.revoke": check_revoke,
    "dashboard.rotate_secret": check_rotate_secret,
    "dashboard.developers": check_developers,
    "dashboard.developer_request": check_developer_request,
    "dashboard.add_user": check_add_user,
    "dashboard.change_role": check_change_role,
    "dashboard.set_active": check_set_active,
    "dashboard.reset_sandbox": check_reset_sandbox,
    "dashboard.providers": check_providers,
    "dashboard.connect_provider": check_connect_provider,
    "dashboard.test_provider_connection": check_test_provider_connection,
    "dashboard.provider_connection_test": check_provider_connection_test,
    "dashboard.confirm_disconnect_provider": check_confirm_disconnect_provider,
    "dashboard.disconnect_provider": check_disconnect_provider,
    "dashboard.provider_events": check_provider_events,
    "dashboard.approvals_list": check_approvals_list,
    "dashboard.approve_request": check_approve_request,
    "dashboard.reject_request": check_reject_request,
    "dashboard.approval_settings": check_approval_settings,
    "dashboard.set_approval_threshold": check_set_approval_threshold,
    "dashboard.set_user_limits": check_set_user_limits,
    "dashboard.password_reset_link": check_password_reset_link,
    "dashboard.reset_two_factor": check_reset_two_factor,
    "dashboard.require_two_factor": check_require_two_factor,
    "dashboard.account": check_account,
    "dashboard.change_password": check_change_password,
    "dashboard.quick_search": check_quick_search,
    "dashboard.save_notifications": check_save_notifications,
    "dashboard.two_factor": check_two_factor,
    "dashboard.enable_two_factor": check_enable_two_factor,
    "dashboard.account_sessions": check_account_sessions,
    "dashboard.end_session": check_end_session,
    "auth.login": check_login,
    "auth.login_code": check_login_code,
    "auth.set_password": check_set_password,
    "auth.logout": check_logout,
}


def _b_dispute(other: OtherMerchant) -> str:
    """B's open sandbox dispute (a payment captured and charged back through the sandbox helper)."""
    if not other.dispute_no:
        tx_no = _captured(other.sandbox, f"disputed-{uuid.uuid4().hex[:8]}")
        for status in ("Captured", "Chargeback"):
            moved = other.sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": status})
            assert moved.status_code == 200, moved.text
        [found] = [d for d in other.sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]
        other.dispute_no = found["disputeId"]
    return other.dispute_no


def _b_dispute_untouched(other: OtherMerchant) -> None:
    shown = other.sandbox.get(f"/disputes/{other.dispute_no}").json()
    assert (shown["status"], shown["evidenceSubmittedAt"]) == ("needs_response", None)


def check_disputes(a, other):
    dispute_no = _b_dispute(other)
    response = a.get("/disputes")
    _never_shows(response, other)
    assert dispute_no not in response.text


def check_dispute(a, other):
    _not_found(a.get(f"/disputes/{_b_dispute(other)}"))


def check_dispute_evidence(a, other):
    _not_found(a.post(f"/disputes/{_b_dispute(other)}/evidence", {"customerName": "A", "step": "submit"}))
    _b_dispute_untouched(other)


def check_dispute_accept(a, other):
    _not_found(a.post(f"/disputes/{_b_dispute(other)}/accept", {"confirm": "y"}))
    _b_dispute_untouched(other)


def check_dispute_file(a, other):
    _not_found(a.post(f"/disputes/{_b_dispute(other)}/files", {"kind": "receipt"},
                      files={"file": ("receipt.pdf", b"%PDF-1.4\n%%EOF\n", "application/pdf")}))
    assert other.sandbox.get(f"/disputes/{other.dispute_no}").json()["files"] == []


CHECKS.update({
    "dashboard.disputes": check_disputes,
    "dashboard.dispute": check_dispute,
    "dashboard.dispute_evidence": check_dispute_evidence,
    "dashboard.dispute_accept": check_dispute_accept,
    "dashboard.dispute_file": check_dispute_file,
})


B_RECIPIENT_HOLDER = "Bhekisisa Recipient-Marker"


def _b_recipient(other: OtherMerchant) -> str:
    """B's saved live recipient (an NGN bank account), its id."""
    if not other.recipient_id:
        saved = recipients.save(other.app.extensions["paydesk"], Caller(other.merchant_id, Mode.LIVE, "b@shop.test"),
                                recipients.RecipientDetails(
                                    payment_method="ng-bank-payout", currency="NGN", bank="058",
                                    holder=B_RECIPIENT_HOLDER, account_number=nuban("058", "555555555"),
                                    first_name="B", last_name="Recipient", email="b@example.com"))
        other.recipient_id = saved.recipient.public_id
    return other.recipient_id


def _b_recipient_untouched(other: OtherMerchant) -> None:
    deps = other.app.extensions["paydesk"]
    with deps.uow(write=False) as uow:
        found = recipients.find(uow, Caller(other.merchant_id, Mode.LIVE, "b@shop.test"), other.recipient_id)
        assert found is not None and found.holder == B_RECIPIENT_HOLDER
        assert uow.conn.execute(select(audit_log.c.id).where(
            audit_log.c.merchant_id == other.merchant_id, audit_log.c.action == "recipient.pay")).first() is None


def _never_shows_b_recipient(response, other: OtherMerchant) -> None:
    _never_shows(response, other)
    assert other.recipient_id not in response.text and B_RECIPIENT_HOLDER not in response.text


def check_recipients_list(a, other):
    _b_recipient(other)
    for query in ("", "?archived=1"):
        _never_shows_b_recipient(a.get("/recipients" + query), other)
    for typed in ("Bhekisisa", other.recipient_id):  # the page repeats what A typed, and finds nothing
        response = a.get("/recipients", params={"q": typed})
        _never_shows(response, other)
        assert B_RECIPIENT_HOLDER not in response.text and "No recipients" in response.text


def check_new_recipient(a, other):
    _b_recipient(other)
    _never_shows_b_recipient(a.get("/recipients/new"), other)


def check_save_recipient(a, other):
    # The same account as B's saves a recipient of A's own: B's is neither found nor named.
    _b_recipient(other)
    a.get("/recipients/new")
    response = a.post("/recipients", {"method": "ng-bank-payout", "currency": "NGN", "bank": "058",
                                      "holder": "A's own", "account_number": nuban("058", "555555555"),
                                      "first_name": "A", "last_name": "Own", "email": "a@example.com"})
    assert response.status_code == 303, response.text
    assert other.recipient_id not in response.headers["Location"]
    _never_shows_b_recipient(a.get(response.headers["Location"]), other)
    _b_recipient_untouched(other)


def check_archive_recipient(a, other):
    _not_found(a.post(f"/recipients/{_b_recipient(other)}/archive"))
    _b_recipient_untouched(other)


def check_pay_recipient(a, other):
    _not_found(a.get(f"/recipients/{_b_recipient(other)}/pay"))


def check_review_recipient_payout(a, other):
    _not_found(a.post(f"/recipients/{_b_recipient(other)}/pay/review",
                      {"amount": "10", "reference": "PO-B", "statement_descriptor": "X",
                       "callback_url": "https://merchant.example/hooks"}))


def check_create_recipient_payout(a, other):
    _not_found(a.post(f"/recipients/{_b_recipient(other)}/pay",
                      {"amount": "10", "reference": "PO-B", "statement_descriptor": "X",
                       "callback_url": "https://merchant.example/hooks", "request_key": "k" * 20}))
    _b_recipient_untouched(other)


def check_save_payout_recipient(a, other):
    for tx_no in (other.payout, other.payment, other.sandbox_payment):
        _not_found(a.post(f"/transactions/{tx_no}/save-recipient"))
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        assert uow.conn.execute(select(audit_log.c.id).where(
            audit_log.c.action == "recipient.save", audit_log.c.detail.like("%B Holder%"))).first() is None


CHECKS.update({
    "dashboard.set_merchant_time_zone": check_set_merchant_time_zone,
    "dashboard.change_display": check_change_display,
    "dashboard.save_payout_recipient": check_save_payout_recipient,
    "dashboard.recipients_list": check_recipients_list,
    "dashboard.new_recipient": check_new_recipient,
    "dashboard.save_recipient": check_save_recipient,
    "dashboard.archive_recipient": check_archive_recipient,
    "dashboard.pay_recipient": check_pay_recipient,
    "dashboard.review_recipient_payout": check_review_recipient_payout,
    "dashboard.create_recipient_payout": check_create_recipient_payout,
})


def _b_batch(a, other: OtherMerchant) -> str:
    """B's payout batch in review, in the mode A's client is in (a row refused keeps it there)."""
    api = other.sandbox if a.prefix else other.api
    created = api.post("/payouts/batches", {"rows": [{"paymentMethod": "mobile-money-payout", "amount": 5,
                                                       "currency": "KES", "holder": "B", "accountNumber": "x",
                                                       "reference": f"b-batch-{uuid.uuid4().hex[:8]}"}]})
    assert created.status_code == 201, created.text
    return created.json()["id"]


def _b_batch_in_review(a, other: OtherMerchant, batch_id: str) -> None:
    api = other.sandbox if a.prefix else other.api
    assert api.get(f"/payouts/batches/{batch_id}").json()["state"] == "review"


def check_batches_page(a, other):
    batch_id = _b_batch(a, other)
    response = a.get("/batches")
    _never_shows(response, other)
    assert batch_id not in response.text


def check_batch_template(a, other):
    response = a.get("/batches/template/payout.csv")
    assert response.status_code == 200
    assert response.text.startswith("method,amount,currency,")


def check_upload_batch(a, other):
    batch_id = _b_batch(a, other)
    response = a.post("/batches", {"kind": "payout", "upload_key": uuid.uuid4().hex},
                      files={"file": ("p.csv", b"method,amount,currency,holder,account,reference\r\n"
                                                b"mobile-money-payout,1,KES,A,+254712345678,x\r\n", "text/csv")})
    assert response.status_code == 303
    page = a.get(urlsplit(response.headers["Location"]).path)
    _never_shows(page, other)
    assert batch_id not in page.text


def check_batch(a, other):
    _not_found(a.get(f"/batches/{_b_batch(a, other)}"))


def check_run_batch(a, other):
    batch_id = _b_batch(a, other)
    _not_found(a.post(f"/batches/{batch_id}/run"))
    _b_batch_in_review(a, other, batch_id)


def check_cancel_batch(a, other):
    batch_id = _b_batch(a, other)
    _not_found(a.post(f"/batches/{batch_id}/cancel"))
    _b_batch_in_review(a, other, batch_id)


def check_batch_results(a, other):
    _not_found(a.get(f"/batches/{_b_batch(a, other)}/results.csv"))


CHECKS.update({
    "dashboard.batches_page": check_batches_page,
    "dashboard.batch_template": check_batch_template,
    "dashboard.upload_batch": check_upload_batch,
    "dashboard.batch": check_batch,
    "dashboard.run_batch": check_run_batch,
    "dashboard.cancel_batch": check_cancel_batch,
    "dashboard.batch_results": check_batch_results,
})


B_ENDPOINT_URL = "https://b-only.example/paydesk-events"


def _b_endpoint(a, other: OtherMerchant) -> str:
    """B's webhook endpoint in the mode A looks at: its id."""
    mode = Mode.SANDBOX if a.prefix == SANDBOX else Mode.LIVE
    other.endpoint_ids = other.endpoint_ids or {}
    if mode not in other.endpoint_ids:
        created = webhook_endpoints.create_endpoint(
            other.app.extensions["paydesk"], Caller(other.merchant_id, mode, "b@shop.test"),
            {"url": B_ENDPOINT_URL, "enabledEvents": ("*",), "description": "B's receiver"})
        other.endpoint_ids[mode] = created.endpoint.public_id
    return other.endpoint_ids[mode]


def _b_endpoint_untouched(a, other: OtherMerchant) -> None:
    mode = Mode.SANDBOX if a.prefix == SANDBOX else Mode.LIVE
    with other.app.extensions["paydesk"].uow(write=False) as uow:
        found = webhook_endpoints.get_endpoint(uow.conn, Caller(other.merchant_id, mode, "test"),
                                               other.endpoint_ids[mode])
    assert (found.url, found.enabled, found.enabled_events) == (B_ENDPOINT_URL, True, ("*",))


def check_webhook_endpoints(a, other):
    endpoint_id = _b_endpoint(a, other)
    response = a.get("/settings/webhook-endpoints")
    _never_shows(response, other)
    assert endpoint_id not in response.text and B_ENDPOINT_URL not in response.text


def check_webhook_endpoint_create(a, other):
    endpoint_id = _b_endpoint(a, other)
    response = a.post("/settings/webhook-endpoints", {"url": "ftp://a.example/", "events": ["*"]})
    assert response.status_code == 422
    assert endpoint_id not in response.text and B_ENDPOINT_URL not in response.text


def check_webhook_endpoint(a, other):
    _not_found(a.get(f"/settings/webhook-endpoints/{_b_endpoint(a, other)}"))


def check_webhook_endpoint_update(a, other):
    endpoint_id = _b_endpoint(a, other)
    _not_found(a.post(f"/settings/webhook-endpoints/{endpoint_id}",
                      {"url": "https://a.example/", "events": ["refund.failed"]}))
    _b_endpoint_untouched(a, other)


def check_webhook_endpoint_rotate(a, other):
    _not_found(a.post(f"/settings/webhook-endpoints/{_b_endpoint(a, other)}/rotate"))


def check_webhook_endpoint_delete(a, other):
    _not_found(a.post(f"/settings/webhook-endpoints/{_b_endpoint(a, other)}/delete"))
    _b_endpoint_untouched(a, other)


def check_webhook_endpoint_resend(a, other):
    _not_found(a.post(f"/settings/webhook-endpoints/{_b_endpoint(a, other)}/resend-failed",
                      {"since": "2020-01-01T00:00"}))


def check_webhook_endpoint_check(a, other):
    _not_found(a.post(f"/settings/webhook-endpoints/{_b_endpoint(a, other)}/check"))


def check_webhook_endpoint_check_result(a, other):
    mode = Mode.SANDBOX if a.prefix == SANDBOX else Mode.LIVE
    endpoint_id = _b_endpoint(a, other)
    check = receiver_check.request_check(other.app.extensions["paydesk"],
                                         Caller(other.merchant_id, mode, "b@shop.test"), endpoint_id)
    _not_found(a.get(f"/settings/webhook-endpoints/{endpoint_id}/checks/{check.public_id}"))


CHECKS.update({
    "dashboard.webhook_endpoint_check": check_webhook_endpoint_check,
    "dashboard.webhook_endpoint_check_result": check_webhook_endpoint_check_result,
    "dashboard.webhook_endpoints": check_webhook_endpoints,
    "dashboard.webhook_endpoint_create": check_webhook_endpoint_create,
    "dashboard.webhook_endpoint": check_webhook_endpoint,
    "dashboard.webhook_endpoint_update": check_webhook_endpoint_update,
    "dashboard.webhook_endpoint_rotate": check_webhook_endpoint_rotate,
    "dashboard.webhook_endpoint_delete": check_webhook_endpoint_delete,
    "dashboard.webhook_endpoint_resend": check_webhook_endpoint_resend,
})


def test_every_dashboard_url_has_an_isolation_check(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()
                 if rule.endpoint.split(".")[0] in ("dashboard", "auth")}
    assert endpoints == set(CHECKS)


def test_every_dashboard_url_has_a_sandbox_twin(app):
    """So the checks below, run on both prefixes, reach every URL there is."""
    rules = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("dashboard."):
            rules.setdefault(rule.endpoint, set()).add(rule.rule)
    assert {endpoint: {path.removeprefix(SANDBOX) for path in paths} for endpoint, paths in rules.items()
            if len(paths) != 2 or not any(path.startswith(SANDBOX + "/") for path in paths)} == {}


@pytest.mark.parametrize("prefix", ["", SANDBOX], ids=["live", "sandbox"])
@pytest.mark.parametrize("endpoint", sorted(CHECKS))
def test_merchant_a_never_reaches_merchant_b(endpoint, prefix, dashboard, merchant, other):
    admin_of_a = dashboard(merchant.merchant_id, "admin")
    admin_of_a.prefix = prefix  # every dashboard path the check opens, in this mode
    CHECKS[endpoint](admin_of_a, other)
