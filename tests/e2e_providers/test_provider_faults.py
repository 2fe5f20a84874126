"""A provider that times out, answers 5xx, is not listening, or refuses: the create (and refund) is
committed Pending and answered 200 without asking the provider (no provider call on a request's
thread), and the worker opens it at the provider, asking again after a failure, once, with the
same reference or Idempotency-Key. Both databases, real HTTP on every side."""
from __future__ import annotations

import signal
import time

import pytest
import requests
from standardwebhooks.webhooks import Webhook

from app.payments import expiry, settlement
from app.payments.model import Mode
from tests.providers.fake_provider import Answer
from tests.support.servers import start_worker, stop_process_group

from . import bodies
from .conftest import (
    PAYSTACK_SECRET,
    READ_TIMEOUT,
    FakeOnPort,
    connect,
    fetch_bank_lists,
    history,
    later,
    on_request,
    outgoing,
    payment_request,
    post_webhook,
    stored,
)

# After a failed ask the worker asks again 30 s later (settlement.retry_delay's floor).
WORKER_LATER = 31

PAYSTACK_INIT = ("POST", "/transaction/initialize")
STRIPE_CREATE = ("POST", "/v1/checkout/sessions")

# What each provider's unavailable answer leaves in ProviderMessage, by fault.
UNAVAILABLE = {
    ("paystack", "timeout"): "Paystack did not answer in time (ReadTimeout)",
    ("paystack", "500"): "Paystack answered HTTP 500: An error occurred",
    ("paystack", "not listening"): "Paystack could not be reached (ConnectionError)",
    ("stripe", "timeout"): "Stripe could not be reached: ",
    ("stripe", "500"): "Stripe answered HTTP 500: An unknown error occurred",
    ("stripe", "not listening"): "Stripe could not be reached: ",
}


class Provider:
    """One provider's account on a fake that may not be listening yet, and how it answers a create."""

    def __init__(self, app, merchant, name: str):
        self.name = name
        self.mode = Mode.LIVE if name == "paystack" else Mode.SANDBOX
        self.currency = "NGN" if name == "paystack" else "EUR"
        self.method = f"{name}-card"
        self.create_route = PAYSTACK_INIT if name == "paystack" else STRIPE_CREATE
        self.on_port = FakeOnPort()
        self.fake = self.on_port.provider
        self.account = connect(app, merchant, self.mode, name, self.fake.url)

    def opened(self, tx_no: str, minor: int) -> dict:
        """The provider's answer to a create that worked."""
        if self.name == "paystack":
            return bodies.initialize_answer(tx_no)
        return bodies.session(tx_no, minor)

    def failure(self) -> Answer:
        if self.name == "paystack":
            return Answer(500, {"status": False, "message": "An error occurred"})
        return bodies.stripe_error(500, "An unknown error occurred", "api_error", "api_error")

    def redirect(self) -> str:
        return bodies.AUTHORIZATION_URL if self.name == "paystack" else bodies.SESSION_URL

    def key_of(self, seen) -> str:
        """What makes a repeated create the same create: Paystack's reference, Stripe's Idempotency-Key."""
        return seen.json["reference"] if self.name == "paystack" else seen.header("Idempotency-Key")


@pytest.fixture(params=["paystack", "stripe"])
def provider(request, app, merchant):
    made = Provider(app, merchant, request.param)
    yield made
    made.on_port.stop()


@pytest.fixture
def api(provider, live, sandbox):
    return live if provider.mode is Mode.LIVE else sandbox


def assert_connecting(page: requests.Response) -> None:
    """The checkout page of a payment a worker is still opening at its provider: it reloads itself."""
    assert page.status_code == 200, (page.status_code, page.headers.get("Location"))
    assert "Connecting you to the payment page…" in page.text
    assert '<meta http-equiv="refresh"' in page.text


