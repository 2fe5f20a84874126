"""Generated hostile input on every dashboard form and page: never a 5xx.

Form values are any text, lone surrogates sent as the invalid UTF-8 a browser would never
send, control characters, very long values, fields dropped, repeated or unknown, and a CSRF
token that is usually right. Pages get hostile query strings and path segments.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.support.strategies import (
    INTERNAL_BASE_URLS, hostile_text, path_segments, query_strings, url_quoted,
)

from tests.dashboard.conftest import PASSWORD, SANDBOX

from .conftest import assert_no_server_error, csrf_token_of, fresh_address
from .test_found_cases import HOSTILE_NEXT

PAYOUT_FORM = {
    "method": "mobile-money-payout", "currency": "KES", "country": "", "bank": "",
    "holder": "Wanjiru Kamau", "account_number": "+254712345678", "amount": "2500",
    "reference": "payout-1", "statement_descriptor": "PAYDESK",
    "callback_url": "https://merchant.example/hooks", "first_name": "Wanjiru",
    "last_name": "Kamau", "email": "w@example.com", "customer_reference": "cust-9",
}
REFUND_FORM = {"amount": "1", "reason": "Damaged", "description": "Box torn", "full": "",
               "step": "", "request_key": "k1"}
# Path ids: a colleague's real id ({colleague}), others', ones past 64 bits, and no numbers at all.
user_ids = st.one_of(st.just("{colleague}"), st.integers(0, 2**63 - 1).map(str),
                     st.integers(2**63, 10**30).map(str), path_segments)


@dataclass(frozen=True)
class Form:
    """A dashboard form: where it posts and a valid set of its fields."""

    paths: st.SearchStrategy
    valid: dict = field(default_factory=dict)


FORMS = {
    "refund review": Form(st.just("/transactions/SBX-CAPTURED/refund/review"), REFUND_FORM),
    "refund": Form(st.sampled_from(["/transactions/SBX-CAPTURED/refund",
                                    "/transactions/SBX-NO-PARTIAL/refund"]), REFUND_FORM),
    "refund of any transaction": Form(path_segments.map("/transactions/{}/refund".format),
                                      REFUND_FORM),
    "cancel": Form(st.one_of(st.sampled_from(["/transactions/SBX-PENDING/cancel"]),
                             path_segments.map("/transactions/{}/cancel".format)), {"step": "confirm"}),
    "payout": Form(st.just("/payouts"), {**PAYOUT_FORM, "request_key": "k1"}),
    "payout review": Form(st.just("/payouts/review"), {**PAYOUT_FORM, "step": ""}),
    "new token": Form(st.just("/settings/tokens"), {"label": "checkout server", "scopes": "read"}),
    "new user": Form(st.just("/settings/users"), {"email": "new@shop.test", "role": "support"}),
    "role": Form(user_ids.map("/settings/users/{}/role".format), {"role": "finance"}),
    "access": Form(user_ids.map("/settings/users/{}/active".format), {"active": "0"}),
    "token revoke": Form(user_ids.map("/settings/tokens/{}/revoke".format)),
    "webhook secret, sandbox reset": Form(st.sampled_from(["/settings/webhook-secret",
                                                           "/settings/sandbox/reset"])),
    # Base URLs on the host or its private network: a connect that passes reaches no provider.
    "provider connect": Form(st.just("/settings/providers"),
                             {"provider": "paystack", "secret_key": "sk_test_hostile_corpus_0123456789",
                              "webhook_secret": "", "base_url": st.sampled_from(INTERNAL_BASE_URLS)}),
    "provider test, disconnect": Form(st.one_of(user_ids.map("/settings/providers/{}/test".format),
                                                user_ids.map("/settings/providers/{}/disconnect".format))),
    "webhook resend": Form(path_segments.map("/webhooks/{}/resend".format), {"back": "/webhooks"}),
    "approve, reject": Form(st.one_of(user_ids.map("/approvals/{}/approve".format),
                                      user_ids.map("/approvals/{}/reject".format)),
                            {"back": "/approvals", "note": "Not agreed"}),
    "approval threshold": Form(st.just("/settings/approvals/thresholds"), {"currency": "EUR", "amount": "50"}),
    "user limits": Form(st.just("/settings/approvals/limits"),
                        {"user_id": "1", "currency": "EUR", "max_refund": "20", "max_payout": "30"}),
    "password link, two-factor reset": Form(st.one_of(
        user_ids.map("/settings/users/{}/reset-link".format),
        user_ids.map("/settings/users/{}/two-factor/reset".format)), {"current_password": PASSWORD}),
    "two-factor rule": Form(st.just("/settings/two-factor"), {"required": "0"}),
    "own password": Form(st.just("/account/password"),
                         {"current_password": "not it", "new_password": "a fresh passphrase today",
                          "confirm": "a fresh passphrase today"}),
    "two-factor enrolment": Form(st.just("/account/two-factor"),
                                 {"current_password": PASSWORD, "code": "123456"}),
    "session end": Form(user_ids.map("/account/sessions/{}/end".format)),
}
PAGES = {
    "transactions and export": (st.sampled_from(["/transactions", "/transactions/export.csv", "/"]),
                                ["q", "status", "kind", "from", "to", "older", "newer"]),
    "transaction": (path_segments.map("/transactions/{}".format), []),
    "progress": (st.one_of(st.sampled_from(["/transactions/SBX-PENDING/progress",
                                            "/transactions/SBX-CAPTURED/progress"]),
                           path_segments.map("/transactions/{}/progress".format),
                           path_segments.map("/webhooks/{}/progress".format)), ["after"]),
    "payout pages": (st.sampled_from(["/payouts/new", "/payouts/new/destination", "/payouts/banks"]),
                     ["method", "currency", "country", "q"]),
    "audit, webhooks, inbox, settings": (
        st.sampled_from(["/audit", "/webhooks", "/webhooks/inbox", "/webhooks/providers", "/settings",
                         "/settings/providers"]), ["before", "page"]),
    "approvals": (st.sampled_from(["/approvals", "/settings/approvals"]), ["before", "page"]),
    "account pages": (st.sampled_from(["/account", "/account/sessions", "/account/two-factor"]), []),
}


@st.composite
def form_bodies(draw, valid: dict, csrf_token: str) -> bytes:
    """A urlencoded form close to a valid one (a field's valid values may be a strategy): fields
    kept, made hostile, dropped or repeated, unknown ones added; the CSRF token usually right;
    sometimes no form encoding at all."""
    pairs = []
    for name, value in valid.items():
        if isinstance(value, st.SearchStrategy):
            value = draw(value)
        choice = draw(st.sampled_from(["keep", "keep", "hostile", "drop", "repeat"]))
        if choice == "hostile":
            value = draw(hostile_text)
        if choice != "drop":
            pairs.append((name, value))
        if choice == "repeat":
            pairs.append((name, draw(hostile_text)))
    pairs += draw(st.lists(st.tuples(hostile_text, hostile_text), max_size=2))
    token = draw(st.one_of(st.just(csrf_token), st.just(csrf_token), st.just(csrf_token),
                           st.none(), hostile_text))
    if token is not None:
        pairs.append(("csrf_token", token))
    pairs = draw(st.permutations(pairs))
    encoded = "&".join(f"{url_quoted(name)}={url_quoted(value)}" for name, value in pairs)
    return draw(st.one_of(st.just(encoded.encode()), st.just(encoded.encode()),
                          st.sampled_from([b"%", b"a=%zz&=&&", b"\xff\xfe", b"csrf_token"])))


form_content_types = st.sampled_from(["application/x-www-form-urlencoded"] * 4 + [
    "multipart/form-data; boundary=x", "multipart/form-data", "text/plain", "application/json"])
htmx = st.sampled_from([{}, {"HX-Request": "true"}])

PROPERTY = settings(max_examples=40, deadline=None,
                    # one signed-in admin serves every example, as one browser's session would
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("form", FORMS)
@PROPERTY
@given(data=st.data())
def test_hostile_form_posts_never_get_5xx(admin, colleague_id, form, data):
    """In the sandbox, where the test transactions (SBX-...) are."""
    path = SANDBOX + data.draw(FORMS[form].paths, label="path").replace("{colleague}", str(colleague_id))
    body = data.draw(form_bodies(FORMS[form].valid, admin.csrf_token), label="body")
    note(f"POST {path[:300]} {body[:500]!r}")
    response = admin.client.post(path, data=body, content_type=data.draw(form_content_types),
                                 headers=data.draw(htmx))
    assert_no_server_error(response, f"POST {path[:100]}")


@PROPERTY
@given(data=st.data())
def test_hostile_sign_ins_never_get_5xx(app, data):
    """The sign-in form, from a fresh address each time (its failures are rate-limited per address)."""
    client = app.test_client()
    csrf_token = csrf_token_of(client.get("/login")) if data.draw(st.booleans()) else ""
    body = data.draw(form_bodies({"email": "someone@shop.test", "password": "a password"}, csrf_token))
    next_page = data.draw(st.one_of(st.just(""), hostile_text.map(url_quoted),
                                    st.sampled_from([value for value, _ in HOSTILE_NEXT])))
    note(f"POST /login?next={next_page[:200]} {body[:500]!r}")
    response = client.post(f"/login?next={next_page}", data=body,
                           content_type="application/x-www-form-urlencoded", environ_base=fresh_address())
    assert_no_server_error(response, "POST /login")


@PROPERTY
@given(data=st.data())
def test_hostile_password_links_and_sign_in_codes_never_get_5xx(app, data):
    """A password link's page and form with any token, and the sign-in code form, signed out."""
    client = app.test_client()
    path = data.draw(st.one_of(path_segments.map("/password/{}".format), st.just("/login/code")),
                     label="path")
    csrf_token = csrf_token_of(client.get("/login")) if data.draw(st.booleans()) else ""
    body = data.draw(form_bodies({"new_password": "a fresh passphrase today",
                                  "confirm": "a fresh passphrase today", "code": "123456"}, csrf_token))
    note(f"POST {path[:300]} {body[:500]!r}")
    assert_no_server_error(client.get(path), f"GET {path[:100]}")
    response = client.post(path, data=body, content_type="application/x-www-form-urlencoded",
                           environ_base=fresh_address())
    assert_no_server_error(response, f"POST {path[:100]}")


@pytest.mark.parametrize("pages", PAGES)
@PROPERTY
@given(data=st.data())
def test_hostile_page_requests_never_get_5xx(admin, pages, data):
    paths, parameters = PAGES[pages]
    path = data.draw(st.sampled_from(["", SANDBOX]), label="mode") + data.draw(paths, label="path")
    query = data.draw(query_strings(parameters), label="query")
    note(f"GET {path[:300]}?{query[:500]}")
    response = admin.client.get(path, query_string=query, headers=data.draw(htmx))
    assert_no_server_error(response, f"GET {path[:100]}")
