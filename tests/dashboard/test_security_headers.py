"""Every HTML page carries the security headers (one policy, set app-wide); HSTS with secure cookies."""
from __future__ import annotations

import pytest
import requests

from tests.conftest import make_app, payment_body

PAGE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
               "object-src 'none'")
# The checkout's decision forms end at the merchant's redirect URLs, wherever those lead.
DECISION_POLICY = PAGE_POLICY.replace("form-action 'self'", "form-action 'self' https: http:")

# (page, its status, its policy); the dashboard pages are read signed in.
PAGES = [
    ("checkout page", 200, DECISION_POLICY),
    ("checkout of no payment", 404, PAGE_POLICY),
    ("checkout of a decided payment, posted again", 200, PAGE_POLICY),
    ("unknown page", 404, PAGE_POLICY),
    ("sign-in", 200, PAGE_POLICY),
    ("unusable password link", 404, PAGE_POLICY),
    ("transactions", 200, PAGE_POLICY),
    ("transaction of no payment", 404, PAGE_POLICY),
    ("webhook inbox", 200, PAGE_POLICY),
    ("overview", 200, PAGE_POLICY),
]


def _read(name: str, finance, sandbox) -> requests.Response:
    """The page as a browser gets it."""
    if name.startswith("checkout"):
        created = sandbox.post("/transactions", payment_body()).json()
        url = created["checkoutUrl"]
        if name == "checkout of no payment":
            return requests.get(url.rsplit("/", 1)[0] + "/PAY-0000000000000000", timeout=10)
        browser = requests.Session()
        answer = browser.get(url, timeout=10)
        if name == "checkout page":
            return answer
        token = answer.text.split('name="csrf_token" value="')[1].split('"')[0]
        browser.post(url, data={"decision": "approve", "csrf_token": token}, timeout=10)
        return browser.post(url, data={"decision": "approve", "csrf_token": token}, timeout=10)
    paths = {"unknown page": "/no-such-page", "sign-in": "/login",
             "unusable password link": "/password/no-such-link", "transactions": "/transactions",
             "transaction of no payment": "/transactions/PAY-0000000000000000",
             "webhook inbox": "/webhooks/inbox", "overview": "/overview"}
    if name in ("sign-in", "unusable password link"):
        return requests.get(finance.base_url + paths[name], timeout=10)
    return finance.get(paths[name])


@pytest.mark.parametrize("name, status, policy", PAGES, ids=[p[0] for p in PAGES])
def test_every_html_page_carries_the_security_headers(finance, sandbox, name, status, policy):
    answer = _read(name, finance, sandbox)
    assert answer.status_code == status
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    assert answer.headers["Content-Security-Policy"] == policy
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Referrer-Policy"] == "same-origin"
    assert "Strict-Transport-Security" not in answer.headers  # cookies are not HTTPS-only here


@pytest.mark.parametrize("path, status", [("/api/v1/payment-methods", 401), ("/healthz", 200)])
def test_json_answers_are_not_sniffed_and_carry_no_page_policy(server, path, status):
    answer = requests.get(server.url + path, timeout=10)
    assert (answer.status_code, answer.headers["Content-Type"]) == (status, "application/json")
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" not in answer.headers


@pytest.mark.parametrize("path", ["/login", "/no-such-page", "/api/v1/payment-methods", "/healthz"])
def test_secure_cookies_bring_strict_transport_security(sqlite_url, path):
    client = make_app(sqlite_url, SESSION_COOKIE_SECURE=True).test_client()
    answer = client.get(path, base_url="https://paydesk.test")
    assert answer.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
