"""Settings -> Providers (admin): connect Paystack or Stripe in the current mode, test the
connection against the provider (a worker asks it, never the request), disconnect; and the log of
webhooks the providers sent."""
from __future__ import annotations

import hashlib
import html
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from app.payments.model import Caller, Mode
from app.store import provider_accounts as provider_store
from app.store.tables import audit_log, provider_accounts
from app.providers.connection_tests import connection_test_pass
from app.worker import background_pass
from tests.providers.fake_provider import Answer, RunningFakeProvider

from .conftest import switch_to_sandbox

BALANCE = {"status": True, "message": "Balances retrieved", "data": [{"currency": "NGN", "balance": 0}]}
HTMX = {"HX-Request": "true"}


@pytest.fixture
def admin(dashboard, merchant):
    return dashboard(merchant.merchant_id, "admin")


@pytest.fixture
def worker_pass(worker_round, app):
    """run(): one worker round, then wait for the connection tests it started on their thread."""
    def run() -> None:
        worker_round()
        background_pass(app, connection_test_pass).wait(10)
    return run


def asked(account_id: int, announce: bool = False) -> str:
    """The fragment that asks again every second until the answer is stored."""
    return (f'<p class="muted" hx-get="/settings/providers/{account_id}/test" hx-trigger="load delay:1s" '
            f'hx-target="this" hx-swap="outerHTML"{" data-announce" if announce else ""}>'
            "Asking Paystack…</p>")


def answer(text: str, worked: bool = False) -> str:
    """The answer in place: focused and read out (the page's #announcer)."""
    return (f'<p class="alert {"alert-success" if worked else "alert-error"}" tabindex="-1" '
            f'data-focus-after-swap data-announce>{text}</p>')


def answer_in_place(admin, account_id: int, worker_pass) -> str:
    """Test connection with htmx, a worker pass, then the fragment's next ask: its answer."""
    asking = admin.post(f"/settings/providers/{account_id}/test", headers=HTMX)
    assert asking.status_code == 200, asking.text
    worker_pass()
    answered = admin.get(f"/settings/providers/{account_id}/test", headers=HTMX)
    assert answered.status_code == 200
    return answered.text.strip()


@pytest.fixture
def fake():
    """A Paystack played by a local server."""
    with RunningFakeProvider() as provider:
        yield provider


def new_secret(prefix: str = "sk_live_") -> str:
    """A key no other test uses."""
    return prefix + uuid.uuid4().hex


def connect_form(**fields) -> dict:
    """The connect form as a browser posts it: every field, blanks included."""
    return {"provider": "paystack", "secret_key": "", "webhook_secret": "", "base_url": "", **fields}


def accounts_of(app, merchant_id: int) -> list:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return list(uow.conn.execute(select(provider_accounts).where(
            provider_accounts.c.merchant_id == merchant_id).order_by(provider_accounts.c.id)))


def audited(app, merchant_id: int) -> list[tuple[str, str, str]]:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return [(r.action, r.actor, r.target) for r in uow.conn.execute(select(audit_log).where(
            audit_log.c.merchant_id == merchant_id, audit_log.c.action.like("provider.%"))
            .order_by(audit_log.c.id))]


def method_ids(api) -> set[str]:
    return {m["id"] for m in api.get("/payment-methods").json()}


def connected_paystack(admin, app, merchant, base_url: str, secret: str | None = None) -> int:
    """Connect Paystack through the form; the new account's id."""
    response = admin.post("/settings/providers", connect_form(secret_key=secret or new_secret(),
                                                              base_url=base_url))
    assert response.status_code == 200, response.text
    return accounts_of(app, merchant.merchant_id)[-1].id