@pytest.mark.parametrize("fault", ["timeout", "500", "not listening"])
def test_an_unreachable_provider_leaves_the_payment_pending_until_the_worker_opens_it(
        provider, api, deps, fault):
    if fault != "not listening":
        provider.on_port.start()
    answers = {"timeout": Answer(body={}, delay=READ_TIMEOUT + 1.0), "500": provider.failure()}
    if fault in answers:
        provider.fake.on(*provider.create_route, answers[fault])
    started = time.monotonic()

    created = api.post("/transactions", payment_request(provider.method, provider.currency, 40,
                                                        "https://merchant.example/hooks"))

    assert created.status_code == 200, created.text
    assert time.monotonic() - started < READ_TIMEOUT + 1.0  # the create did not wait for the provider
    tx_no = created.json()["transactionId"]
    assert (created.json()["status"], created.json()["message"]) == ("PENDING", "Transaction created")
    # The request asked nobody: the Pending payment is handed to the workers, due now.
    assert provider.fake.requests_to(*provider.create_route) == []
    assert stored(deps, tx_no)["provider_check_at"] is not None
    assert api.status(tx_no)["ProviderMessage"] is None
    # Until the provider answers, the checkout URL has no provider page to send the customer to:
    # it shows a page that reloads itself while a worker opens the payment.
    server_url = created.json()["checkoutUrl"].rsplit("/checkout/", 1)[0]
    assert_connecting(requests.get(created.json()["checkoutUrl"], allow_redirects=False, timeout=10))

    # The worker's first call (due now) meets the fault.
    assert settlement.run_due_provider_checks(deps) == 1
    status = api.status(tx_no)
    assert status["Status"] == "Pending"
    assert status["ProviderMessage"].startswith(UNAVAILABLE[(provider.name, fault)]), status["ProviderMessage"]
    row = stored(deps, tx_no)
    assert row["provider_check_at"] is not None
    asked_before = len(provider.fake.requests_to(*provider.create_route))
    assert asked_before == (0 if fault == "not listening" else 1)
    assert_connecting(requests.get(created.json()["checkoutUrl"], allow_redirects=False, timeout=10))

    # The worker, a little later, with the provider answering now.
    if fault == "not listening":
        provider.on_port.start()
    provider.fake.on(*provider.create_route, provider.opened(tx_no, 4000))
    assert settlement.run_due_provider_checks(later(deps, 5)) == 0  # not due yet
    assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 1

    creates = provider.fake.requests_to(*provider.create_route)
    assert len(creates) == asked_before + 1
    assert {provider.key_of(seen) for seen in creates} == {tx_no}
    if len(creates) == 2:
        assert creates[0].body == creates[1].body  # the same request again
    status = api.status(tx_no)
    assert (status["Status"], status["DeclineReason"]) == ("Pending", None)
    assert stored(deps, tx_no)["provider_check_at"] is None
    page = requests.get(f"{server_url}/checkout/{tx_no}", allow_redirects=False, timeout=10)
    assert (page.status_code, page.headers.get("Location")) == (303, provider.redirect())
    assert history(deps, tx_no) == [(None, "Pending", history(deps, tx_no)[0][2], None)]
    # Opened: the next rounds leave it to the provider's webhook.
    assert settlement.run_due_provider_checks(later(deps, 2 * WORKER_LATER)) == 0
    assert len(provider.fake.requests_to(*provider.create_route)) == asked_before + 1


def test_the_provider_is_asked_after_the_pending_payment_is_committed(provider, api, deps):
    """The worker asks the provider, and only about a Pending payment another connection can see."""
    provider.on_port.start()
    seen_in_database = []

    def read_while_asked(seen):
        tx_no = seen.json["reference"] if provider.name == "paystack" else seen.form["client_reference_id"]
        try:
            row = stored(deps, tx_no)  # another connection: it sees only committed rows
            seen_in_database.append((row["status"], row["provider_check_at"] is not None))
        except Exception as error:  # noqa: BLE001 - not there: recorded, and the test fails below
            seen_in_database.append(repr(error))
        provider.fake.on(*provider.create_route, provider.opened(tx_no, 4000))

    provider.fake.on(*provider.create_route, {})
    on_request(provider.fake, *provider.create_route, read_while_asked)

    created = api.post("/transactions", payment_request(provider.method, provider.currency, 40,
                                                        "https://merchant.example/hooks"))

    assert created.status_code == 200, created.text
    assert seen_in_database == []  # the request asked nobody
    assert provider.fake.requests_to(*provider.create_route) == []
    assert settlement.run_due_provider_checks(deps) == 1
    assert seen_in_database == [("Pending", True)]
    assert api.status(created.json()["transactionId"])["Status"] == "Pending"
    assert stored(deps, created.json()["transactionId"])["provider_check_at"] is None


