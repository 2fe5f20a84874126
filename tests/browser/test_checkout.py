"""The checkout page under its own Content-Security-Policy, in Chromium: the payer's decision
still reaches the merchant's SuccessUrl on another site."""
from __future__ import annotations

from playwright.sync_api import Page

from tests.conftest import payment_body


def test_approving_under_the_policy_lands_on_the_merchants_success_url(page: Page, server, sandbox):
    success = server.url.replace("127.0.0.1", "localhost") + "/healthz"  # another origin
    created = sandbox.post("/transactions", payment_body(successUrl=success)).json()
    refused = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    opened = page.goto(created["checkoutUrl"])
    assert "form-action 'self' https: http:;" in opened.headers["content-security-policy"]
    page.get_by_role("button", name="Approve payment").click()
    page.wait_for_url(success)
    assert refused == []
    assert sandbox.status(created["transactionId"])["Status"] == "Captured"