def test_an_admin_connects_paystack_and_sees_where_to_set_the_webhook_url(admin, app, merchant,
                                                                          server, live, sandbox):
    secret = new_secret()
    response = admin.post("/settings/providers", connect_form(secret_key=secret,
                                                              base_url="https://api.paystack.test/"))
    assert response.status_code == 200
    (account,) = accounts_of(app, merchant.merchant_id)
    webhook_url = f"{server.url}/provider-webhooks/{account.webhook_key}"
    page = response.text
    assert "<title>Paystack connected · Paydesk</title>" in page
    assert "Paystack is connected in live." in page
    assert f'<textarea id="webhook-url" class="mono" rows="3" readonly>{webhook_url}</textarea>' in page
    assert "Paste it as the Live Webhook URL and save." in page
    assert 'Card (Paystack) <span class="tag">paystack-card</span>' in page
    assert 'Bank payout (Paystack) <span class="tag">paystack-bank-payout</span>' in page
    assert secret not in page
    assert (account.mode, account.base_url, account.key_hint) == ("live", "https://api.paystack.test",
                                                                  f"sk_live_…{secret[-4:]}")
    assert {"paystack-card", "paystack-bank-payout"} <= method_ids(live)
    assert not {"paystack-card", "paystack-bank-payout"} & method_ids(sandbox)
    listed = admin.get("/settings/providers").text
    assert f'value="{webhook_url}" readonly' in listed
    assert f'Secret key <span class="mono">sk_live_…{secret[-4:]}</span>' in listed
    assert 'API at <span class="mono break">https://api.paystack.test</span>' in listed
    assert "<dt>Connected since</dt>" in listed and secret not in listed
    assert audited(app, merchant.merchant_id) == [("provider.connect", admin_email(admin),
                                                   f"paystack:{account.id}")]


def admin_email(client) -> str:
    return re.search(r'<span class="account-email">([^<]+)</span>', client.get("/settings").text).group(1)


def test_stripe_needs_its_webhook_secret_and_neither_secret_is_echoed(admin, app, merchant, live):
    secret, whsec = new_secret(), new_secret("whsec_")
    response = admin.post("/settings/providers", connect_form(provider="stripe", secret_key=secret,
                                                              webhook_secret=whsec))
    assert response.status_code == 200
    assert "Stripe is connected in live." in response.text
    assert "checkout.session.completed" in response.text  # the events to choose at Stripe
    assert secret not in response.text and whsec not in response.text
    (account,) = accounts_of(app, merchant.merchant_id)
    box = app.extensions["paydesk"].providers.box
    assert box.open(account.secret_key) == secret and box.open(account.webhook_secret) == whsec
    assert "stripe-card" in method_ids(live)


def test_connecting_needs_the_csrf_token(admin, app, merchant):
    response = admin.post("/settings/providers", connect_form(secret_key=new_secret()), csrf=False)
    assert response.status_code == 400
    assert "This form has expired or did not come from Paydesk." in response.text
    assert accounts_of(app, merchant.merchant_id) == []


@pytest.mark.parametrize("fields, field, message", [
    ({}, "secret_key", "Secret key is required"),
    ({"secret_key": "sk live with spaces"}, "secret_key", "Secret key must be one line without spaces"),
    ({"provider": "stripe", "secret_key": "sk_live_0123456789abcdef"}, "webhook_secret",
     "Stripe&#39;s webhook signing secret (whsec_...) is required: without it Stripe&#39;s webhooks "
     "cannot be verified"),
    ({"secret_key": "sk_live_0123456789abcdef", "webhook_secret": "whsec_not_for_paystack"},
     "webhook_secret", "Paystack signs its webhooks with the secret key; it has no separate webhook secret"),
    ({"secret_key": "sk_live_0123456789abcdef", "base_url": "ftp://api.paystack.test"}, "base_url",
     "Base URL must be an http(s) URL without query or fragment"),
    ({"secret_key": "sk_live_0123456789abcdef", "base_url": "https://api.paystack.test/" + "x" * 2048},
     "base_url", "Base URL must be at most 2048 characters"),
    ({"secret_key": "sk_live_0123456789abcdef", "base_url": "https://api.paystack.test/\x00"},
     "base_url", "Base URL must not contain control characters"),
    ({"secret_key": "sk_test_0123456789abcdef"}, "secret_key",
     "This is a sandbox key: connect it in sandbox mode"),
    ({"provider": "adyen", "secret_key": "sk_live_0123456789abcdef"}, "provider",
     "Provider must be one of paystack, stripe"),
])
def test_field_errors_show_beside_their_fields_without_the_secrets(admin, app, merchant, fields,
                                                                    field, message):
    response = admin.post("/settings/providers", connect_form(**fields))
    assert response.status_code == 422
    assert f'<ul class="field-errors" id="{field}-errors"><li>{message}</li></ul>' in response.text
    for secret in (fields.get("secret_key"), fields.get("webhook_secret")):
        if secret:
            assert html.escape(secret) not in response.text
    assert re.findall(r'type="password" value="([^"]*)"', response.text) == ["", ""]
    assert accounts_of(app, merchant.merchant_id) == []