def test_a_refused_create_fails_with_the_providers_message_and_tells_the_merchant(
        provider, api, merchant, deps, receiver, deliver):
    provider.on_port.start()
    if provider.name == "paystack":
        provider.fake.on(*provider.create_route, Answer(400, {
            "status": False, "message": "Invalid Email Address Passed", "type": "validation_error",
            "code": "invalid_params"}))
        message, provider_status = "Invalid Email Address Passed", "HTTP 400 invalid_params"
    else:
        provider.fake.on(*provider.create_route, bodies.stripe_error(
            400, "Invalid email address: ada@example", "email_invalid"))
        message, provider_status = "Invalid email address: ada@example", "HTTP 400 email_invalid"
    # Paystack: was it a repeat of a create it already took? It says no.
    provider.fake.on("GET", "/transaction/verify/x", {})
    refused_reference = Answer(400, {"status": False, "message": "Transaction reference not found",
                                     "type": "validation_error", "code": "transaction_not_found"})

    def not_found(seen):
        provider.fake.on("GET", f"/transaction/verify/{seen.json['reference']}", refused_reference)

    if provider.name == "paystack":
        on_request(provider.fake, *provider.create_route, not_found)

    created = api.post("/transactions", payment_request(provider.method, provider.currency, 40, receiver.url))

    assert created.status_code == 200, created.text
    tx_no = created.json()["transactionId"]
    assert api.status(tx_no)["Status"] == "Pending"  # the request asked nobody
    assert provider.fake.requests_to(*provider.create_route) == []
    assert settlement.run_due_provider_checks(deps) == 1
    status = api.status(tx_no)
    assert {k: status[k] for k in ("Status", "DeclineReason", "ProviderMessage", "ProviderStatus")} == {
        "Status": "Failed", "DeclineReason": "Provider Error", "ProviderMessage": message,
        "ProviderStatus": provider_status}
    assert stored(deps, tx_no)["provider_check_at"] is None
    assert history(deps, tx_no)[1:] == [("Pending", "Failed", "worker", message)]
    assert deliver() == 1
    [delivery] = receiver.wait_for(1)
    secret = merchant.live_webhook_secret if provider.mode is Mode.LIVE else merchant.sandbox_webhook_secret
    payload = Webhook(secret).verify(delivery.body, delivery.headers)
    assert (payload["txNo"], payload["status"], payload["providerMessage"], payload["transactionType"]) == (
        tx_no, "Failed", message, "Payment")
    assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.failed"]
    assert len(provider.fake.requests_to(*provider.create_route)) == 1  # a refusal is not retried
    assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 0


