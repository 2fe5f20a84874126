"""The Paystack connector against a fake Paystack answering as its documentation shows."""
from __future__ import annotations

import logging
import time

import pytest

from app.payments.model import Status
from app.payments.provider import AccountNotResolved, Bank, BankListError, ProviderUnavailable
from app.providers.http import ProviderRejected, Timeouts
from app.providers.paystack import PaystackConnector

from .builders import CARD, MOBILE_MONEY, NG_PAYOUT, NOW, captured, payment, payout, refund_of
from .fake_provider import LOOPBACK_GUARD, Answer

SECRET = "sk_test_4f1c0b9e2a7d4c1e8b6a3f5d9e0c2b7a1d4e6f80"
TX_NO = "PAY-9F2C41D07A3B5E68"


def paystack_on(fake, read_timeout: float) -> PaystackConnector:
    """The connector on the fake Paystack, giving up on an answer after `read_timeout` seconds."""
    return PaystackConnector(SECRET, base_url=fake.url, guard=LOOPBACK_GUARD,
                             timeouts=Timeouts(connect=1, read=read_timeout),
                             return_url="https://paydesk.example/checkout/{tx_no}/return")


@pytest.fixture
def paystack(fake):
    """The connector on the fake Paystack. Its read timeout is wide: a loaded 2-core machine can
    stall a loopback answer for half a second, and only the timeout test wants it to fire."""
    return paystack_on(fake, read_timeout=10)


def verify_body(status: str, gateway_response: str, **data) -> dict:
    """GET /transaction/verify/:reference as Paystack answers it."""
    return {"status": True, "message": "Verification successful", "data": {
        "id": 4099260516, "domain": "test", "status": status, "reference": TX_NO,
        "receipt_number": None, "amount": 1050000, "message": None,
        "gateway_response": gateway_response, "paid_at": "2026-11-23T10:03:12.000Z",
        "created_at": "2026-11-23T10:00:01.000Z", "channel": "card", "currency": "NGN",
        "ip_address": "102.89.34.12", "metadata": {"txNo": TX_NO}, "fees": 25750,
        "authorization": {"authorization_code": "AUTH_uh8bcl3zbn", "bin": "408408", "last4": "4081",
                          "exp_month": "12", "exp_year": "2030", "channel": "card", "card_type": "visa ",
                          "bank": "TEST BANK", "country_code": "NG", "brand": "visa", "reusable": True},
        "customer": {"id": 181873746, "email": "ada@example.com", "customer_code": "CUS_1rkzaqsv4rrhqo6"},
        **data,
    }}


REFUSED_REFERENCE = Answer(400, {"status": False, "message": "Transaction reference not found",
                                 "type": "validation_error", "code": "transaction_not_found"})


