"""Payout account names: a request records the account it wants named, a worker asks Paystack
(GET /bank/resolve) and stores the answer, and the answer is kept; the simulator answers in
process. Both databases."""
from __future__ import annotations

from sqlalchemy import select

from app.payments.account_names import NameState, account_name
from app.payments.accounts import _nuban_check_digit
from app.payments.model import Caller, Mode
from app.providers.account_resolutions import account_resolution_pass, resolve_due_accounts
from app.store.tables import account_resolutions
from app.util import utcnow
from tests.providers.fake_provider import Answer

from .conftest import later

GTB_NUBAN = "012345678" + str(_nuban_check_digit("058", "012345678"))
RESOLVED = {"status": True, "message": "Account number resolved",
            "data": {"account_number": GTB_NUBAN, "account_name": "OBI ADA CHIOMA", "bank_id": 9}}
NOT_FOUND = Answer(422, {"status": False, "type": "api_error", "code": "unknown",
                         "message": "Could not resolve account name. Check parameters or try again."})


def ask(deps, account, number=GTB_NUBAN, bank="058", currency="NGN"):
    return account_name(deps, account.caller, "paystack-bank-payout", currency, bank, number)


def stored(deps, account) -> list[dict]:
    with deps.uow(write=False) as uow:
        return [dict(row) for row in uow.conn.execute(select(account_resolutions).where(
            account_resolutions.c.provider_account_id == account.id)).mappings()]


def test_a_request_records_the_account_and_asks_paystack_nothing(deps, paystack_account, paystack_fake):
    assert ask(deps, paystack_account).state is NameState.PENDING
    assert ask(deps, paystack_account).state is NameState.PENDING  # asked again: still one row
    [row] = stored(deps, paystack_account)
    assert (row["bank_code"], row["account_number"], row["holder_name"]) == ("058", GTB_NUBAN, None)
    assert row["due_at"] is not None
    assert paystack_fake.requests_to("GET", "/bank/resolve") == []


def test_the_worker_asks_paystack_once_and_the_name_is_kept(deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank/resolve", RESOLVED)
    ask(deps, paystack_account)

    resolver = account_resolution_pass(deps, deps.providers)
    resolver.poke()  # as each worker round does: a pass on its own thread
    resolver.wait(10)

    [seen] = paystack_fake.requests_to("GET", "/bank/resolve")
    assert seen.query == {"account_number": [GTB_NUBAN], "bank_code": ["058"]}
    named = ask(deps, paystack_account)
    assert (named.state, named.name) == (NameState.RESOLVED, "OBI ADA CHIOMA")
    assert ask(deps, paystack_account, number=f" {GTB_NUBAN[:5]} {GTB_NUBAN[5:]} ").name == "OBI ADA CHIOMA"
    assert resolve_due_accounts(deps, deps.providers) == 0  # nothing due: the answer is the cache
    assert len(paystack_fake.requests_to("GET", "/bank/resolve")) == 1


def test_an_account_paystack_cannot_find_is_refused_in_its_words(deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank/resolve", NOT_FOUND)
    ask(deps, paystack_account)
    assert resolve_due_accounts(deps, deps.providers) == 1
    refused = ask(deps, paystack_account)
    assert (refused.state, refused.refusal) == (
        NameState.REFUSED, "Could not resolve account name. Check parameters or try again.")
    # An account not found may be one just opened: asked again once the refusal is 10 minutes old.
    assert ask(later(deps, 11 * 60), paystack_account).state is NameState.PENDING


def test_no_answer_is_tried_again_later_and_the_form_is_told(deps, paystack_account, paystack_fake):
    paystack_fake.on("GET", "/bank/resolve", Answer(502, "Bad gateway", content_type="text/plain"),
                     RESOLVED)
    ask(deps, paystack_account)
    assert resolve_due_accounts(deps, deps.providers) == 1
    waiting = ask(deps, paystack_account)
    assert waiting.state is NameState.PENDING and "502" in waiting.trouble
    [row] = stored(deps, paystack_account)
    assert row["failed_tries"] == 1 and row["due_at"] > utcnow()
    assert resolve_due_accounts(deps, deps.providers) == 0  # not before its backoff
    assert resolve_due_accounts(later(deps, 31), deps.providers) == 1
    assert ask(deps, paystack_account).name == "OBI ADA CHIOMA"


def test_nothing_is_asked_for_an_account_number_that_is_no_nuban_for_the_bank(deps, paystack_account,
                                                                                paystack_fake):
    assert ask(deps, paystack_account, number="0123456789") is None
    assert ask(deps, paystack_account, bank="") is None
    assert ask(deps, paystack_account, currency="GHS") is None  # no NUBAN outside naira
    assert stored(deps, paystack_account) == []


def test_the_simulator_names_its_sandbox_accounts_in_process(deps, merchant):
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "api:test")
    named = account_name(deps, caller, "ng-bank-payout", "NGN", "058", "0123456785")
    assert (named.state, named.name) == (NameState.RESOLVED, "ADA OBI")
    refused = account_name(deps, caller, "ng-bank-payout", "NGN", "058", "0000000001")
    assert (refused.state, refused.refusal) == (
        NameState.REFUSED, "Could not resolve account name. Check parameters or try again.")
    assert account_name(deps, caller, "sepa-payout", "EUR", None, "DE89370400440532013000") is None