def test_a_refund_paystack_cannot_take_now_is_committed_pending_and_submitted_once_by_the_worker(
        app, merchant, live, deps):
    paystack = Provider(app, merchant, "paystack")
    fake = paystack.on_port.start()
    try:
        fake.on(*PAYSTACK_INIT, {})
        on_request(fake, *PAYSTACK_INIT,
                   lambda seen: fake.on(*PAYSTACK_INIT, bodies.initialize_answer(seen.json["reference"])))
        tx_no = live.post("/transactions", payment_request("paystack-card", "NGN", 100,
                                                           "https://merchant.example/hooks")).json()["transactionId"]
        assert settlement.run_due_provider_checks(deps) == 1  # the worker opens it at Paystack
        assert post_webhook(paystack.account, *bodies.paystack_signed(
            bodies.charge_success(tx_no, 10000), PAYSTACK_SECRET)).status_code == 200
        assert live.status(tx_no)["Status"] == "Captured"
        fake.on("GET", "/refund", bodies.refund_list())
        refunds_in_database = []

        def unavailable(seen):
            refund_tx_no = seen.json["merchant_note"].removeprefix("Paydesk refund ")
            refunds_in_database.append(stored(deps, refund_tx_no)["status"])

        fake.on("POST", "/refund", Answer(502, "<html>502 Bad Gateway</html>", content_type="text/html"))
        on_request(fake, "POST", "/refund", unavailable)

        refund = live.post("/transactions/refund", {"txNo": tx_no, "amount": 40})

        assert refund.status_code == 200, refund.text
        refund_tx_no = refund.json()["refundTxNo"]
        assert (refund.json()["status"], refund.json()["message"], refund.json()["providerRefundId"]) == (
            "Pending", "Refund is being processed", None)
        # The request asked Paystack nothing: the worker submits the refund.
        assert fake.requests_to("POST", "/refund") == fake.requests_to("GET", "/refund") == []
        # The remaining amount already counts the Pending refund.
        over = live.post("/transactions/refund", {"txNo": tx_no, "amount": 60.01})
        assert (over.status_code, over.json()) == (400, {
            "error": "Refund amount (60.01) exceeds remaining refundable amount (60.00)"})

        # The worker's first submission (due now): Paystack cannot take it.
        assert settlement.run_due_provider_checks(deps) == 1
        assert refunds_in_database == ["Pending"]  # committed before Paystack was asked
        status = live.status(refund_tx_no)
        assert (status["Status"], status["ProviderMessage"]) == ("Pending", "Paystack answered HTTP 502: Bad Gateway")
        assert stored(deps, refund_tx_no)["provider_check_at"] is not None

        fake.on("GET", "/refund", bodies.refund_list())
        fake.on("POST", "/refund", {"status": True, "message": "Refund has been queued for processing",
                                    "data": bodies.paystack_refund(tx_no, refund_tx_no, 4000, "processed")})
        assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 1

        posts = fake.requests_to("POST", "/refund")
        assert len(posts) == 2 and posts[0].json == posts[1].json == {
            "transaction": tx_no, "amount": 4000, "currency": "NGN",
            "merchant_note": f"Paydesk refund {refund_tx_no}"}
        assert len(fake.requests_to("GET", "/refund")) == 2  # asked "already sent?" before each POST
        assert live.status(refund_tx_no)["Status"] == "Captured"
        assert live.status(tx_no)["Status"] == "Captured"
        assert history(deps, refund_tx_no)[1:] == [("Pending", "Captured", "worker", "Refund has been queued for processing")]
    finally:
        paystack.on_port.stop()


def paystack_payment(app, merchant, live, amount=100) -> tuple[Provider, str]:
    """A live Paystack account on a started fake, and a Pending payment the worker opened there."""
    paystack = Provider(app, merchant, "paystack")
    fake = paystack.on_port.start()
    fake.on(*PAYSTACK_INIT, {})
    unhook = on_request(fake, *PAYSTACK_INIT,
                        lambda seen: fake.on(*PAYSTACK_INIT, bodies.initialize_answer(seen.json["reference"])))
    created = live.post("/transactions", payment_request("paystack-card", "NGN", amount,
                                                         "https://merchant.example/hooks"))
    assert created.status_code == 200, created.text
    assert settlement.run_due_provider_checks(live_deps(app)) == 1
    unhook()
    assert stored(live_deps(app), created.json()["transactionId"])["provider_redirect_url"] == bodies.AUTHORIZATION_URL
    return paystack, created.json()["transactionId"]


def live_deps(app):
    """The app's services (real clock), as the deps fixture gives them."""
    return app.extensions["paydesk"]