def test_the_base_url_is_kept_in_the_form_after_an_error(admin):
    response = admin.post("/settings/providers", connect_form(base_url="https://eu.paystack.test"))
    assert re.search(r'<input [^>]*name="base_url" [^>]*value="https://eu.paystack.test"', response.text)


@pytest.mark.parametrize("role", ["support", "finance", "payouts"])
def test_other_roles_cannot_open_or_use_providers(role, dashboard, merchant, admin, app, fake):
    account_id = connected_paystack(admin, app, merchant, fake.url)
    other = dashboard(merchant.merchant_id, role)
    assert 'href="/settings/providers"' not in other.get("/transactions").text
    assert other.get("/settings/providers").status_code == 403
    assert other.post("/settings/providers", connect_form(secret_key=new_secret())).status_code == 403
    assert other.post(f"/settings/providers/{account_id}/test", headers=HTMX).status_code == 403
    assert other.get(f"/settings/providers/{account_id}/test", headers=HTMX).status_code == 403
    assert other.get(f"/settings/providers/{account_id}/disconnect").status_code == 403
    assert other.post(f"/settings/providers/{account_id}/disconnect").status_code == 403
    assert fake.seen == [] and len(accounts_of(app, merchant.merchant_id)) == 1
    assert accounts_of(app, merchant.merchant_id)[0].disconnected_at is None
    assert accounts_of(app, merchant.merchant_id)[0].test_requested_at is None
    assert other.get("/webhooks/providers").status_code == 200


def test_settings_link_to_providers(admin):
    settings = admin.get("/settings").text
    assert '<a href="/settings/providers">Providers</a>' in settings  # the settings tabs
    providers = admin.get("/settings/providers").text
    assert '<a href="/settings/providers" aria-current="page">Providers</a>' in providers
    assert '<a href="/settings" aria-current="page">Settings</a>' in providers  # the main navigation


def test_test_connection_asks_a_worker_and_shows_its_answer_in_place(admin, app, merchant, fake,
                                                                      worker_pass):
    fake.on("GET", "/balance", BALANCE, Answer(401, {"status": False, "message": "Invalid key"}))
    secret = new_secret()
    account_id = connected_paystack(admin, app, merchant, fake.url, secret)
    page = admin.get("/settings/providers").text
    assert f'<div class="provider-test" id="provider-test-{account_id}"></div>' in page  # read out by #announcer
    assert f'hx-post="/settings/providers/{account_id}/test"' in page

    asking = admin.post(f"/settings/providers/{account_id}/test", headers=HTMX)
    assert fake.seen == []  # the request asked nobody: it answered at once
    assert asking.status_code == 200
    assert asking.text.strip() == asked(account_id, announce=True)  # read out once, when asked
    assert "HX-Request" in asking.headers["Vary"]
    assert admin.get(f"/settings/providers/{account_id}/test", headers=HTMX).text.strip() == asked(account_id)

    worker_pass()
    worked = admin.get(f"/settings/providers/{account_id}/test", headers=HTMX)
    assert worked.status_code == 200
    assert worked.text.strip() == answer("Paystack answered: Connected to Paystack", worked=True)
    assert "HX-Request" in worked.headers["Vary"]
    assert fake.requests_to("GET", "/balance")[0].header("Authorization") == f"Bearer {secret}"
    assert admin.get(f"/settings/providers/{account_id}/test", headers=HTMX).text == worked.text
    assert len(fake.requests_to("GET", "/balance")) == 1  # asking for the answer asks the provider nothing

    assert answer_in_place(admin, account_id, worker_pass) == answer(
        "Paystack answered HTTP 401: the secret key was refused")
    email = admin_email(admin)
    assert audited(app, merchant.merchant_id) == [("provider.connect", email, f"paystack:{account_id}"),
                                                  ("provider.test", email, f"paystack:{account_id}"),
                                                  ("provider.test", email, f"paystack:{account_id}")]


