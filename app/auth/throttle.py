"""Throttling failed sign-ins: per address and per account, counted in the database.

A failure is a wrong password or code at sign-in, or a wrong password where the dashboard asks
for it again (the password change, two-factor enrolment and reset): all count on the same account.

The rule (`is_throttled`), over the failures of the last WINDOW:
- an address with PER_ADDRESS failures (any accounts) is refused for every account: a flood
  from one address stops that address, whoever it tries;
- an address with PER_ACCOUNT_FROM_ADDRESS failures on one account is refused for that account;
- an account with PER_ACCOUNT failures from all addresses together (guessing spread over many
  addresses) is refused only to the addresses that failed on it at least once.
An address with no failure on the account is refused by the first rule only, so the owner
signing in from their own address is never locked out by someone else's guesses. Signing in
clears the account's failures from that address. A refused attempt is not checked and not
counted. The count is read before the password is checked and written after, so concurrent
attempts from one address can each pass the check: the limits hold to within that concurrency.
"""
from __future__ import annotations

from datetime import timedelta

from flask import request

from app.payments.formats import storable_text
from app.store import sign_in_failures
from app.store.sign_in_failures import ACCOUNT_LENGTH, ADDRESS_LENGTH, FailureCounts
from app.web import deps as app_deps

WINDOW = timedelta(minutes=15)
PER_ADDRESS = 30
PER_ACCOUNT_FROM_ADDRESS = 5
PER_ACCOUNT = 20
TOO_MANY_ATTEMPTS = "Too many failed sign-in attempts. Wait 15 minutes and try again."


def is_throttled(counts: FailureCounts) -> bool:
    """Whether an attempt with these failure counts behind it is refused (the module's rule)."""
    return (counts.from_address >= PER_ADDRESS
            or counts.account_from_address >= PER_ACCOUNT_FROM_ADDRESS
            or (counts.of_account >= PER_ACCOUNT and counts.account_from_address > 0))


def account_key(email: str | None) -> str:
    """The account a sign-in is for, as failures are counted: the e-mail as typed, in lower case
    (any text: unknown e-mails count too, and one no database can store counts as "")."""
    email = (email or "").strip().lower()[:ACCOUNT_LENGTH]
    return email if storable_text(email) else ""


def _client_address() -> str:
    """The request's client address (after PROXY_FIX_HOPS' X-Forwarded-For, when set)."""
    return (request.remote_addr or "")[:ADDRESS_LENGTH]


def refuses(account: str) -> bool:
    """Whether this request's address is refused for the account now."""
    deps = app_deps()
    with deps.uow(write=False) as uow:
        counts = sign_in_failures.failure_counts(uow.conn, account, _client_address(),
                                                 deps.clock() - WINDOW)
    return is_throttled(counts)


def count_failure(account: str) -> None:
    """Record a failed attempt on the account from this request's address."""
    deps = app_deps()
    with deps.uow() as uow:
        sign_in_failures.record_failure(uow.conn, account, _client_address(), deps.clock())
        uow.commit()


def forget_failures(account: str) -> None:
    """The account's owner signed in from this address: its failures there no longer count."""
    with app_deps().uow() as uow:
        sign_in_failures.clear_failures(uow.conn, account, _client_address())
        uow.commit()