def test_a_refund_whose_answer_was_lost_is_found_by_its_note_and_not_sent_twice(app, merchant, live, deps):
    paystack, tx_no = paystack_payment(app, merchant, live)
    fake = paystack.fake
    try:
        assert post_webhook(paystack.account, *bodies.paystack_signed(
            bodies.charge_success(tx_no, 10000), PAYSTACK_SECRET)).status_code == 200
        fake.on("GET", "/refund", bodies.refund_list())
        fake.on("POST", "/refund", Answer(body={}, delay=READ_TIMEOUT + 1.0))  # Paystack took it, late

        refund = live.post("/transactions/refund", {"txNo": tx_no, "amount": 100})

        assert (refund.status_code, refund.json()["status"]) == (200, "Pending")
        refund_tx_no = refund.json()["refundTxNo"]
        assert fake.requests_to("POST", "/refund") == []  # the worker submits it
        assert settlement.run_due_provider_checks(deps) == 1  # ... and its answer is lost
        assert len(fake.requests_to("POST", "/refund")) == 1
        assert live.status(refund_tx_no)["Status"] == "Pending"
        fake.on("GET", "/refund", bodies.refund_list(
            bodies.paystack_refund(tx_no, "RFD-0000000000000000", 500, "processed", id=15581000),
            bodies.paystack_refund(tx_no, refund_tx_no, 10000, "processed")))
        assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 1

        assert len(fake.requests_to("POST", "/refund")) == 1
        status = live.status(refund_tx_no)
        assert (status["Status"], status["ProviderTransactionId"]) == ("Captured", str(bodies.PAYSTACK_REFUND_ID))
        assert live.status(tx_no)["Status"] == "Refunded"
    finally:
        paystack.on_port.stop()


def test_an_initialize_paystack_took_but_whose_answer_was_lost_fails_on_the_workers_repeat_and_tells_the_merchant(
        app, merchant, live, deps, receiver, deliver):
    """Paystack never gives a lost checkout page again (verify has no authorization_url): rather than
    a Pending payment nobody can pay until expiry, it is Failed as soon as the worker's repeat
    finds it taken, and the merchant told."""
    from app.providers.paystack import LOST_PAGE
    paystack = Provider(app, merchant, "paystack")
    fake = paystack.on_port.start()
    try:
        fake.on(*PAYSTACK_INIT, Answer(body={}, delay=READ_TIMEOUT + 1.0))  # Paystack created it, late
        created = live.post("/transactions", payment_request("paystack-card", "NGN", 100, receiver.url))
        tx_no = created.json()["transactionId"]
        assert live.status(tx_no)["Status"] == "Pending"
        assert fake.requests_to(*PAYSTACK_INIT) == []  # the request asked nobody
        assert settlement.run_due_provider_checks(deps) == 1  # the worker's initialize: its answer is lost
        status = live.status(tx_no)
        assert (status["Status"], status["ProviderMessage"]) == (
            "Pending", "Paystack did not answer in time (ReadTimeout)")
        # The worker's repeat: Paystack has the reference already; verify says the customer has not paid.
        fake.on(*PAYSTACK_INIT, Answer(400, {
            "status": False, "message": "Duplicate Transaction Reference",
            "meta": {"nextStep": "Try and create the Transaction or Charge with a new reference"},
            "type": "validation_error", "code": "duplicate_reference"}))
        fake.on("GET", f"/transaction/verify/{tx_no}",
                bodies.verify_answer(tx_no, 10000, "abandoned", "The transaction was not completed"))
        assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 1

        assert len(fake.requests_to(*PAYSTACK_INIT)) == 2
        status = live.status(tx_no)
        assert {k: status[k] for k in ("Status", "DeclineReason", "ProviderMessage", "ProviderTransactionId")} == {
            "Status": "Failed", "DeclineReason": "Provider Error", "ProviderMessage": LOST_PAGE,
            "ProviderTransactionId": str(bodies.PAYSTACK_TX_ID)}
        page = requests.get(created.json()["checkoutUrl"], allow_redirects=False, timeout=10)
        assert page.status_code == 200  # the done page, not one that reloads for half an hour
        assert "Connecting you to the payment page" not in page.text and "http-equiv" not in page.text
        assert deliver(later(deps, WORKER_LATER + 1)) == 1  # the webhook was written at the worker's time
        [delivery] = receiver.wait_for(1)
        payload = Webhook(merchant.live_webhook_secret).verify(delivery.body, delivery.headers)
        assert (payload["txNo"], payload["status"], payload["providerMessage"]) == (tx_no, "Failed", LOST_PAGE)
    finally:
        paystack.on_port.stop()


