"""The audit log's links to transactions, and what it says of those a sandbox reset removed."""
from __future__ import annotations

import re

import pytest

from tests.conftest import payment_body

from .conftest import SANDBOX, switch_to_sandbox


@pytest.fixture
def sandbox_support(dashboard, merchant):
    client = dashboard(merchant.merchant_id, "support")
    switch_to_sandbox(client)
    return client


def _target_cell(page: str, action: str) -> str:
    """The Target cell of the newest entry of this action."""
    row = re.search(rf'data-action="{re.escape(action)}">[^<]*</span></td>\s*<td[^>]*>(.*?)</td>', page, re.S)
    assert row, f"no {action} entry"
    return row.group(1)


def _refund(sandbox, tx_no: str, amount=10) -> str:
    refunded = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": amount})
    assert refunded.status_code == 200, refunded.text
    return refunded.json()["refundTxNo"]


def test_entries_link_to_their_transactions(sandbox, sandbox_support):
    refund = _refund(sandbox, "SBX-CAPTURED")
    cell = _target_cell(sandbox_support.get("/audit").text, "refund.create")
    assert cell == f'<a class="mono" href="{SANDBOX}/transactions/{refund}">{refund}</a>'


def test_a_refund_removed_by_a_sandbox_reset_is_named_without_a_dead_link(sandbox, sandbox_support):
    refund = _refund(sandbox, "SBX-CAPTURED")
    assert sandbox.post("/sandbox/reset").status_code == 200
    page = sandbox_support.get("/audit").text
    assert _target_cell(page, "refund.create") == (
        f'<span class="mono">{refund}</span> <span class="block small muted">removed by sandbox reset</span>')
    assert f'href="{SANDBOX}/transactions/{refund}"' not in page
    assert sandbox_support.get(f"/transactions/{refund}").status_code == 404  # the link would have been dead


def test_a_test_transaction_named_before_a_reset_says_it_was_reset_since(sandbox, sandbox_support):
    assert sandbox.post("/transactions", payment_body()).status_code == 200
    cancelled = sandbox.post("/transactions/SBX-PENDING/cancel", {})
    assert cancelled.status_code == 200, cancelled.text
    before = _target_cell(sandbox_support.get("/audit").text, "payment.cancel")
    assert before == f'<a class="mono" href="{SANDBOX}/transactions/SBX-PENDING">SBX-PENDING</a>'
    assert sandbox.post("/sandbox/reset").status_code == 200
    after = _target_cell(sandbox_support.get("/audit").text, "payment.cancel")
    assert after == (f'<a class="mono" href="{SANDBOX}/transactions/SBX-PENDING">SBX-PENDING</a> '
                     '<span class="block small muted">reset to its starting state since</span>')


def test_a_reset_leaves_the_entries_of_other_sandbox_transactions_alone(sandbox, sandbox_support):
    payment = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{payment}/outcome", {"status": "Captured"}).status_code == 200
    refund = _refund(sandbox, payment)
    assert sandbox.post("/sandbox/reset").status_code == 200
    cell = _target_cell(sandbox_support.get("/audit").text, "refund.create")
    assert cell == f'<a class="mono" href="{SANDBOX}/transactions/{refund}">{refund}</a>'
