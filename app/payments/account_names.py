"""Whose a payout's bank account is: the holder's name its provider resolves the account number to
(Paystack's GET /bank/resolve; the simulator for its sandbox accounts), for the payout form to
show before a payout is confirmed.

The API's create does not ask for it (its rules are the interface's); the dashboard does. A
provider behind a network is never asked on a request's thread: the request records the account
it wants named, a worker asks (app.providers.account_resolutions) and stores the answer, and the
form asks again until it is there. An answer is kept (NAME_KEPT, REFUSAL_KEPT), so naming the
same account at the same bank again costs no call. The simulator answers in process.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from .accounts import AccountNumberError, validate_account_number
from .deps import Deps
from .formats import storable_text
from .model import Caller, PaymentMethod
from .provider import AccountNameSource, AccountNotResolved, ProviderUnavailable

# How long an answer stands before the account is asked about again: a name rarely changes; an
# account not found may be one just opened.
NAME_KEPT = timedelta(days=30)
REFUSAL_KEPT = timedelta(minutes=10)
# The rules whose accounts a provider names: NUBANs (bank account numbers of Nigeria).
NAMED_RULES = ("nuban", "nuban-for-ngn")


class NameState(Enum):
    """Where naming an account stands."""

    RESOLVED = "resolved"  # the name is known
    PENDING = "pending"  # a worker is to ask the provider
    REFUSED = "refused"  # the provider found no such account


@dataclass(frozen=True)
class AccountName:
    """The holder's name of an account (RESOLVED), the provider's words (REFUSED), or nothing
    yet (PENDING; `trouble` says why the last try got no answer, when one failed)."""

    state: NameState
    name: str | None = None
    refusal: str | None = None
    trouble: str | None = None


@dataclass(frozen=True)
class ResolutionKey:
    """Which account at which bank, asked of which provider account."""

    provider_account_id: int
    bank_code: str
    account_number: str


@dataclass(frozen=True)
class StoredResolution:
    """An account name as stored: answered (holder_name or refusal, answered_at) or due."""

    holder_name: str | None
    refusal: str | None
    last_error: str | None
    due_at: datetime | None
    answered_at: datetime | None
    failed_tries: int

    def fresh(self, now: datetime) -> bool:
        """Answered, and not so long ago that it should be asked again."""
        if self.due_at is not None or self.answered_at is None:
            return False
        kept = NAME_KEPT if self.holder_name else REFUSAL_KEPT
        return now < self.answered_at + kept


def names_accounts(method: PaymentMethod, currency: str | None) -> bool:
    """Whether the method's accounts are named by a provider (NUBANs, paid in NGN)."""
    if method.account_rule == "nuban":
        return True
    return method.account_rule == "nuban-for-ngn" and currency == "NGN"


def account_name(deps: Deps, caller: Caller, payment_method: str, currency: str | None,
                 bank_code: str | None, account_number: str | None) -> AccountName | None:
    """Whose the account is, as the method's provider says; None when there is nothing to ask:
    a method whose accounts are not named, a provider that names none, or an account number that
    is not yet a valid one for the bank, or text no method or account can hold (its field's own
    error says so)."""
    if not all(storable_text(text) for text in (payment_method, currency, bank_code, account_number) if text):
        return None
    with deps.uow(write=False) as uow:
        method = uow.methods.get(caller, payment_method)
    if method is None or not method.is_payout or not names_accounts(method, currency):
        return None
    if not bank_code or not account_number:
        return None
    try:
        number = validate_account_number(method.account_rule, account_number, bank_code, currency)
    except AccountNumberError:
        return None
    bank_code = bank_code.strip()
    in_process = deps.providers.in_process_provider(method)
    if in_process is not None:
        return _asked_now(in_process, number, bank_code)
    if method.provider_account_id is None:
        return None
    try:
        source = deps.providers.for_method(method)  # reads the account: no I/O to the provider
    except ProviderUnavailable:
        return None
    if not isinstance(source, AccountNameSource):
        return None
    return _stored(deps, ResolutionKey(method.provider_account_id, bank_code, number))


def _asked_now(provider, number: str, bank_code: str) -> AccountName | None:
    if not isinstance(provider, AccountNameSource):
        return None
    try:
        return AccountName(NameState.RESOLVED, name=provider.resolve_account(number, bank_code))
    except AccountNotResolved as refused:
        return AccountName(NameState.REFUSED, refusal=refused.message)


def _stored(deps: Deps, key: ResolutionKey) -> AccountName:
    """The stored answer while fresh; otherwise the account is asked for (due now, unless already
    due: a failing provider keeps its backoff) and PENDING answered."""
    now = deps.clock()
    with deps.uow(write=False) as uow:
        stored = uow.account_resolutions.get(key)
    if stored is not None and stored.fresh(now):
        if stored.holder_name:
            return AccountName(NameState.RESOLVED, name=stored.holder_name)
        return AccountName(NameState.REFUSED, refusal=stored.refusal)
    if stored is None or stored.due_at is None:
        with deps.uow() as uow:
            uow.account_resolutions.ask_for(key, now)
            uow.commit()
    return AccountName(NameState.PENDING, trouble=stored.last_error if stored else None)
