"""Saved recipients: the people a merchant pays again, checked as a payout's destination is, and
the payout a recipient is paid with (issue 31)."""
from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from . import approvals, create, lookup
from .accounts import mask_account_number
from .approvals import ApprovalRequest
from .deps import Deps, OnCreated
from .formats import storable_text
from .model import Caller, FieldErrors, Kind, PaymentError, Transaction, TransactionNotFound
from .schemas import PAYOUT_ACTION, CreateTransactionRequest, parse_create

PUBLIC_ID_PREFIX = "rcp_"
MAX_LABEL_LENGTH = 100
# The merchant's name is the statement text a payout to a recipient carries unless told, cut to
# the create's limit (as the payout form prefills it).
STATEMENT_LENGTH = 22


@dataclass(frozen=True)
class RecipientDetails:
    """What is saved of a recipient: a payout's destination and the billing its payouts carry.
    `customer_reference` may be left out: the recipient's own id is then the customer reference."""

    payment_method: str
    currency: str
    holder: str
    account_number: str
    first_name: str
    last_name: str
    email: str
    bank: str | None = None
    country: str | None = None
    customer_reference: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Recipient:
    """A saved recipient of the caller's merchant and mode."""

    public_id: str
    payment_method: str
    currency: str
    country: str | None
    bank: str | None
    holder: str
    account_number: str  # never shown after saving: see masked_account_number
    label: str | None
    first_name: str
    last_name: str
    email: str
    customer_reference: str
    created_at: datetime
    created_by: str
    archived_at: datetime | None = None
    archived_by: str | None = None

    @property
    def masked_account_number(self) -> str:
        """The account number as every page shows it once saved: "•••• 6789"."""
        return mask_account_number(self.account_number)

    @property
    def archived(self) -> bool:
        """Archived (deleted): listed apart, and never paid again."""
        return self.archived_at is not None

    def payment(self) -> dict:
        """The payment block of a payout to the recipient, as a create request's body has it."""
        return {"paymentMethod": self.payment_method, "bank": self.bank, "holder": self.holder,
                "accountNumber": self.account_number}

    def billing(self) -> dict:
        """The billing block of a payout to the recipient, as a create request's body has it."""
        billing = {"firstName": self.first_name, "lastName": self.last_name, "email": self.email,
                   "customerReference": self.customer_reference}
        if self.country:
            billing["country"] = self.country
        return billing


@dataclass(frozen=True)
class Saved:
    """What save() did: the recipient, and whether it is new (False: the account was saved already)."""

    recipient: Recipient
    created: bool


@dataclass(frozen=True)
class RecipientPayout:
    """A payout to a recipient, built and checked field by field: the create body as the API would
    get it, and the request it parses to (the create service checks the rest)."""

    recipient: Recipient
    body: dict
    request: CreateTransactionRequest


class RecipientNotFound(PaymentError):
    """No recipient with this id for this merchant and mode."""

    def __init__(self, public_id: str):
        super().__init__(f"Recipient {public_id} not found")
        self.public_id = public_id


class RecipientArchived(PaymentError):
    """The recipient was archived: it is paid no more."""

    def __init__(self, public_id: str):
        super().__init__(f"Recipient {public_id} is archived and cannot be paid")
        self.public_id = public_id


def new_public_id() -> str:
    """A recipient's public id: rcp_ and 20 random characters."""
    return PUBLIC_ID_PREFIX + secrets.token_hex(10)