class TestCheckout:
    def test_initialize_sends_minor_units_and_the_tx_no_as_reference(self, paystack, fake):
        fake.on("POST", "/transaction/initialize", {
            "status": True, "message": "Authorization URL created",
            "data": {"authorization_url": "https://checkout.paystack.com/0peioxfhpn",
                     "access_code": "0peioxfhpn", "reference": TX_NO}})

        outcome = paystack.create(payment(amount="10500.50"), CARD)

        sent = fake.requests_to("POST", "/transaction/initialize")[0]
        assert sent.header("Authorization") == f"Bearer {SECRET}"
        assert sent.json == {"email": "ada@example.com", "amount": 1050050, "currency": "NGN",
                             "reference": TX_NO, "metadata": {"txNo": TX_NO, "reference": "order-3b5e68"},
                             "callback_url": f"https://paydesk.example/checkout/{TX_NO}/return"}
        assert outcome.status is Status.PENDING
        assert outcome.provider_message == "Authorization URL created"
        assert outcome.redirect_url == "https://checkout.paystack.com/0peioxfhpn"

    def test_without_paydesks_return_page_the_success_url_is_the_callback(self, fake):
        fake.on("POST", "/transaction/initialize", {
            "status": True, "message": "Authorization URL created",
            "data": {"authorization_url": "https://checkout.paystack.com/x", "access_code": "x",
                     "reference": TX_NO}})
        connector = PaystackConnector(SECRET, base_url=fake.url, guard=LOOPBACK_GUARD)

        connector.create(payment(success_url="https://shop.example/paid"), CARD)

        assert fake.seen[0].json["callback_url"] == "https://shop.example/paid"

    def test_a_repeated_initialize_of_an_unpaid_payment_fails_it_since_its_page_is_lost(self, paystack, fake):
        # The first initialize was taken but its answer (the authorization_url) never arrived;
        # no Paystack call gives the page again, so the customer could never pay this one.
        fake.on("POST", "/transaction/initialize", Answer(400, {
            "status": False, "message": "Duplicate Transaction Reference",
            "meta": {"nextStep": "Try and create the Transaction or Charge with a new reference"},
            "type": "validation_error", "code": "duplicate_reference"}))
        fake.on("GET", f"/transaction/verify/{TX_NO}",
                verify_body("abandoned", "The transaction was not completed"))

        outcome = paystack.create(payment(), CARD)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert outcome.provider_status == "abandoned"
        assert outcome.provider_transaction_id == "4099260516"
        assert outcome.provider_message == (
            "Paystack has this payment's reference, but its payment page was lost with an earlier "
            "answer; create a new payment")

    def test_a_repeated_initialize_of_a_paid_payment_answers_it_paid(self, paystack, fake):
        fake.on("POST", "/transaction/initialize", Answer(400, {
            "status": False, "message": "Duplicate Transaction Reference", "type": "validation_error",
            "code": "duplicate_reference"}))
        fake.on("GET", f"/transaction/verify/{TX_NO}", verify_body("success", "Approved"))

        outcome = paystack.create(payment(), CARD)

        assert (outcome.status, outcome.provider_transaction_id) == (Status.CAPTURED, "4099260516")

    def test_a_refused_initialize_fails_with_paystacks_message(self, paystack, fake):
        fake.on("POST", "/transaction/initialize", Answer(400, {
            "status": False, "message": "Invalid Email Address Passed", "type": "validation_error",
            "code": "invalid_params"}))
        fake.on("GET", f"/transaction/verify/{TX_NO}", REFUSED_REFERENCE)

        outcome = paystack.create(payment(), CARD)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert outcome.provider_message == "Invalid Email Address Passed"

    def test_an_invalid_key_fails_the_payment(self, paystack, fake):
        fake.on("POST", "/transaction/initialize", Answer(401, {"status": False, "message": "Invalid key"}))
        fake.on("GET", f"/transaction/verify/{TX_NO}", Answer(401, {"status": False, "message": "Invalid key"}))

        outcome = paystack.create(payment(), CARD)

        assert (outcome.status, outcome.provider_message) == (Status.FAILED, "Invalid key")


