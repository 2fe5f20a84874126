"""Webhooks from the providers: verified, matched to a transaction, applied through the services.

Each provider account has its own URL, /provider-webhooks/<webhook_key>. A verified event moves
its transaction through `settlement.apply_outcome`, the path every other answer takes (status
history, Paydesk's webhook to the merchant, the original's settlement for refunds); a dispute
event goes to its dispute record instead (`dispute_service.record_from_provider`), which moves
the payment as the dispute rules say. Every request
is stored with what came of it, and shown in the dashboard beside the webhook logs.
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from flask import Blueprint, request

from app.payments import dispute_service, settlement
from app.payments.model import Caller, Kind, Status, Transaction
from app.payments.money import to_minor
from app.payments.provider import ProviderUnavailable
from app.store import provider_accounts as store
from app.store.provider_accounts import ProviderAccount
from app.util import could_be_key
from app.web import deps as app_deps
from app.web import json_response

from . import paystack, stripe
from .accounts import WEBHOOK_PATH
from .events import IgnoredEvent, InvalidWebhook, ProviderEvent, WebhookSignatureError

log = logging.getLogger(__name__)

provider_webhooks = Blueprint("provider_webhooks", __name__, url_prefix=WEBHOOK_PATH)

MAX_KEY_LENGTH = 64

# Each provider's parser: (raw body, headers, the secret its webhooks are signed with).
PARSERS: dict[str, Callable[[bytes, Mapping[str, str], str], ProviderEvent | IgnoredEvent]] = {
    "paystack": paystack.parse_webhook,
    "stripe": stripe.parse_webhook,
}
# An amount of the transaction in the units the provider's events give.
PROVIDER_AMOUNTS = {"paystack": to_minor, "stripe": stripe.stripe_amount}


@dataclass
class Result:
    """What came of one event: a word for the log, the transaction it was about, a detail."""

    result: str
    tx_no: str | None = None
    detail: str | None = None


@provider_webhooks.post("/<webhook_key>")
def receive(webhook_key: str):
    """Verify, store and apply one provider event. 200 unless the request is not the provider's."""
    deps = app_deps()
    account = None
    if could_be_key(webhook_key, MAX_KEY_LENGTH):
        with deps.uow(write=False) as uow:
            account = store.account_by_webhook_key(uow.conn, webhook_key)
    if account is None:
        return json_response({"error": "Not found"}, 404)
    body = request.get_data(cache=False)
    keep = EventRecorder(deps, account, body)
    if not account.connected:
        keep(False, Result("disconnected", detail="The provider account is disconnected"))
        return json_response({"error": "This provider account is disconnected"}, 410)
    try:
        event = PARSERS[account.provider](body, request.headers, deps.providers.webhook_secret(account))
    except InvalidWebhook as refused:
        signed = not isinstance(refused, WebhookSignatureError)
        log.warning("provider webhook refused for %s account %s: %s", account.provider, account.id, refused)
        keep(signed, Result("bad signature" if not signed else "bad payload", detail=str(refused)))
        return json_response({"error": str(refused)}, 400)
    if isinstance(event, IgnoredEvent):
        log.info("provider webhook %s from %s ignored (not an event Paydesk acts on)",
                 event.event_type, account.provider)
        keep(True, Result("ignored", detail="Paydesk does not act on this event type"), event)
        return json_response({"received": True})
    if keep.seen_before():
        keep(True, Result("duplicate", detail="The same event was received and applied before"), event)
        return json_response({"received": True})
    try:
        outcome = _apply(deps, account, event)
    except ProviderUnavailable as error:
        # Only reached when matching needed the provider (Paystack refunds, Stripe disputes):
        # a non-2xx makes the provider send the event again later.
        keep(True, Result("retry later", detail=str(error)), event)
        return json_response({"error": "Try again later"}, 503)
    keep(True, outcome, event)
    return json_response({"received": True})


class EventRecorder:
    """Stores the request with its result (and the parsed event's names when there is one)."""

    def __init__(self, deps, account: ProviderAccount, body: bytes):
        self.deps, self.account, self.body = deps, account, body
        self.digest = hashlib.sha256(body).hexdigest()

    def seen_before(self) -> bool:
        with self.deps.uow(write=False) as uow:
            return store.seen_before(uow.conn, self.account.id, self.digest)

    def __call__(self, signature_valid: bool, result: Result,
                 event: ProviderEvent | IgnoredEvent | None = None) -> None:
        with self.deps.uow() as uow:
            store.record_event(
                uow.conn, self.account, received_at=self.deps.clock(),
                body=self.body.decode("utf-8", "replace").replace("\x00", "\ufffd"),
                body_sha256=self.digest, signature_valid=signature_valid, result=result.result,
                event_type=event.event_type if event else None,
                event_id=event.event_id if event else None, tx_no=result.tx_no, detail=result.detail)
            uow.commit()