def test_test_connection_without_javascript_answers_on_the_page_after_a_reload(admin, app, merchant,
                                                                             fake, worker_pass):
    fake.on("GET", "/balance", BALANCE)
    account_id = connected_paystack(admin, app, merchant, fake.url)
    response = admin.post(f"/settings/providers/{account_id}/test")
    assert response.status_code == 303
    assert response.headers["Location"] == f"/settings/providers#account-{account_id}"
    assert fake.seen == []
    page = admin.get("/settings/providers").text
    assert "Paydesk is asking Paystack; reload this page for the answer" in page
    assert f'<div class="provider-test" id="provider-test-{account_id}">{asked(account_id)}</div>' in page
    assert "Paystack answered" not in page and f'id="account-{account_id}-test"' not in page
    asking_for_it = admin.get(f"/settings/providers/{account_id}/test", allow_redirects=False)
    assert asking_for_it.status_code == 303  # the fragment is for htmx; a browser gets the page
    assert asking_for_it.headers["Location"] == f"/settings/providers#account-{account_id}"

    worker_pass()
    page = admin.get("/settings/providers").text
    assert "reload this page" not in page
    assert f'<div class="provider-test" id="provider-test-{account_id}"></div>' in page
    last_test = re.search(rf'<dt>Last test</dt><dd id="account-{account_id}-test">(.*?)</dd>', page, re.S)
    assert last_test, page
    assert re.fullmatch(r'<span class="state state-delivered">Worked</span> Paystack answered: Connected '
                        r'to Paystack, <time datetime="[^"]+">[^<]+</time>', last_test.group(1))


def test_a_test_no_worker_answers_says_so_after_40_seconds(admin, app, merchant, fake, worker_pass):
    fake.on("GET", "/balance", BALANCE)
    account_id = connected_paystack(admin, app, merchant, fake.url)
    admin.post(f"/settings/providers/{account_id}/test", headers=HTMX)
    ask = admin.get(f"/settings/providers/{account_id}/test", headers=HTMX)
    assert ask.text.strip() == asked(account_id)
    with app.extensions["paydesk"].uow() as uow:  # asked 41 s ago, no worker running since
        uow.conn.execute(update(provider_accounts).where(provider_accounts.c.id == account_id).values(
            test_requested_at=datetime.now(UTC) - timedelta(seconds=41)))
        uow.commit()

    no_answer = answer("No answer yet from Paystack; the worker may be stopped")
    assert admin.get(f"/settings/providers/{account_id}/test", headers=HTMX).text.strip() == no_answer
    assert f'id="provider-test-{account_id}">{no_answer}</div>' in admin.get("/settings/providers").text

    worker_pass()  # a worker started late still answers it
    assert admin.get(f"/settings/providers/{account_id}/test", headers=HTMX).text.strip() == answer(
        "Paystack answered: Connected to Paystack", worked=True)


def test_asking_again_before_the_answer_waits_for_the_new_answer(admin, app, merchant, fake,
                                                                worker_pass):
    fake.on("GET", "/balance", Answer(401, {"status": False, "message": "Invalid key"}), BALANCE)
    account_id = connected_paystack(admin, app, merchant, fake.url)
    assert answer_in_place(admin, account_id, worker_pass) == answer(
        "Paystack answered HTTP 401: the secret key was refused")
    admin.post(f"/settings/providers/{account_id}/test", headers=HTMX)
    assert admin.get(f"/settings/providers/{account_id}/test", headers=HTMX).text.strip() == asked(account_id)
    page = admin.get("/settings/providers").text  # the last answer stays on the page meanwhile
    assert "Paystack answered HTTP 401: the secret key was refused, <time" in page
    worker_pass()
    assert admin.get(f"/settings/providers/{account_id}/test", headers=HTMX).text.strip() == answer(
        "Paystack answered: Connected to Paystack", worked=True)


SECRET_TEXT = "<secret internal text>"
STRIPE_KEY_REFUSED = Answer(401, {"error": {"type": "invalid_request_error", "code": "api_key_invalid",
                                            "message": f"Invalid API Key provided: {SECRET_TEXT}"}})
HTML_PAGE = f"<html><body><h1>Intranet wiki</h1><p>{SECRET_TEXT}</p></body></html>"


@pytest.mark.parametrize("provider,refusal,shown", [
    ("paystack", Answer(401, {"status": False, "message": SECRET_TEXT}),
     "Paystack answered HTTP 401: the secret key was refused"),
    ("paystack", Answer(500, HTML_PAGE, content_type="text/html"),
     "Paystack answered HTTP 500: Internal Server Error"),
    ("paystack", Answer(200, HTML_PAGE, content_type="text/html"),
     "Paystack answered HTTP 200: the answer is not the provider&#39;s API"),
    ("stripe", STRIPE_KEY_REFUSED, "Stripe answered HTTP 401: the secret key was refused"),
    ("stripe", Answer(404, HTML_PAGE, content_type="text/html"),
     "Stripe answered HTTP 404: no such address at the provider; check the base URL"),
    ("stripe", Answer(200, HTML_PAGE, content_type="text/html"),
     "Stripe answered HTTP 200: the answer is not the provider&#39;s API"),
], ids=["paystack-401", "paystack-500-html", "paystack-200-html", "stripe-401", "stripe-404-html",
        "stripe-200-html"])