class TestUnavailable:
    @pytest.mark.parametrize("answer", [
        Answer(500, {"status": False, "message": "An error occurred"}),
        Answer(502, "<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
        Answer(503, b""),
        Answer(429, {"status": False, "message": "Too many requests"}),
    ], ids=["500", "502-html", "503-empty", "429"])
    def test_server_errors_leave_it_pending(self, paystack, fake, answer):
        fake.on("POST", "/transaction/initialize", answer)

        with pytest.raises(ProviderUnavailable, match=f"HTTP {answer.status}"):
            paystack.create(payment(), CARD)

    def test_a_read_timeout_leaves_it_pending(self, fake):
        paystack = paystack_on(fake, read_timeout=0.5)
        fake.on("GET", f"/transaction/verify/{TX_NO}", Answer(body=verify_body("success", "Approved"),
                                                              delay=2))
        started = time.monotonic()

        with pytest.raises(ProviderUnavailable, match="did not answer in time"):
            paystack.status(payment(), None, NOW)
        assert time.monotonic() - started < 1.5

    def test_a_closed_port_leaves_it_pending(self, fake):
        from tests.support.servers import free_port
        connector = PaystackConnector(SECRET, base_url=f"http://127.0.0.1:{free_port()}",
                                    guard=LOOPBACK_GUARD)

        with pytest.raises(ProviderUnavailable, match="could not be reached"):
            connector.status(payment(), None, NOW)

    def test_a_refused_status_question_leaves_it_pending(self, paystack, fake):
        fake.on("GET", f"/transaction/verify/{TX_NO}", Answer(401, {"status": False, "message": "Invalid key"}))

        with pytest.raises(ProviderUnavailable, match="Invalid key"):
            paystack.status(payment(), None, NOW)


class TestVerify:
    def test_success_is_captured_with_paystacks_id(self, paystack, fake):
        fake.on("GET", f"/transaction/verify/{TX_NO}", verify_body("success", "Approved"))

        outcome = paystack.status(payment(), None, NOW)

        assert (outcome.status, outcome.provider_transaction_id) == (Status.CAPTURED, "4099260516")
        assert (outcome.provider_status, outcome.provider_message) == ("success", "Approved")

    @pytest.mark.parametrize("gateway_response, code, reason", [
        ("Insufficient Funds", None, "Insufficient Funds"),
        ("Expired Card", None, "Card Expired"),
        ("Incorrect PIN", None, "Invalid Card Details"),
        ("Transaction Not Permitted to Cardholder", None, "Restricted Card"),
        ("Declined", None, "Declined By Bank"),
        ("Do Not Honor", "do_not_honor", "Declined By Bank"),
        ("Card declined by the issuer", "insufficient_funds", "Insufficient Funds"),
        ("Transaction failed", None, "Declined By Bank"),
    ])
    def test_failed_is_declined_for_the_reason_paystack_gives(self, paystack, fake, gateway_response,
                                                               code, reason):
        fake.on("GET", f"/transaction/verify/{TX_NO}",
                verify_body("failed", gateway_response, gateway_response_code=code))

        outcome = paystack.status(payment(), None, NOW)

        assert (outcome.status, outcome.decline_reason) == (Status.DECLINED, reason)
        assert outcome.provider_message == gateway_response

    @pytest.mark.parametrize("word", ["abandoned", "ongoing", "reversed", "awaiting_review"])
    def test_other_words_stay_pending_with_paystacks_words(self, paystack, fake, word):
        fake.on("GET", f"/transaction/verify/{TX_NO}", verify_body(word, "The transaction was not completed"))

        outcome = paystack.status(payment(), None, NOW)

        assert (outcome.status, outcome.provider_status) == (Status.PENDING, word)
        assert outcome.provider_message == "The transaction was not completed"


def refund_body(status: str, note: str = "Paydesk refund RFD-0A1B2C3D4E5F6789", **data) -> dict:
    """A Paystack refund object."""
    return {"integration": 463433, "transaction": 4099260516, "dispute": None, "settlement": None,
            "id": 15581137, "domain": "test", "currency": "NGN", "amount": 250000, "status": status,
            "refunded_at": None, "refunded_by": "ops@merchant.example", "customer_note": "",
            "merchant_note": note, "deducted_amount": 0, "fully_deducted": 0,
            "createdAt": "2026-11-23T10:10:00.000Z", "transaction_reference": TX_NO, **data}


class TestRefund:
    def test_a_partial_refund_is_posted_with_the_amount_and_our_note(self, paystack, fake):
        original = captured(provider_transaction_id="4099260516")
        fake.on("GET", "/refund", {"status": True, "message": "Refunds retrieved", "data": [],
                                   "meta": {"total": 0, "skipped": 0, "perPage": 100, "page": 1}})
        fake.on("POST", "/refund", {"status": True, "message": "Refund has been queued for processing",
                                    "data": refund_body("pending", expected_at="2026-12-03T10:10:00.000Z")})

        outcome = paystack.refund(refund_of(original, "2500.00"), original, NOW)

        listed = fake.requests_to("GET", "/refund")[0]
        assert listed.query == {"transaction": ["4099260516"], "currency": ["NGN"], "perPage": ["100"]}
        assert fake.requests_to("POST", "/refund")[0].json == {
            "transaction": TX_NO, "amount": 250000, "currency": "NGN",
            "merchant_note": "Paydesk refund RFD-0A1B2C3D4E5F6789"}
        assert (outcome.status, outcome.provider_transaction_id) == (Status.PENDING, "15581137")
        assert outcome.provider_message == "Refund has been queued for processing"

    def test_a_repeated_refund_finds_the_first_instead_of_refunding_twice(self, paystack, fake):
        original = captured(provider_transaction_id="4099260516")
        fake.on("GET", "/refund", {"status": True, "message": "Refunds retrieved", "data": [
            refund_body("processed", note="Paydesk refund RFD-1111111111111111", id=15581000),
            refund_body("processed"),
        ]})

        outcome = paystack.refund(refund_of(original, "2500.00"), original, NOW)

        assert fake.requests_to("POST", "/refund") == []
        assert (outcome.status, outcome.provider_transaction_id) == (Status.CAPTURED, "15581137")

    def test_an_original_without_paystacks_id_is_verified_first(self, paystack, fake):
        original = captured()
        fake.on("GET", f"/transaction/verify/{TX_NO}", verify_body("success", "Approved"))
        fake.on("GET", "/refund", {"status": True, "message": "Refunds retrieved", "data": []})
        fake.on("POST", "/refund", {"status": True, "message": "Refund has been queued for processing",
                                    "data": refund_body("processing")})

        outcome = paystack.refund(refund_of(original, "2500.00"), original, NOW)

        assert fake.requests_to("GET", "/refund")[0].query["transaction"] == ["4099260516"]
        assert outcome.status is Status.PENDING

    def test_a_refused_refund_fails_with_paystacks_message(self, paystack, fake):
        original = captured(provider_transaction_id="4099260516")
        fake.on("GET", "/refund", {"status": True, "message": "Refunds retrieved", "data": []})
        fake.on("POST", "/refund", Answer(400, {"status": False, "message": "Transaction has been fully reversed",
                                                "type": "validation_error", "code": "transaction_reversed"}))

        outcome = paystack.refund(refund_of(original, "2500.00"), original, NOW)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert outcome.provider_message == "Transaction has been fully reversed"

    @pytest.mark.parametrize("word, status", [("processed", Status.CAPTURED), ("failed", Status.FAILED),
                                              ("processing", Status.PENDING),
                                              ("needs-attention", Status.PENDING)])
    def test_refund_status_is_fetched_by_paystacks_refund_id(self, paystack, fake, word, status):
        original = captured(provider_transaction_id="4099260516")
        fake.on("GET", "/refund/15581137", {"status": True, "message": "Refund retrieved",
                                            "data": refund_body(word)})

        outcome = paystack.status(refund_of(original, "2500.00", provider_transaction_id="15581137"),
                                  original, NOW)

        assert (outcome.status, outcome.provider_status) == (status, word)


def recipient_answer(recipient_type: str = "nuban") -> Answer:
    """POST /transferrecipient: 201 with the recipient (an existing one for a known account)."""
    return Answer(201, {"status": True, "message": "Transfer recipient created successfully", "data": {
        "active": True, "createdAt": "2026-11-23T10:20:00.000Z", "currency": "NGN", "domain": "test",
        "id": 6788170, "integration": 463433, "name": "Ada Obi", "recipient_code": "RCP_t0ya41mp35flk40",
        "type": recipient_type, "updatedAt": "2026-11-23T10:20:00.000Z", "is_deleted": False,
        "details": {"authorization_code": None, "account_number": "0123456789", "account_name": None,
                    "bank_code": "058", "bank_name": "Guaranty Trust Bank"}}})


def transfer_body(status: str, message: str, **data) -> dict:
    """POST /transfer and GET /transfer/verify as Paystack answers them."""
    return {"status": True, "message": message, "data": {
        "integration": 463433, "domain": "test", "amount": 2500000, "currency": "NGN",
        "source": "balance", "reason": "order-2f4680", "recipient": 6788170, "status": status,
        "transfer_code": "TRF_vsyqdmlzble3uii", "id": 24226816, "reference": "pou-7e3a9c1b5d2f4680",
        "createdAt": "2026-11-23T10:20:01.000Z", "updatedAt": "2026-11-23T10:20:01.000Z", **data}}


class TestPayout:
    def test_a_payout_creates_the_recipient_then_a_transfer_keyed_by_our_tx_no(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer", transfer_body("pending", "Transfer has been queued"))

        outcome = paystack.create(payout(), NG_PAYOUT)

        assert fake.requests_to("POST", "/transferrecipient")[0].json == {
            "type": "nuban", "name": "Ada Obi", "account_number": "0123456789", "bank_code": "058",
            "currency": "NGN"}
        assert fake.requests_to("POST", "/transfer")[0].json == {
            "source": "balance", "amount": 2500000, "recipient": "RCP_t0ya41mp35flk40",
            "reference": "pou-7e3a9c1b5d2f4680", "currency": "NGN", "reason": "order-2f4680"}
        assert (outcome.status, outcome.provider_transaction_id) == (Status.PENDING, "TRF_vsyqdmlzble3uii")
        assert outcome.provider_message == "Transfer has been queued"

    def test_a_transfer_waiting_for_its_otp_stays_pending_with_paystacks_message(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer", transfer_body("otp", "Transfer requires OTP to continue"))

        outcome = paystack.create(payout(), NG_PAYOUT)

        assert (outcome.status, outcome.provider_status) == (Status.PENDING, "otp")
        assert outcome.provider_message == "Transfer requires OTP to continue"

    def test_mobile_money_payouts_use_the_mobile_money_recipient_type(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer("mobile_money"))
        fake.on("POST", "/transfer", transfer_body("pending", "Transfer has been queued"))

        paystack.create(payout(currency="KES", account="254710000000", bank="MPESA"), MOBILE_MONEY)

        assert fake.seen[0].json["type"] == "mobile_money"

    def test_a_repeated_transfer_answers_where_the_first_one_stands(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer", Answer(400, {"status": False, "message": "Duplicate Transfer Reference",
                                                  "type": "validation_error", "code": "duplicate_reference"}))
        fake.on("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680", transfer_body("success", "Transfer retrieved"))

        outcome = paystack.create(payout(), NG_PAYOUT)

        assert outcome.status is Status.CAPTURED

    def test_a_refused_transfer_fails_with_paystacks_message(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer", Answer(400, {
            "status": False, "message": "Your balance is not enough to fulfil this request",
            "type": "api_error", "code": "insufficient_balance"}))
        fake.on("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680",
                Answer(404, {"status": False, "message": "Transfer not found"}))

        outcome = paystack.create(payout(), NG_PAYOUT)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Provider Error")
        assert outcome.provider_message == "Your balance is not enough to fulfil this request"

    def test_a_currency_paystack_cannot_pay_out_in_is_refused_without_a_call(self, paystack, fake):
        outcome = paystack.create(payout(currency="EUR", account="DE89370400440532013000"), NG_PAYOUT)

        assert (outcome.status, outcome.decline_reason) == (Status.FAILED, "Currency Not Supported")
        assert fake.seen == []

    @pytest.mark.parametrize("word, status, reason", [
        ("success", Status.CAPTURED, None),
        ("reversed", Status.DECLINED, "Declined By Bank"),
        ("failed", Status.FAILED, "Provider Error"),
        ("abandoned", Status.DECLINED, "Transaction Expired"),
        ("otp", Status.PENDING, None),
    ])
    def test_transfer_status_is_verified_by_our_reference(self, paystack, fake, word, status, reason):
        fake.on("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680", transfer_body(word, "Transfer retrieved"))

        outcome = paystack.status(payout(), None, NOW)

        assert (outcome.status, outcome.decline_reason) == (status, reason)

    def test_an_account_number_in_paystacks_message_is_not_logged(self, paystack, fake, caplog):
        caplog.set_level(logging.DEBUG)
        fake.on("POST", "/transferrecipient", Answer(400, {
            "status": False, "message": "Account number 0123456789 could not be resolved for bank 058",
            "type": "validation_error", "code": "invalid_bank_account"}))
        fake.on("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680",
                Answer(404, {"status": False, "message": "Transfer not found"}))

        outcome = paystack.create(payout(account="0123456789"), NG_PAYOUT)

        assert outcome.status is Status.FAILED
        assert "Account number ****6789 could not be resolved" in caplog.text
        assert "0123456789" not in caplog.text

    def test_neither_the_secret_nor_the_account_number_is_logged(self, paystack, fake, caplog):
        caplog.set_level(logging.DEBUG)
        fake.on("POST", "/transferrecipient", Answer(500, {"status": False, "message": "An error occurred"}))

        with pytest.raises(ProviderUnavailable):
            paystack.create(payout(account="0123456789"), NG_PAYOUT)

        assert "An error occurred" in caplog.text
        assert "0123456789" not in caplog.text
        assert SECRET not in caplog.text
        assert SECRET not in repr(paystack)


