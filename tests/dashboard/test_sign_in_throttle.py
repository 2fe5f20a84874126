"""Failed sign-ins are counted in the database (every web process sees them), per address and per
account, so a flood from one address stops that address and never locks the owner out. A wrong
current password given to change the password counts as a failed sign-in."""
from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Callable, NamedTuple

import pytest
from sqlalchemy import insert, select

from app.auth.throttle import PER_ACCOUNT, PER_ACCOUNT_FROM_ADDRESS, PER_ADDRESS
from app.store.merchants import create_merchant
from app.store.tables import sign_in_failures
from app.util import utcnow
from tests.conftest import make_app
from tests.hostile.conftest import csrf_token_of
from tests.support.servers import free_port, start_gunicorn, stop_process_group

from .conftest import PASSWORD, Browserless, add_user

WRONG = "Incorrect e-mail or password."
TOO_MANY = "Too many failed sign-in attempts. Wait 15 minutes and try again."
TOO_MANY_WRONG = "Too many wrong current passwords. Wait 15 minutes and try again."
NEW_PASSWORD = "a brand new passphrase"


class Answer(NamedTuple):
    """What a sign-in answered."""

    status: int
    location: str | None
    page: str


class WebProcess:
    """A web process, reached by new browsers behind a proxy (X-Forwarded-For)."""

    def new_browser(self):
        raise NotImplementedError

    def submit(self, browser, address: str, page: str, fields: dict, action: str) -> Answer:
        """Open the page from the address and post the fields, with its CSRF token, to the action."""
        raise NotImplementedError

    def sign_in(self, email: str, password: str, address: str) -> Answer:
        """One sign-in through the form, from a new browser at the address."""
        return self.submit(self.new_browser(), address, "/login",
                           {"email": email, "password": password}, "/login")

    def signed_in(self, email: str, address: str) -> Callable[[str], Answer]:
        """A new browser at the address, signed in as the user: its password change, given the
        current password."""
        browser = self.new_browser()
        signed_in = self.submit(browser, address, "/login", {"email": email, "password": PASSWORD}, "/login")
        assert signed_in.status == 303
        change = {"new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
        return lambda current: self.submit(browser, address, "/account",
                                           {**change, "current_password": current}, "/account/password")


class InProcess(WebProcess):
    """A web process's app in this Python process."""

    def __init__(self, database_url: str):
        self.app = make_app(database_url, PROXY_FIX_HOPS=1)

    def new_browser(self):
        return self.app.test_client()

    def submit(self, browser, address: str, page: str, fields: dict, action: str) -> Answer:
        headers = {"X-Forwarded-For": address}
        token = csrf_token_of(browser.get(page, headers=headers))
        response = browser.post(action, headers=headers, data={**fields, "csrf_token": token})
        return Answer(response.status_code, response.headers.get("Location"),
                      response.get_data(as_text=True))


class OtherProcess(WebProcess):
    """Paydesk under gunicorn in a process of its own."""

    def __init__(self, base_url: str):
        self.base_url = base_url

    def new_browser(self):
        return Browserless(self.base_url)

    def submit(self, browser, address: str, page: str, fields: dict, action: str) -> Answer:
        headers = {"X-Forwarded-For": address}
        browser.get(page, headers=headers)
        response = browser.post(action, fields, headers=headers)
        return Answer(response.status_code, response.headers.get("Location"), response.text)


@pytest.fixture(scope="module")
def processes(database_url):
    """Two web processes on the same database: this one's app, and gunicorn's."""
    port = free_port()
    gunicorn = start_gunicorn(database_url, port, workers=1, PROXY_FIX_HOPS="1")
    here = InProcess(database_url)
    yield here, OtherProcess(f"http://127.0.0.1:{port}")
    stop_process_group(gunicorn)
    here.app.extensions["paydesk.engine"].dispose()


@pytest.fixture
def owner(processes) -> str:
    """A user's e-mail: the account being guessed at."""
    app = processes[0].app
    with app.extensions["paydesk"].uow() as uow:
        merchant = create_merchant(uow, f"Merchant {uuid.uuid4().hex[:10]}", "http://paydesk.test")
        uow.commit()
    return add_user(app, merchant.merchant_id, "support")


def new_address() -> str:
    """A client address (IPv6 documentation prefix) no other test uses."""
    return f"2001:db8:{uuid.uuid4().hex[:4]}::{uuid.uuid4().hex[:4]}"


def assert_refused(answer: Answer) -> None:
    assert answer.status == 429
    assert TOO_MANY in answer.page and WRONG not in answer.page


def test_failures_in_two_processes_add_up(processes, owner):
    first, second = processes
    address = new_address()
    for attempt in range(PER_ACCOUNT_FROM_ADDRESS):
        assert processes[attempt % 2].sign_in(owner, "a wrong guess", address).status == 401
    assert_refused(first.sign_in(owner, PASSWORD, address))
    assert_refused(second.sign_in(owner, PASSWORD, address))


def test_guessing_from_one_address_does_not_lock_the_owner_out(processes, owner):
    first, second = processes
    attacker = new_address()
    for _ in range(PER_ACCOUNT_FROM_ADDRESS):
        assert first.sign_in(owner, "a wrong guess", attacker).status == 401
    assert_refused(second.sign_in(owner, PASSWORD, attacker))
    answer = second.sign_in(owner, PASSWORD, new_address())
    assert (answer.status, answer.location) == (303, "/transactions")


def test_a_flood_over_many_accounts_stops_that_address_for_every_account(processes, owner):
    first, second = processes
    attacker = new_address()
    for _ in range(PER_ADDRESS):
        unknown = f"nobody-{uuid.uuid4().hex[:8]}@shop.test"
        assert first.sign_in(unknown, "a wrong guess", attacker).status == 401
    assert_refused(second.sign_in(owner, PASSWORD, attacker))
    assert second.sign_in(owner, PASSWORD, new_address()).status == 303


def test_guessing_spread_over_addresses_is_refused_only_to_addresses_that_failed(processes, owner):
    first, second = processes
    attackers = [new_address() for _ in range(PER_ACCOUNT)]
    for address in attackers:
        assert first.sign_in(owner, "a wrong guess", address).status == 401
    assert_refused(second.sign_in(owner, PASSWORD, attackers[0]))
    assert second.sign_in(owner, PASSWORD, new_address()).status == 303


def test_signing_in_forgets_the_failures_from_that_address(processes, owner):
    first, second = processes
    address = new_address()
    for _ in range(PER_ACCOUNT_FROM_ADDRESS - 1):
        assert first.sign_in(owner, "a typo", address).status == 401
    assert second.sign_in(owner, PASSWORD, address).status == 303
    for _ in range(PER_ACCOUNT_FROM_ADDRESS - 1):
        assert second.sign_in(owner, "a typo", address).status == 401
    assert first.sign_in(owner, PASSWORD, address).status == 303


def test_wrong_current_passwords_in_two_processes_add_up(processes, owner):
    address = new_address()
    change_password_in = [process.signed_in(owner, address) for process in processes]
    for attempt in range(PER_ACCOUNT_FROM_ADDRESS):
        assert change_password_in[attempt % 2]("a wrong guess").status == 422
    for change_password in change_password_in:
        answer = change_password(PASSWORD)
        assert answer.status == 429
        assert TOO_MANY_WRONG in answer.page


def test_wrong_current_passwords_count_as_failed_sign_ins(processes, owner):
    first, second = processes
    address = new_address()
    change_password = first.signed_in(owner, address)
    for _ in range(PER_ACCOUNT_FROM_ADDRESS - 1):
        assert change_password("a wrong guess").status == 422
    assert second.sign_in(owner, "a wrong guess", address).status == 401
    assert_refused(second.sign_in(owner, PASSWORD, address))
    assert TOO_MANY_WRONG in change_password(PASSWORD).page


def test_the_worker_deletes_failures_past_the_window(app, worker_round):
    address, now = new_address(), utcnow()
    with app.extensions["paydesk"].uow() as uow:
        uow.conn.execute(insert(sign_in_failures), [
            {"account": "someone@shop.test", "address": address, "failed_at": now - timedelta(minutes=16)},
            {"account": "someone@shop.test", "address": address, "failed_at": now - timedelta(minutes=14)}])
        uow.commit()
    worker_round()
    with app.extensions["paydesk"].uow(write=False) as uow:
        left = list(uow.conn.execute(select(sign_in_failures.c.failed_at)
                                     .where(sign_in_failures.c.address == address)).scalars())
    assert left == [now - timedelta(minutes=14)]