def test_a_pending_payment_of_a_disconnected_account_expires_in_the_first_expiry_round(app, merchant, live, deps):
    from app.providers import accounts
    from app.util import utcnow
    paystack, tx_no = paystack_payment(app, merchant, live)
    try:
        assert accounts.disconnect(deps.uow, paystack.account.caller, paystack.account.id, utcnow())
        asked = len(paystack.fake.seen)

        settlement.run_due_provider_checks(later(deps, 31 * 60))
        expiry.expire_pending(later(deps, 31 * 60), limit=1000)

        status = live.status(tx_no)
        assert (status["Status"], status["DeclineReason"]) == ("Declined", "Transaction Expired"), status
        assert stored(deps, tx_no)["provider_check_at"] is None
        assert len(paystack.fake.seen) == asked  # a disconnected account is never asked
        assert [e for e, _ in outgoing(deps, tx_no)] == ["payment.declined"]
    finally:
        paystack.on_port.stop()


def test_the_checkout_url_of_a_disconnected_account_does_not_send_customers_to_pay_there(app, merchant, live, deps):
    from app.providers import accounts
    from app.util import utcnow
    paystack, tx_no = paystack_payment(app, merchant, live)
    try:
        page = requests.get(f"{app.config['CHECKOUT_URL']}/{tx_no}", allow_redirects=False, timeout=10)
        assert (page.status_code, page.headers["Location"]) == (303, bodies.AUTHORIZATION_URL)
        assert accounts.disconnect(deps.uow, paystack.account.caller, paystack.account.id, utcnow())

        page = requests.get(f"{app.config['CHECKOUT_URL']}/{tx_no}", allow_redirects=False, timeout=10)

        assert page.status_code == 410, page.headers.get("Location")
        assert "This payment can no longer be completed" in page.text
        assert live.status(tx_no)["Status"] == "Pending"  # until expiry (test above)
    finally:
        paystack.on_port.stop()