def test_test_connection_shows_the_status_in_fixed_words_never_the_answer(admin, app, merchant, fake,
                                                                         worker_pass, provider,
                                                                         refusal, shown):
    fake.on("GET", "/balance" if provider == "paystack" else "/v1/balance", refusal)
    connected = admin.post("/settings/providers", connect_form(
        provider=provider, secret_key=new_secret(), base_url=fake.url,
        webhook_secret=new_secret("whsec_") if provider == "stripe" else ""))
    assert connected.status_code == 200, connected.text
    account_id = accounts_of(app, merchant.merchant_id)[-1].id

    inline = answer_in_place(admin, account_id, worker_pass)
    flashed = admin.post(f"/settings/providers/{account_id}/test")
    worker_pass()
    page = admin.get("/settings/providers").text

    assert inline == ('<p class="alert alert-error" tabindex="-1" data-focus-after-swap '
                      f'data-announce>{shown}</p>')
    assert flashed.status_code == 303 and f"{shown}, <time" in page
    for text in (inline, page):
        assert "secret internal text" not in text and "Intranet" not in text


def test_a_redirect_from_the_provider_is_not_followed(admin, app, merchant, fake, worker_pass):
    with RunningFakeProvider() as elsewhere:
        elsewhere.on("GET", "/balance", BALANCE)
        fake.on("GET", "/balance", Answer(302, "", headers={"Location": elsewhere.url + "/balance"}))
        account_id = connected_paystack(admin, app, merchant, fake.url)

        tested = answer_in_place(admin, account_id, worker_pass)

        assert elsewhere.seen == []
    assert tested == ('<p class="alert alert-error" tabindex="-1" data-focus-after-swap '
                      'data-announce>Paystack answered HTTP 302: redirects are not followed</p>')
    assert len(fake.requests_to("GET", "/balance")) == 1  # the worker's round also fetched bank lists


def test_test_connection_needs_the_csrf_token(admin, app, merchant, fake, worker_pass):
    account_id = connected_paystack(admin, app, merchant, fake.url)
    assert admin.post(f"/settings/providers/{account_id}/test", csrf=False, headers=HTMX).status_code == 400
    assert accounts_of(app, merchant.merchant_id)[0].test_requested_at is None  # nothing asked
    worker_pass()
    assert fake.requests_to("GET", "/balance") == []
    assert [a for a, _, _ in audited(app, merchant.merchant_id)] == ["provider.connect"]


def test_disconnect_asks_first_then_stops_the_methods(admin, app, merchant, live, fake):
    account_id = connected_paystack(admin, app, merchant, fake.url)
    listed = admin.get("/settings/providers").text
    assert f'href="/settings/providers/{account_id}/disconnect">Disconnect' in listed
    confirm = admin.get(f"/settings/providers/{account_id}/disconnect")
    assert confirm.status_code == 200
    assert ">Disconnect Paystack?</h1>" in confirm.text
    assert "paystack-card, paystack-bank-payout stop taking new transactions in live" in confirm.text
    assert "paystack-card" in method_ids(live)  # asking changed nothing
    done = admin.post(f"/settings/providers/{account_id}/disconnect")
    assert done.status_code == 303 and done.headers["Location"] == "/settings/providers"
    assert not {"paystack-card", "paystack-bank-payout"} & method_ids(live)
    page = admin.get("/settings/providers").text
    assert "Paystack is disconnected: its methods take no new transactions." in page
    assert "Disconnected on <time" in page
    assert f"/settings/providers/{account_id}/test" not in page
    assert f"/settings/providers/{account_id}/disconnect" not in page
    assert admin.get(f"/settings/providers/{account_id}/disconnect").status_code == 404
    assert admin.post(f"/settings/providers/{account_id}/disconnect").status_code == 404
    email = admin_email(admin)
    assert audited(app, merchant.merchant_id) == [("provider.connect", email, f"paystack:{account_id}"),
                                                  ("provider.disconnect", email, f"paystack:{account_id}")]