def save(deps: Deps, caller: Caller, details: RecipientDetails) -> Saved:
    """Save a recipient after the create's own checks of a payout's destination and billing; an
    account (method, bank, number) saved already gives the recipient saved first, unchanged.

    The destination is checked by parse_create and create.check_create on the payout a recipient
    would be paid with (of 1 in its currency, never made), so a saved recipient meets exactly the
    rules a payout does, with the same messages (Payment.AccountNumber, Billing.Email, ...).
    """
    _check_label(details.label)
    public_id = new_public_id()
    details = replace(details, customer_reference=details.customer_reference or public_id,
                      label=details.label.strip() if details.label and details.label.strip() else None)
    with deps.uow(write=False) as uow:
        statement, callback_url = uow.recipients.payout_defaults(caller)
    probe = parse_create(_create_body(details, Decimal(1), details.currency, public_id,
                                      statement[:STATEMENT_LENGTH],
                                      callback_url or "https://merchant.example/payouts"))
    checked = create.check_create(deps, caller, probe, read_reference=False)
    # Stored as the create normalises it (an IBAN without spaces), so saving it again finds it.
    details = replace(details, payment_method=probe.payment.payment_method, currency=probe.currency,
                      holder=probe.payment.holder, bank=probe.payment.bank,
                      account_number=checked.payment_details["accountNumber"],
                      country=probe.billing.country, first_name=probe.billing.first_name,
                      last_name=probe.billing.last_name, email=probe.billing.email,
                      customer_reference=probe.billing.customer_reference)
    with deps.uow() as uow:
        existing = uow.recipients.of_account(caller, details)
        if existing is not None:
            return Saved(existing, False)
        recipient = uow.recipients.add(caller, public_id, details, deps.clock())
        if recipient is None:  # saved meanwhile by someone else: theirs stands
            return Saved(uow.recipients.of_account(caller, details), False)
        uow.audit(caller, "recipient.save", public_id, detail={
            "method": recipient.payment_method, "holder": recipient.holder,
            "account": recipient.masked_account_number})
        uow.commit()
    return Saved(recipient, True)


def save_from_payout(deps: Deps, caller: Caller, tx_no: str) -> Saved:
    """Save the destination and billing of one of the caller's payouts as a recipient (checked
    again as save() checks any: the method's bank list may have changed since).
    TransactionNotFound for anything but a payout of the caller's."""
    tx = lookup.get_status(deps, caller, tx_no)
    if tx.kind is not Kind.PAYOUT:
        raise TransactionNotFound(tx_no)
    billing, account = tx.billing or {}, tx.payment_details or {}
    return save(deps, caller, RecipientDetails(
        payment_method=tx.payment_method, currency=tx.currency, country=billing.get("country"),
        bank=account.get("bank"), holder=account.get("holder"), account_number=account.get("accountNumber"),
        first_name=billing.get("firstName"), last_name=billing.get("lastName"), email=billing.get("email"),
        customer_reference=billing.get("customerReference")))


def _check_label(label: str | None) -> None:
    if label is None:
        return
    if len(label.strip()) > MAX_LABEL_LENGTH:
        raise FieldErrors.one("Label", f"Label must be at most {MAX_LABEL_LENGTH} characters")
    if not storable_text(label):
        raise FieldErrors.one("Label", "Label must not contain control characters")


def list_recipients(deps: Deps, caller: Caller, search: str = "", *, archived: bool = False) -> list[Recipient]:
    """The caller's recipients (or the archived ones) by holder; `search` narrows them to those
    whose holder or label contains it."""
    with deps.uow(write=False) as uow:
        return uow.recipients.list(caller, search, archived=archived)


def get(deps: Deps, caller: Caller, public_id: str) -> Recipient:
    """The caller's recipient (archived ones too); RecipientNotFound otherwise."""
    with deps.uow(write=False) as uow:
        found = uow.recipients.get(caller, public_id)
    if found is None:
        raise RecipientNotFound(public_id)
    return found


def find(uow: Any, caller: Caller, public_id: str) -> Recipient | None:
    """Inside the caller's own unit of work: the live recipient with this id (its stored
    destination: payment() and billing()), or None when it is unknown, another merchant's or
    mode's, or archived."""
    found = uow.recipients.get(caller, public_id)
    return found if found is not None and not found.archived else None