def test_a_payout_whose_transfer_timed_out_is_sent_again_with_the_same_reference_and_never_twice(
        app, merchant, live, deps):
    paystack = Provider(app, merchant, "paystack")
    fake = paystack.on_port.start()
    try:
        from app.payments.accounts import _nuban_check_digit
        account_number = "012345678" + str(_nuban_check_digit("058", "012345678"))
        fake.on("GET", "/bank", bodies.bank_list())
        fetch_bank_lists(deps)  # a worker stores the lists the account's connection made due
        fake.on("POST", "/transferrecipient", bodies.recipient_answer("Ada Obi", account_number, "058"))
        fake.on("POST", "/transfer", Answer(body={}, delay=READ_TIMEOUT + 1.0))  # Paystack took it, late
        created = live.post("/transactions", payment_request(
            "paystack-bank-payout", "NGN", 250, "https://merchant.example/hooks", transactionAction="PAYMENT",
            payment={"paymentMethod": "paystack-bank-payout", "bank": "058", "holder": "Ada Obi",
                     "accountNumber": account_number}))
        assert created.status_code == 200, created.text
        tx_no = created.json()["transactionId"]
        assert live.status(tx_no)["Status"] == "Pending"
        # The request sent no transfer: the worker does (its first answer is lost).
        assert fake.requests_to("POST", "/transferrecipient") == fake.requests_to("POST", "/transfer") == []
        assert settlement.run_due_provider_checks(deps) == 1
        assert len(fake.requests_to("POST", "/transfer")) == 1
        status = live.status(tx_no)
        assert (status["Status"], status["ProviderMessage"]) == (
            "Pending", "Paystack did not answer in time (ReadTimeout)")

        # The worker repeats it: Paystack refuses the reference it already has, and reports that transfer.
        fake.on("POST", "/transfer", Answer(400, {"status": False, "message": "Duplicate Transfer Reference",
                                                  "type": "validation_error", "code": "duplicate_reference"}))
        fake.on("GET", f"/transfer/verify/{tx_no.lower()}", {
            "status": True, "message": "Transfer retrieved",
            "data": bodies.transfer_object(tx_no, 25000, "success")})
        assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 1

        transfers = fake.requests_to("POST", "/transfer")
        assert len(transfers) == 2
        assert [t.json["reference"] for t in transfers] == [tx_no.lower(), tx_no.lower()]
        assert transfers[0].json == transfers[1].json
        status = live.status(tx_no)
        assert (status["Status"], status["ProviderTransactionId"]) == ("Captured", bodies.TRANSFER_CODE)
        assert history(deps, tx_no)[1:] == [("Pending", "Captured", "worker", "Transfer retrieved")]
    finally:
        paystack.on_port.stop()


@pytest.mark.slow  # a worker process of its own
def test_a_worker_killed_between_claiming_a_refund_and_submitting_it_loses_nothing_and_sends_it_once(
        app, server, merchant, live, deps, tmp_path):
    """A real worker process claims the handed-over refund and asks Paystack whether it was sent
    (GET /refund, held here), and is killed with SIGKILL before it submits it. The refund stays
    Pending with its amount held; once the dead worker's claim lapses, another worker submits it,
    once."""
    paystack, tx_no = paystack_payment(app, merchant, live)
    fake = paystack.fake
    worker = None
    try:
        assert post_webhook(paystack.account, *bodies.paystack_signed(
            bodies.charge_success(tx_no, 10000), PAYSTACK_SECRET)).status_code == 200
        fake.on("GET", "/refund", Answer(body=bodies.refund_list(), delay=60))  # the worker waits here
        refund = live.post("/transactions/refund", {"txNo": tx_no, "amount": 100})
        assert (refund.status_code, refund.json()["status"]) == (200, "Pending")
        refund_tx_no = refund.json()["refundTxNo"]

        worker = start_worker(server.database_url, log=tmp_path / "worker.log",
                              PAYDESK_ENCRYPTION_KEY=app.config["PAYDESK_ENCRYPTION_KEY"])
        deadline = time.monotonic() + 20
        while not fake.requests_to("GET", "/refund"):  # claimed, and asking Paystack
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.02)
        stop_process_group(worker, signal.SIGKILL)
        assert fake.requests_to("POST", "/refund") == []  # killed before it submitted the refund
        row = stored(deps, refund_tx_no)
        assert (row["status"], row["provider_transaction_id"]) == ("Pending", None)
        assert stored(deps, tx_no)["refund_reserved_minor"] == 10000  # its amount still held

        fake.on("GET", "/refund", bodies.refund_list())  # Paystack answers again: never sent
        fake.on("POST", "/refund", {"status": True, "message": "Refund has been queued for processing",
                                    "data": bodies.paystack_refund(tx_no, refund_tx_no, 10000, "processed")})
        assert settlement.run_due_provider_checks(later(deps, 5)) == 0  # the dead worker's claim holds
        assert settlement.run_due_provider_checks(later(deps, WORKER_LATER)) == 1

        assert len(fake.requests_to("POST", "/refund")) == 1
        assert live.status(refund_tx_no)["Status"] == "Captured"
        assert live.status(tx_no)["Status"] == "Refunded"
    finally:
        if worker is not None:
            stop_process_group(worker, signal.SIGKILL)
        paystack.on_port.stop()