def bank(code: str, name: str, **row) -> dict:
    """A row of GET /bank."""
    return {"id": int(code) if code.isdigit() else 1, "name": name, "slug": name.lower().replace(" ", "-"),
            "code": code, "longcode": code, "gateway": "", "pay_with_bank": False, "supports_transfer": True,
            "available_for_direct_debit": False, "active": True, "country": "Nigeria", "currency": "NGN",
            "type": "nuban", "is_deleted": False, "createdAt": "2016-07-14T10:04:29.000Z",
            "updatedAt": "2024-02-16T09:42:25.000Z", **row}


class TestBanks:
    def test_banks_follow_the_cursor_and_keep_only_those_that_take_transfers(self, paystack, fake):
        fake.on("GET", "/bank",
                {"status": True, "message": "Banks retrieved",
                 "data": [bank("058", "Guaranty Trust Bank"), bank("044", "Access Bank"),
                          bank("999", "Closed Bank", active=False)],
                 "meta": {"next": "YmFuazoxNjk=", "previous": None, "perPage": 100}},
                {"status": True, "message": "Banks retrieved",
                 "data": [bank("120001", "9mobile 9Payment Service Bank"),
                          bank("50211", "Kuda Bank", supports_transfer=False), bank("058", "Guaranty Trust Bank")],
                 "meta": {"next": None, "previous": "YmFuazoxNjk=", "perPage": 100}})

        banks = paystack.banks(NG_PAYOUT, "NGN", "NG")

        assert banks == [Bank("120001", "9mobile 9Payment Service Bank"), Bank("044", "Access Bank"),
                         Bank("058", "Guaranty Trust Bank")]
        first, second = fake.requests_to("GET", "/bank")
        assert first.query == {"country": ["nigeria"], "currency": ["NGN"], "perPage": ["100"],
                               "use_cursor": ["true"]}
        assert second.query["next"] == ["YmFuazoxNjk="]

    def test_a_currency_without_paystack_banks_is_a_bank_list_error(self, paystack, fake):
        with pytest.raises(BankListError, match="Currency EUR is not supported"):
            paystack.banks(NG_PAYOUT, "EUR", None)
        assert fake.seen == []

    def test_a_country_that_does_not_use_the_currency_is_a_bank_list_error(self, paystack):
        with pytest.raises(BankListError, match="Country GH is not supported"):
            paystack.banks(NG_PAYOUT, "NGN", "GH")


