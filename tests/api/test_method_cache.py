"""Payment methods come from the process's memory on create; this process's own changes count at once."""
from __future__ import annotations

from app.payments.model import Caller, Mode
from app.providers import accounts
from app.util import utcnow

from tests.conftest import payment_body

NOT_FOUND = {"errors": {"Payment.PaymentMethod": ["Payment method stripe-card not found"]}}


def connect_stripe(app, merchant):
    deps = app.extensions["paydesk"]
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "tests")
    connected = accounts.connect(deps.uow, deps.providers.box, caller, "stripe",
                                 secret_key="sk_test_method_cache_0123456789abcdef",
                                 webhook_secret="whsec_method_cache", base_url="http://127.0.0.1:9",
                                 paydesk_url=app.config["BASE_URL"], now=utcnow())
    return deps, caller, connected


def test_a_method_disconnected_by_this_process_is_refused_at_once(app, merchant, sandbox):
    stripe_payment = payment_body(payment={"paymentMethod": "stripe-card"})
    assert sandbox.post("/transactions", stripe_payment).json() == NOT_FOUND
    deps, caller, connected = connect_stripe(app, merchant)
    # Connected: used at once (a method not found is never remembered); Stripe is not listening,
    # so the payment waits Pending for the worker.
    first = sandbox.post("/transactions", stripe_payment)
    assert first.status_code == 200, first.text
    assert accounts.disconnect(deps.uow, caller, connected.provider_account_id, utcnow())
    again = sandbox.post("/transactions", {**stripe_payment, "reference": "after-disconnect"})
    assert (again.status_code, again.json()) == (400, NOT_FOUND)