def _apply(deps, account: ProviderAccount, event: ProviderEvent) -> Result:
    """Find the event's transaction in the account's merchant and mode, and record the outcome."""
    caller = Caller(account.merchant_id, account.mode, f"{account.provider} webhook")
    if event.kind is Kind.REFUND and event.tx_no is None:
        return _paystack_refund(deps, caller, account, event)
    tx = _find(deps, caller, account, event)
    if tx is None:
        return Result("unknown transaction", detail="No Paydesk transaction of this account matches the event")
    with deps.uow(write=False) as uow:
        method = uow.methods.of_transaction(tx)
    if method is None or method.provider != account.provider:
        return Result("unknown transaction", tx.tx_no, "The transaction is not served by this provider")
    if event.dispute is not None:
        recorded = dispute_service.record_from_provider(deps, tx, account.provider, account.id, event.dispute,
                                                        source=caller.actor)
        return Result(recorded.result, tx.tx_no, recorded.detail)
    mismatch = _amount_mismatch(account.provider, tx, event)
    if mismatch:
        log.warning("provider webhook %s for %s refused: %s", event.event_type, tx.tx_no, mismatch)
        return Result("amount mismatch", tx.tx_no, mismatch)
    return _record(deps, tx, event.outcome, caller.actor)


def _record(deps, tx: Transaction, outcome, source: str) -> Result:
    """apply_outcome, and whether this request moved the transaction (a racing copy did not)."""
    moves: list[Transaction] = []
    after = settlement.apply_outcome(deps, tx.id, outcome, source=source,
                                     on_moved=lambda _uow, moved: moves.append(moved))
    if moves:
        return Result("applied", tx.tx_no, f"{tx.status} -> {after.status}")
    return Result("no change", tx.tx_no, f"{after.status} stays (event says {outcome.status})")


def _find(deps, caller: Caller, account: ProviderAccount, event: ProviderEvent) -> Transaction | None:
    """By Paydesk's txNo when the event carries it, else by the provider's id (Stripe disputes
    name only their PaymentIntent, whose metadata holds the txNo)."""
    with deps.uow(write=False) as uow:
        if event.tx_no:
            tx = uow.transactions.get(caller, event.tx_no)
            if tx is not None and tx.kind is event.kind:
                return tx
            return None
        if event.provider_transaction_id:
            tx = uow.transactions.find_by_provider_id(caller, event.kind, event.provider_transaction_id)
            if tx is not None:
                return tx
    if account.provider == "stripe" and event.provider_transaction_id:
        tx_no = deps.providers.for_account(account).payment_tx_no(event.provider_transaction_id)
        if tx_no:
            with deps.uow(write=False) as uow:
                return uow.transactions.get(caller, tx_no)
    return None


def _paystack_refund(deps, caller: Caller, account: ProviderAccount, event: ProviderEvent) -> Result:
    """Paystack's refund events name the original and Paystack's refund id, not Paydesk's refund:
    a refund Paydesk knows by that id takes the event; otherwise each Pending refund of the
    original is asked about at Paystack (status() finds it by the note that names it, and never
    submits one)."""
    with deps.uow(write=False) as uow:
        known = (uow.transactions.find_by_provider_id(caller, Kind.REFUND, event.provider_transaction_id)
                 if event.provider_transaction_id else None)
        original = uow.transactions.get(caller, event.original_tx_no) if event.original_tx_no else None
        pending = [r for r in uow.transactions.refunds_of(caller, original.id)
                   if r.status is Status.PENDING] if original and known is None else []
    if known is not None:
        return _record(deps, known, event.outcome, caller.actor)
    if original is None:
        return Result("unknown transaction", event.original_tx_no,
                      "No Paydesk payment of this account has the refunded reference")
    connector = deps.providers.for_account(account)
    # Asked one by one; ProviderUnavailable goes up: 503, and Paystack sends the event again.
    results = [_record(deps, refund, connector.status(refund, original, deps.clock()), caller.actor)
               for refund in pending]
    applied = [f"{r.tx_no} {r.detail}" for r in results if r.result == "applied"]
    if applied:
        return Result("applied", original.tx_no, "Asked Paystack: " + ", ".join(applied))
    return Result("no change", original.tx_no, "No Pending refund of the payment changed")


def _amount_mismatch(provider: str, tx: Transaction, event: ProviderEvent) -> str | None:
    """A payment reported paid for another amount or currency than Paydesk asked for is not taken."""
    if tx.kind is not Kind.PAYMENT or event.outcome.status is not Status.CAPTURED:
        return None
    if event.currency and event.currency.upper() != tx.currency:
        return f"The event is in {event.currency}, the payment in {tx.currency}"
    if event.amount_minor is not None:
        expected = PROVIDER_AMOUNTS[provider](tx.amount, tx.currency)
        if event.amount_minor != expected:
            return f"The event's amount is {event.amount_minor}, the payment's {expected} (minor units)"
    return None