class TestResolveAccount:
    def test_an_account_resolves_to_its_holders_name_at_the_bank(self, paystack, fake):
        fake.on("GET", "/bank/resolve", {"status": True, "message": "Account number resolved", "data": {
            "account_number": "0001234567", "account_name": "DOE JANE MARY ", "bank_id": 9}})

        assert paystack.resolve_account("0001234567", "058") == "DOE JANE MARY"
        [seen] = fake.requests_to("GET", "/bank/resolve")
        assert seen.query == {"account_number": ["0001234567"], "bank_code": ["058"]}
        assert seen.header("Authorization") == f"Bearer {SECRET}"

    def test_an_account_paystack_cannot_find_is_not_resolved_in_its_words(self, paystack, fake):
        fake.on("GET", "/bank/resolve", Answer(422, {
            "status": False, "message": "Could not resolve account name. Check parameters or try again.",
            "meta": {"nextStep": "Ensure that you're passing the correct bank code and account number"},
            "type": "api_error", "code": "unknown"}))

        with pytest.raises(AccountNotResolved) as refused:
            paystack.resolve_account("0000000001", "058")
        assert refused.value.message == "Could not resolve account name. Check parameters or try again."

    @pytest.mark.parametrize("answer", [
        Answer(401, {"status": False, "message": "Invalid key"}),
        Answer(502, "Bad gateway", content_type="text/plain"),
        {"status": True, "message": "Account number resolved", "data": {"account_number": "0001234567"}},
    ])
    def test_a_refused_key_a_failure_or_no_name_is_no_answer_about_the_account(self, paystack, fake, answer):
        fake.on("GET", "/bank/resolve", answer)
        with pytest.raises(ProviderUnavailable):
            paystack.resolve_account("0001234567", "058")