def archive(deps: Deps, caller: Caller, public_id: str) -> Recipient:
    """Archive (delete) the caller's recipient: it is listed apart and paid no more; payouts made
    to it keep their own copy of its details. Archiving it again changes nothing."""
    with deps.uow() as uow:
        found = uow.recipients.get(caller, public_id, for_update=True)
        if found is None:
            raise RecipientNotFound(public_id)
        if found.archived:
            return found
        now = deps.clock()
        uow.recipients.archive(caller, public_id, now)
        uow.audit(caller, "recipient.archive", public_id, detail={
            "holder": found.holder, "account": found.masked_account_number})
        uow.commit()
    return replace(found, archived_at=now, archived_by=caller.actor)


def payout_to(deps: Deps, caller: Caller, public_id: str, amount: Any, currency: str | None,
              reference: str | None, statement_descriptor: str | None = None,
              callback_url: str | None = None) -> RecipientPayout:
    """The payout to the caller's live recipient: its stored destination and billing, with the
    amount, currency (the recipient's), reference and statement text given; the statement text
    and callback URL default to the merchant's name and default callback URL. FieldErrors as
    the create's, RecipientNotFound, RecipientArchived."""
    with deps.uow(write=False) as uow:
        recipient = uow.recipients.get(caller, public_id)
        defaults = uow.recipients.payout_defaults(caller) if recipient else None
    if recipient is None:
        raise RecipientNotFound(public_id)
    if recipient.archived:
        raise RecipientArchived(public_id)
    if currency is not None and currency != recipient.currency:
        raise FieldErrors.one("Currency", f"Recipient {public_id} is paid in {recipient.currency}")
    merchant_name, default_callback = defaults
    body = _create_body(recipient, amount, recipient.currency, reference,
                        statement_descriptor if statement_descriptor is not None
                        else merchant_name[:STATEMENT_LENGTH],
                        callback_url if callback_url is not None else default_callback)
    return RecipientPayout(recipient, body, parse_create(body))


def _create_body(source: Recipient | RecipientDetails, amount: Any, currency: str | None,
                 reference: str | None, statement_descriptor: str | None, callback_url: str | None) -> dict:
    """The create body of a payout to the recipient (saved, or about to be)."""
    billing = {"firstName": source.first_name, "lastName": source.last_name, "email": source.email,
               "customerReference": source.customer_reference}
    if source.country:
        billing["country"] = source.country
    return {
        "amount": amount, "currency": currency, "reference": reference,
        "statementDescriptor": statement_descriptor, "callbackUrl": callback_url,
        "transactionAction": PAYOUT_ACTION, "billing": billing,
        "payment": {"paymentMethod": source.payment_method, "bank": source.bank, "holder": source.holder,
                    "accountNumber": source.account_number},
    }


def pay(deps: Deps, caller: Caller, payout: RecipientPayout, on_created: OnCreated = None) -> Transaction:
    """Make the payout through the create service; the audit log notes the recipient paid
    (recipient.pay) in the unit that creates it, beside the create's own payout.create."""
    recipient = payout.recipient

    def noted(uow, tx: Transaction) -> None:
        if on_created:
            on_created(uow, tx)
        uow.audit(caller, "recipient.pay", tx.tx_no, tx.amount, tx.currency,
                  {"recipient": recipient.public_id, "holder": recipient.holder,
                   "account": recipient.masked_account_number})

    return create.create_transaction(deps, caller, payout.request, noted)


def request_approval(deps: Deps, caller: Caller, payout: RecipientPayout, form_key: str) -> ApprovalRequest:
    """A payout to a recipient above the approval threshold: recorded awaiting a second user
    (app.payments.approvals, once per form key), the recipient's payment noted in the audit log."""
    asked_at = deps.clock()
    awaiting = approvals.request_payout(deps, caller, payout.request,
                                        {**payout.body, "amount": str(payout.request.amount)}, form_key)
    if awaiting.requested_at >= asked_at:  # a new request, not the first submit's
        recipient = payout.recipient
        with deps.uow() as uow:
            uow.audit(caller, "recipient.pay", payout.request.reference, awaiting.amount, awaiting.currency,
                      {"recipient": recipient.public_id, "holder": recipient.holder,
                       "account": recipient.masked_account_number, "approvalId": awaiting.id})
            uow.commit()
    return awaiting
