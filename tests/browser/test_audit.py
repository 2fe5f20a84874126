"""The audit log tells what a sandbox reset removed instead of linking to a page that is gone."""
from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.dashboard.conftest import SANDBOX, add_user

from .conftest import sign_in


def test_a_refund_removed_by_a_sandbox_reset_is_not_a_dead_link(page: Page, server, merchant, sandbox):
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 10}).json()["refundTxNo"]
    assert sandbox.post("/sandbox/reset").status_code == 200
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    page.goto(f"{server.url}{SANDBOX}/audit")
    row = page.locator("tbody tr", has_text="Refund issued")
    expect(row).to_contain_text(f"{refund} removed by sandbox reset")
    expect(row.get_by_role("link", name=refund)).to_have_count(0)
    expect(page.locator('tbody tr .audit-action[data-action="sandbox.reset"]')).to_have_text("Sandbox reset")