class TestCancelAndConnection:
    def test_cancel_reports_where_the_payment_stands_since_paystack_has_no_void(self, paystack, fake):
        fake.on("GET", f"/transaction/verify/{TX_NO}",
                verify_body("abandoned", "The transaction was not completed"))

        outcome = paystack.cancel(payment())

        assert (outcome.status, outcome.provider_status) == (Status.PENDING, "abandoned")
        assert [(s.method, s.path) for s in fake.seen] == [("GET", f"/transaction/verify/{TX_NO}")]

    def test_test_connection_answers_in_fixed_words(self, paystack, fake):
        fake.on("GET", "/balance", {"status": True, "message": "Balances retrieved",
                                    "data": [{"currency": "NGN", "balance": 1234500}]})

        assert paystack.test_connection() == "Connected to Paystack"

    def test_test_connection_with_a_bad_key_raises_paystacks_refusal(self, paystack, fake):
        fake.on("GET", "/balance", Answer(401, {"status": False, "message": "Invalid key"}))

        with pytest.raises(ProviderRejected, match="Invalid key"):
            paystack.test_connection()


def bulk_answer(*transfers: tuple[str, int, str], message: str = "2 transfers queued.") -> dict:
    """POST /transfer/bulk as Paystack answers it (TransferBulkResponse): each transfer's
    reference, recipient, amount, transfer code, currency and status."""
    return {"status": True, "message": message, "data": [
        {"reference": reference, "recipient": "RCP_t0ya41mp35flk40", "amount": amount,
         "transfer_code": f"TRF_{reference[-8:]}", "currency": "NGN", "status": status}
        for reference, amount, status in transfers]}


