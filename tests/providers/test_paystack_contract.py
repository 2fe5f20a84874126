"""Every request the Paystack connector sends, checked by Prism against Paystack's OpenAPI document.

Prism answers a request that breaks the document with 422 (or the operation's 400) and the
violations in its `sl-violations` header; the session hook turns that into a test failure.
Prism's answers are schema placeholders ("string", 0), so these tests check requests, not
the mapping of answers (test_paystack.py does that with realistic bodies).
"""
from __future__ import annotations

from datetime import date
from urllib.parse import urlsplit

import pytest

from app.payments.model import Status
from app.payments.provider import Bank
from app.payments.reconcile import FetchedSettlement
from app.providers.paystack import PaystackConnector

from .fake_provider import LOOPBACK_GUARD
from .builders import MOBILE_MONEY, NG_PAYOUT, NOW, CARD, captured, payment, payout, refund_of


class ContractViolation(AssertionError):
    """Prism found the request does not match Paystack's OpenAPI document."""


@pytest.fixture
def paystack(prism):
    """The connector pointed at Prism; every answer is checked for violations, every call kept."""
    connector = PaystackConnector("sk_test_contract", base_url=prism, guard=LOOPBACK_GUARD)
    connector.calls = []
    send = connector.http.request

    def checked(method, url, **options):
        response = send(method, url, **options)
        path = urlsplit(url).path
        connector.calls.append((method, path))
        violations = response.headers.get("sl-violations")
        if violations or response.status in (401, 422):
            raise ContractViolation(f"{method} {url}: HTTP {response.status} "
                                    f"{violations or response.data[:300].decode('utf-8', 'replace')}")
        return response

    connector.http.request = checked
    return connector


def test_payment_initialize_matches_the_contract(paystack):
    outcome = paystack.create(payment(success_url="https://shop.example/paid"), CARD)

    assert outcome.status is Status.PENDING
    assert outcome.redirect_url
    assert paystack.calls == [("POST", "/transaction/initialize")]


def test_payment_verify_matches_the_contract(paystack):
    outcome = paystack.status(payment(), None, NOW)

    assert outcome.status is Status.PENDING  # Prism's placeholder word is not in the table
    assert paystack.calls == [("GET", "/transaction/verify/PAY-9F2C41D07A3B5E68")]


def test_refund_lookup_and_create_match_the_contract(paystack):
    original = captured()  # no Paystack id yet: the connector verifies the original first
    outcome = paystack.refund(refund_of(original, "2500.00"), original, NOW)

    assert outcome.status is Status.PENDING
    assert paystack.calls == [("GET", "/transaction/verify/PAY-9F2C41D07A3B5E68"), ("GET", "/refund"),
                              ("POST", "/refund")]


def test_refund_fetch_matches_the_contract(paystack):
    original = captured(provider_transaction_id="4099260516")
    outcome = paystack.status(refund_of(original, "2500.00", provider_transaction_id="15581137"),
                              original, NOW)

    assert outcome.status is Status.PENDING
    assert paystack.calls == [("GET", "/refund/15581137")]


@pytest.mark.parametrize("currency, country", [("NGN", "NG"), ("GHS", "GH"), ("KES", "KE"),
                                               ("ZAR", "ZA"), ("NGN", None)])
def test_bank_list_filters_match_the_contract(paystack, currency, country):
    banks = paystack.banks(NG_PAYOUT, currency, country)

    assert all(isinstance(bank, Bank) for bank in banks)  # Prism's placeholder bank is_deleted
    assert paystack.calls == [("GET", "/bank")]


def test_account_resolution_matches_the_contract(paystack):
    name = paystack.resolve_account("0123456785", "058")

    assert name  # Prism's placeholder name
    assert paystack.calls == [("GET", "/bank/resolve")]


@pytest.mark.parametrize("currency, method, bank", [
    ("NGN", NG_PAYOUT, "058"),
    ("GHS", NG_PAYOUT, "GH280100"),
    ("ZAR", NG_PAYOUT, "632005"),
    ("KES", MOBILE_MONEY, "MPESA"),
])
def test_payout_recipient_and_transfer_match_the_contract(paystack, currency, method, bank):
    outcome = paystack.create(payout(currency=currency, bank=bank), method)

    assert outcome.status is Status.PENDING
    assert paystack.calls == [("POST", "/transferrecipient"), ("POST", "/transfer")]


@pytest.mark.parametrize("currency, method, bank", [
    ("NGN", NG_PAYOUT, "058"),
    ("KES", MOBILE_MONEY, "MPESA"),
])
def test_bulk_transfers_match_the_contract(paystack, currency, method, bank):
    payouts = [payout("POU-7E3A9C1B5D2F4680", currency=currency, bank=bank),
               payout("POU-1B2C3D4E5F60718A", currency=currency, bank=bank, account="0123456780")]

    outcomes = paystack.send_transfers(payouts, method)

    # Prism's placeholder answer lists no transfer of ours: both stay Pending, to be asked again.
    assert {outcome.status for outcome in outcomes.values()} == {Status.PENDING}
    assert paystack.calls == [("POST", "/transferrecipient"), ("POST", "/transferrecipient"),
                              ("POST", "/transfer/bulk")]


def test_transfer_verify_matches_the_contract(paystack):
    outcome = paystack.status(payout(), None, NOW)

    assert outcome.status is Status.PENDING
    assert paystack.calls == [("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680")]


def test_cancel_and_test_connection_match_the_contract(paystack):
    assert paystack.cancel(payment()).status is Status.PENDING
    assert paystack.test_connection() == "Connected to Paystack"
    assert paystack.calls == [("GET", "/transaction/verify/PAY-9F2C41D07A3B5E68"), ("GET", "/balance")]


def test_settlement_list_and_transactions_match_the_contract(paystack):
    settlements = paystack.settlements()  # Prism's placeholder data is no list: nothing to store
    lines = paystack.with_lines(FetchedSettlement("8610870", date(2026, 11, 26), "NGN", 0, 0, 0, "success"))

    assert settlements == [] and lines.lines == []
    assert paystack.calls == [("GET", "/settlement"), ("GET", "/settlement/8610870/transactions")]


def test_a_request_that_breaks_the_contract_fails_the_test(paystack):
    """The check itself can fail: an amount as a string is refused by Paystack's document."""
    with pytest.raises(ContractViolation, match="amount must be integer"):
        paystack._request("POST", "/transaction/initialize",
                          json={"email": "ada@example.com", "amount": "10500"})


@pytest.mark.parametrize("evidence", [
    {"customerName": "Ada Obi", "customerEmail": "ada@example.com", "customerPhone": "08012345678",
     "productDescription": "Two cups"},
    {"customerName": "Ada Obi", "customerEmail": "ada@example.com", "customerPhone": "08012345678",
     "productDescription": "Two cups", "refundPolicy": "30 days", "uncategorizedText": "Delivered",
     "shippingAddress": "1 Marina, Lagos", "serviceDate": "2026-11-20"},
])
def test_dispute_evidence_matches_the_contract(paystack, evidence):
    facts = paystack.submit_dispute_evidence("2867", evidence, "DSP-1-evidence")

    assert (facts.provider_dispute_id, facts.status.value) == ("2867", "under_review")
    assert paystack.calls == [("POST", "/dispute/2867/evidence")]


def test_dispute_fetch_matches_the_contract(paystack):
    facts = paystack.dispute_status("2867")

    assert facts.status is None  # Prism's placeholder word is not in the table
    assert paystack.calls == [("GET", "/dispute/2867")]