def test_reconnecting_replaces_the_keys_and_keeps_the_webhook_url(admin, app, merchant, fake):
    first = connected_paystack(admin, app, merchant, fake.url)
    (before,) = accounts_of(app, merchant.merchant_id)
    secret = new_secret()
    again = admin.post("/settings/providers", connect_form(secret_key=secret, base_url=fake.url))
    assert "<title>Paystack keys replaced · Paydesk</title>" in again.text
    assert "The keys of your Paystack account in live are replaced; its webhook URL is unchanged." in again.text
    (after,) = accounts_of(app, merchant.merchant_id)
    assert (after.id, after.webhook_key) == (first, before.webhook_key)
    assert after.key_hint == f"sk_live_…{secret[-4:]}"
    assert [a for a, _, _ in audited(app, merchant.merchant_id)] == ["provider.connect", "provider.update"]


def test_each_mode_has_its_own_providers(admin, app, merchant, fake):
    connected_paystack(admin, app, merchant, fake.url)
    switch_to_sandbox(admin)
    page = admin.get("/settings/providers").text
    assert "No provider connected in sandbox" in page
    assert "Connect a provider in sandbox" in page


def _record(app, merchant, account_id: int, **fields) -> None:
    caller = Caller(merchant.merchant_id, Mode.LIVE, "test")
    with app.extensions["paydesk"].uow() as uow:
        account = provider_store.caller_account(uow.conn, caller, account_id)
        body = fields.pop("body")
        provider_store.record_event(uow.conn, account, received_at=datetime.now(UTC), body=body,
                                    body_sha256=hashlib.sha256(body.encode()).hexdigest(), **fields)
        uow.commit()


def test_provider_events_list_what_the_providers_sent(admin, dashboard, app, merchant, fake):
    account_id = connected_paystack(admin, app, merchant, fake.url)
    marker = uuid.uuid4().hex
    _record(app, merchant, account_id, body='{"event": "charge.success", "note": "<script>x</script>"}',
            signature_valid=True, result="applied", event_type="charge.success",
            tx_no="PAY-0123456789ABCDEF", detail=f"Pending -> Captured {marker}")
    _record(app, merchant, account_id, body="forged", signature_valid=False, result="bad signature",
            detail="Paystack signature refused")
    support = dashboard(merchant.merchant_id, "support")
    page = support.get("/webhooks/providers")
    assert page.status_code == 200
    text = page.text
    assert '<a href="/webhooks/providers" aria-current="page">Provider events</a>' in text
    assert text.index("bad signature") < text.index("charge.success")  # newest first
    assert '<a class="mono" href="/transactions/PAY-0123456789ABCDEF">PAY-0123456789ABCDEF</a>' in text
    assert text.count('<span class="state state-delivered">Signature verified</span>') == 1
    assert text.count('<span class="state state-failed">Signature invalid</span>') == 1
    assert '<span class="state state-delivered">applied</span>' in text
    assert '<span class="state state-failed">bad signature</span>' in text
    assert f"Pending -&gt; Captured {marker}" in text and "Paystack signature refused" in text
    assert "<summary>Raw body</summary>" in text
    assert "&lt;script&gt;x&lt;/script&gt;" in text and "<script>x" not in text
    assert "Paystack" in text
    switch_to_sandbox(support)
    assert marker not in support.get("/webhooks/providers").text
    assert "No provider events in sandbox" in support.get("/webhooks/providers").text


def test_the_webhook_logs_link_to_provider_events(finance):
    assert re.search(r'<a href="/webhooks/providers"\s*>Provider events</a>', finance.get("/webhooks").text)


def test_the_page_shows_how_the_workers_calls_to_each_account_go(admin, app, merchant):
    account_id = connected_paystack(admin, app, merchant, "https://api.paystack.test/")
    assert f'id="account-{account_id}-calls"' not in admin.get("/settings/providers").text  # not called yet
    since = datetime(2026, 11, 27, 14, 3, tzinfo=UTC)
    shown = {}
    for state in ("healthy", "slow", "open"):
        with app.extensions["paydesk"].uow() as uow:
            provider_store.record_calls_state(uow.conn, account_id, state, since)
            uow.commit()
        page = admin.get("/settings/providers").text
        shown[state] = re.sub(r"<[^>]+>|\s+", " ", re.search(
            rf'id="account-{account_id}-calls">(.*?)</dd>', page, re.S).group(1)).split()
    assert shown["healthy"][:2] == ["Answering", "since"]
    assert shown["slow"][:2] == ["Slow", "since"]
    assert shown["open"][:4] == ["Paused", "not", "answering", "since"]
    assert shown["open"][-4:] == ["Paydesk", "tries", "again", "shortly"]