FIRST, SECOND = "POU-7E3A9C1B5D2F4680", "POU-1B2C3D4E5F60718A"


class TestBulkTransfers:
    def test_two_payouts_go_in_one_bulk_request_each_with_its_own_reference(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer/bulk", bulk_answer(("pou-7e3a9c1b5d2f4680", 2500000, "received"),
                                                      ("pou-1b2c3d4e5f60718a", 1250000, "success")))

        outcomes = paystack.send_transfers(
            [payout(FIRST), payout(SECOND, amount="12500.00", reference="order-18a")], NG_PAYOUT)

        # One recipient for the one account; one bulk request for both transfers.
        assert [seen.json for seen in fake.requests_to("POST", "/transferrecipient")] == [{
            "type": "nuban", "name": "Ada Obi", "account_number": "0123456789", "bank_code": "058",
            "currency": "NGN"}]
        assert [seen.json for seen in fake.requests_to("POST", "/transfer/bulk")] == [{
            "currency": "NGN", "source": "balance", "transfers": [
                {"amount": 2500000, "recipient": "RCP_t0ya41mp35flk40", "reference": "pou-7e3a9c1b5d2f4680",
                 "reason": "order-2f4680"},
                {"amount": 1250000, "recipient": "RCP_t0ya41mp35flk40", "reference": "pou-1b2c3d4e5f60718a",
                 "reason": "order-18a"}]}]
        assert fake.requests_to("POST", "/transfer") == []
        assert {tx_no: (o.status, o.provider_transaction_id, o.provider_status, o.provider_message)
                for tx_no, o in outcomes.items()} == {
            FIRST: (Status.PENDING, "TRF_5d2f4680", "received", "2 transfers queued."),
            SECOND: (Status.CAPTURED, "TRF_5f60718a", "success", "2 transfers queued.")}

    def test_a_refused_bulk_is_sent_again_one_transfer_at_a_time(self, paystack, fake):
        # The first payout's transfer went out before (its answer lost): Paystack refuses the
        # bulk for its reference. Singly, the first is verified where it stands, the second sent.
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer/bulk", Answer(400, {
            "status": False, "message": "Duplicate Transfer Reference", "type": "validation_error",
            "code": "duplicate_reference"}))
        fake.on("POST", "/transfer",
                Answer(400, {"status": False, "message": "Duplicate Transfer Reference",
                             "type": "validation_error", "code": "duplicate_reference"}),
                transfer_body("pending", "Transfer has been queued", reference="pou-1b2c3d4e5f60718a"))
        fake.on("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680", transfer_body("success", "Transfer retrieved"))

        outcomes = paystack.send_transfers([payout(FIRST), payout(SECOND)], NG_PAYOUT)

        assert [seen.json["reference"] for seen in fake.requests_to("POST", "/transfer")] == [
            "pou-7e3a9c1b5d2f4680", "pou-1b2c3d4e5f60718a"]
        assert {tx_no: o.status for tx_no, o in outcomes.items()} == {
            FIRST: Status.CAPTURED, SECOND: Status.PENDING}
        assert outcomes[SECOND].provider_status == "pending"

    def test_a_transfer_the_answer_does_not_list_stays_pending_and_unopened(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer/bulk", bulk_answer(("pou-7e3a9c1b5d2f4680", 2500000, "received"),
                                                      message="1 transfers queued."))

        outcomes = paystack.send_transfers([payout(FIRST), payout(SECOND)], NG_PAYOUT)

        missing = outcomes[SECOND]
        assert (missing.status, missing.provider_transaction_id, missing.provider_status) == (
            Status.PENDING, None, None)
        assert missing.provider_message == "Paystack's bulk answer did not list this transfer; Paydesk asks again"

    def test_a_refused_recipient_fails_its_payouts_only(self, paystack, fake):
        fake.on("POST", "/transferrecipient", Answer(400, {
            "status": False, "message": "Cannot resolve account", "type": "validation_error",
            "code": "invalid_bank_account"}), recipient_answer())
        fake.on("GET", "/transfer/verify/pou-7e3a9c1b5d2f4680",
                Answer(404, {"status": False, "message": "Transfer not found"}))
        fake.on("POST", "/transfer/bulk", bulk_answer(("pou-1b2c3d4e5f60718a", 2500000, "received"),
                                                      message="1 transfers queued."))

        outcomes = paystack.send_transfers([payout(FIRST, account="0000000000"), payout(SECOND)], NG_PAYOUT)

        assert (outcomes[FIRST].status, outcomes[FIRST].decline_reason,
                outcomes[FIRST].provider_message) == (Status.FAILED, "Provider Error", "Cannot resolve account")
        assert outcomes[SECOND].status is Status.PENDING
        [bulk] = fake.requests_to("POST", "/transfer/bulk")
        assert [t["reference"] for t in bulk.json["transfers"]] == ["pou-1b2c3d4e5f60718a"]

    def test_payouts_in_two_currencies_make_two_bulk_requests(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer/bulk", bulk_answer(("pou-7e3a9c1b5d2f4680", 2500000, "received")),
                bulk_answer(("pou-1b2c3d4e5f60718a", 2500000, "received")))

        paystack.send_transfers([payout(FIRST), payout(SECOND, currency="GHS", bank="GH280100")], NG_PAYOUT)

        assert [seen.json["currency"] for seen in fake.requests_to("POST", "/transfer/bulk")] == ["NGN", "GHS"]

    def test_at_most_100_transfers_go_in_one_request(self, paystack, fake):
        tx_nos = [f"POU-{n:016X}" for n in range(101)]
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer/bulk", bulk_answer(*[(t.lower(), 2500000, "received") for t in tx_nos[:100]]),
                bulk_answer((tx_nos[100].lower(), 2500000, "received")))

        outcomes = paystack.send_transfers([payout(tx_no) for tx_no in tx_nos], NG_PAYOUT)

        assert [len(seen.json["transfers"]) for seen in fake.requests_to("POST", "/transfer/bulk")] == [100, 1]
        assert {o.provider_status for o in outcomes.values()} == {"received"}
        assert len(fake.requests_to("POST", "/transferrecipient")) == 1

    def test_no_answer_is_provider_unavailable(self, paystack, fake):
        fake.on("POST", "/transferrecipient", recipient_answer())
        fake.on("POST", "/transfer/bulk", Answer(503, {"status": False, "message": "Service unavailable"}))

        with pytest.raises(ProviderUnavailable):
            paystack.send_transfers([payout(FIRST), payout(SECOND)], NG_PAYOUT)
