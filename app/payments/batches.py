"""Batches of payouts and refunds: a CSV file or a JSON list, every row checked by the create's or
the refund's own rules before anything is created, then run by a worker row by row.

A batch is made in review. Nothing is created while it is there: its operator runs its valid rows
(the invalid ones are then skipped) or cancels it. Running it asks for one approval when a
currency's total is above the merchant's approval threshold; once running, a worker (run_due_batches)
creates each valid row's payout or refund, moving the row to created in the unit of work that
creates the transaction: a worker killed mid-batch leaves each row either created (with its
transaction) or still valid, and the next worker goes on from there.
"""
from __future__ import annotations

import csv
import io
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from . import bank_lists, create, recipients, refunds
from .approvals import APPROVAL_WINDOW, ApprovalKind, needs_approval
from .deps import Deps
from .model import (
    BankListNotReady,
    Caller,
    DuplicateReference,
    FieldErrors,
    Mode,
    PaymentError,
    PaymentMethod,
    RefundRejected,
    check_refund,
)
from .money import format_amount
from .refundable import RefundArithmetic, refund_state
from .recipients import Recipient
from .schemas import PAYOUT_ACTION, parse_create, parse_refund, shown_field_name
from .tokens import LimitKind, TokenLimitExceeded, require_scope

# The most rows one batch holds (a file or a JSON list).
MAX_ROWS = 5000
# A worker creates this many rows between two renewals of its lease on the batch.
CHUNK = 50
# How long a worker holds a running batch without renewing; a killed worker's batch is taken up
# by another after it (the app's BATCH_LEASE_SECONDS setting overrides it).
LEASE = timedelta(seconds=30)


class BatchKind(StrEnum):
    """What each row of a batch makes."""

    PAYOUT = "payout"
    REFUND = "refund"

    @property
    def approval_kind(self) -> ApprovalKind:
        return ApprovalKind.PAYOUT_BATCH if self is BatchKind.PAYOUT else ApprovalKind.REFUND_BATCH

    @property
    def limit_kind(self) -> LimitKind:
        return LimitKind.PAYOUT if self is BatchKind.PAYOUT else LimitKind.REFUND


def check_token_may_send(caller: Caller, kind: BatchKind) -> None:
    """An API token needs the kind's scope (payouts, refunds) to send, run or cancel a batch; a
    token held to a daily limit of the kind may not: a batch's rows are made later by a worker,
    where the limit could not be held (ScopeMissing, TokenLimitExceeded: 403)."""
    require_scope(caller.grant, "payouts" if kind is BatchKind.PAYOUT else "refunds")
    if caller.grant is not None and caller.grant.limits_any(kind.limit_kind):
        raise TokenLimitExceeded(f"This token has a daily {kind.value} limit, which a batch cannot be "
                                 f"held to: send the {kind.value}s one by one, or use a token without one")


class BatchState(StrEnum):
    """review -> (awaiting_approval) -> running -> done; or cancelled."""

    REVIEW = "review"
    AWAITING_APPROVAL = "awaiting_approval"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"


class RowState(StrEnum):
    """invalid | valid until the batch runs; then skipped (an invalid row), created or failed."""

    INVALID = "invalid"
    VALID = "valid"
    SKIPPED = "skipped"
    CREATED = "created"
    FAILED = "failed"


# CSV columns, as the header names them (any order, any case). Payouts: the create request's
# fields; the customer's and the statement's are optional, filled as the single payout form fills them.
PAYOUT_COLUMNS = ("method", "amount", "currency", "holder", "account", "bank", "reference", "recipient",
                  "email", "first_name", "last_name", "customer_reference", "country",
                  "statement_descriptor", "callback_url")
REQUIRED_PAYOUT_COLUMNS = ("method", "amount", "currency", "holder", "account", "reference")
REFUND_COLUMNS = ("txno", "amount", "reason")
REQUIRED_REFUND_COLUMNS = ("txno", "amount")
# A JSON row's names for the same columns (camelCase, as the create request names them).
PAYOUT_ROW_FIELDS = {"paymentMethod": "method", "amount": "amount", "currency": "currency",
                     "holder": "holder", "accountNumber": "account", "bank": "bank",
                     "reference": "reference", "recipientId": "recipient", "email": "email",
                     "firstName": "first_name", "lastName": "last_name",
                     "customerReference": "customer_reference", "country": "country",
                     "statementDescriptor": "statement_descriptor", "callbackUrl": "callback_url"}
REFUND_ROW_FIELDS = {"txNo": "txno", "amount": "amount", "reason": "reason"}
TEMPLATES = {
    "payout": "method,amount,currency,bank,holder,account,reference,email,first_name,last_name\r\n"
              "ng-bank-payout,15000.00,NGN,058,Ada Obi,0123456785,salary-2026-11-ada,ada@example.com,Ada,Obi\r\n",
    "refund": "txNo,amount,reason\r\nPAY-0123456789ABCDEF,10.00,Returned goods\r\n",
}
# A JSON number's grammar: a CSV amount is read exactly as the API reads a JSON number.
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


class BatchFileError(PaymentError):
    """A file (or JSON list) that is no batch at all: nothing of it is checked or stored."""


class BatchRefused(PaymentError):
    """A step the batch's state does not allow (running a batch twice, cancelling a running one)."""


@dataclass(frozen=True)
class PayoutDefaults:
    """What a payout row leaves blank takes from the merchant, as the single payout form does."""

    statement_descriptor: str | None
    callback_url: str | None


@dataclass(frozen=True)
class CheckedRow:
    """A row as it will be stored: its number (1 = the first row after the header), the request
    body it makes (the API's own body), and the service's messages when it is refused."""

    number: int
    body: dict
    errors: dict[str, list[str]] | None
    amount: Decimal | None = None
    currency: str | None = None


@dataclass(frozen=True)
class BatchRow:
    """A stored row of a batch, with the status of the transaction it made (if any)."""

    number: int
    body: dict
    errors: dict[str, list[str]] | None
    state: RowState
    tx_no: str | None = None
    tx_status: str | None = None
    decline_reason: str | None = None


@dataclass(frozen=True)
class Batch:
    """A batch and how many of its rows are in each state."""

    id: int
    public_id: str
    merchant_id: int
    mode: Mode
    kind: BatchKind
    state: BatchState
    source: str
    file_name: str | None
    row_count: int
    totals: dict[str, Decimal]
    created_by: str
    created_at: datetime
    submitted_by: str | None = None
    submitted_at: datetime | None = None
    approved_by: str | None = None
    approved_at: datetime | None = None
    finished_at: datetime | None = None
    approval_id: int | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, state: RowState) -> int:
        return self.counts.get(state.value, 0)

    @property
    def valid_rows(self) -> int:
        """Rows that passed every check (those not run yet, and those already run)."""
        return sum(self.count(s) for s in (RowState.VALID, RowState.CREATED, RowState.FAILED))

    @property
    def invalid_rows(self) -> int:
        return self.count(RowState.INVALID) + self.count(RowState.SKIPPED)

    @property
    def done_rows(self) -> int:
        return self.count(RowState.CREATED) + self.count(RowState.FAILED)


def new_public_id() -> str:
    """A batch's public id, e.g. bat_9f2c41d07a3b5e68c1d2e3f4."""
    return f"bat_{secrets.token_hex(12)}"


# -- reading a file or a JSON list into rows ----------------------------------------------------

def read_csv(data: bytes, kind: BatchKind) -> list[dict[str, str]]:
    """The rows of a CSV file as {column: text}, columns named as in PAYOUT_COLUMNS/REFUND_COLUMNS.

    UTF-8, with or without a byte order mark; the header names its columns (any case, any order).
    BatchFileError when it cannot be read, lacks a required column, names an unknown one, or has
    no rows or more than MAX_ROWS.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BatchFileError("The file must be CSV text in UTF-8") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise BatchFileError("The file is empty: its first line must name the columns")
        names = [name.strip().lower() for name in header]
        known, required = ((PAYOUT_COLUMNS, REQUIRED_PAYOUT_COLUMNS) if kind is BatchKind.PAYOUT
                           else (REFUND_COLUMNS, REQUIRED_REFUND_COLUMNS))
        unknown = [name for name in names if name not in known]
        if unknown:
            raise BatchFileError(f"Unknown column: {shown_field_name(unknown[0])} (the columns are "
                                 f"{', '.join(_shown_columns(known))})")
        missing = [name for name in required if name not in names]
        if missing:
            raise BatchFileError(f"The header has no column {_shown_columns(missing)[0]}")
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise BatchFileError(f"The column {_shown_columns(repeated)[0]} appears more than once")
        rows = []
        for values in reader:
            if not any(value.strip() for value in values):
                continue  # a blank line
            if len(rows) == MAX_ROWS:
                raise BatchFileError(f"A batch holds at most {MAX_ROWS} rows")
            row = {name: value for name, value in zip(names, values)}
            if len(values) > len(names):
                row["_errors"] = {"Row": [f"The row has {len(values)} values; the header names "
                                          f"{len(names)} columns"]}
            rows.append(row)
    except csv.Error as error:
        raise BatchFileError(f"The file is not valid CSV (line {reader.line_num}): {error}") from None
    if not rows:
        raise BatchFileError("The file has no rows after its header")
    return rows


def _shown_columns(names) -> list[str]:
    return ["txNo" if name == "txno" else name for name in names]


def read_json_rows(rows: object, kind: BatchKind) -> list[dict]:
    """The rows of a JSON batch as {column: value}; a row's unknown names are kept as errors
    ("Unknown field"). BatchFileError when `rows` is not a list of 1 to MAX_ROWS objects."""
    if not isinstance(rows, list) or not rows:
        raise BatchFileError("Rows must be a list of 1 to 5000 objects")
    if len(rows) > MAX_ROWS:
        raise BatchFileError(f"A batch holds at most {MAX_ROWS} rows")
    names = PAYOUT_ROW_FIELDS if kind is BatchKind.PAYOUT else REFUND_ROW_FIELDS
    read = []
    for row in rows:
        if not isinstance(row, dict):
            read.append({"_errors": {"Row": ["Each row must be a JSON object"]}})
            continue
        columns: dict = {}
        unknown = {}
        for key, value in row.items():
            if key in names:
                columns[names[key]] = value
            else:
                unknown[shown_field_name(key)[:1].upper() + shown_field_name(key)[1:]] = ["Unknown field"]
        if unknown:
            columns["_errors"] = unknown
        read.append(columns)
    return read


def _csv_amount(value: object) -> object:
    """A CSV amount as the API reads a JSON number (exactly, as Decimal); other text is left as it
    is, for the create's own check to refuse ("Amount must be a number")."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    if _JSON_NUMBER.fullmatch(text):
        try:
            return Decimal(text)
        except InvalidOperation:
            return text
    return text


def _blank(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        return None
    return value.strip() if isinstance(value, str) else value


def _names_of_holder(holder: object) -> tuple[object, object]:
    """A customer's first and last names from an account holder's name ("Ada Obi" -> Ada, Obi)."""
    if not isinstance(holder, str) or not holder.strip():
        return None, None
    first, _, last = holder.strip().rpartition(" ")
    return (first, last) if first else (last, last)


def payout_body(row: dict, defaults: PayoutDefaults) -> dict:
    """The create request a payout row makes, as POST /transactions would get it."""
    first, last = _names_of_holder(row.get("holder"))
    reference = _blank(row.get("reference"))
    billing = {
        "firstName": _blank(row.get("first_name")) or first,
        "lastName": _blank(row.get("last_name")) or last,
        "email": _blank(row.get("email")),
        "customerReference": _blank(row.get("customer_reference")) or reference,
    }
    country = _blank(row.get("country"))
    if country is not None:
        billing["country"] = country
    return {
        "amount": _csv_amount(row.get("amount")),
        "currency": _blank(row.get("currency")),
        "reference": reference,
        "statementDescriptor": _blank(row.get("statement_descriptor")) or defaults.statement_descriptor,
        "callbackUrl": _blank(row.get("callback_url")) or defaults.callback_url,
        "transactionAction": PAYOUT_ACTION,
        "billing": billing,
        "payment": {
            "paymentMethod": _blank(row.get("method")),
            "bank": _blank(row.get("bank")),
            "holder": _blank(row.get("holder")),
            "accountNumber": _blank(row.get("account")),
        },
    }


def refund_body(row: dict) -> dict:
    """The refund request a refund row makes, as POST /transactions/refund would get it."""
    return {"txNo": _blank(row.get("txno")), "amount": _csv_amount(row.get("amount")),
            "reason": _blank(row.get("reason"))}


# The columns a saved recipient fills: its account (which the row must then leave empty) and its
# billing (which the row may still give).
RECIPIENT_ACCOUNT_COLUMNS = {"method": "payment_method", "bank": "bank", "holder": "holder",
                             "account": "account_number"}
RECIPIENT_BILLING_COLUMNS = {"first_name": "first_name", "last_name": "last_name", "email": "email",
                             "customer_reference": "customer_reference", "country": "country"}


def _recipient_id(row: dict) -> str | None:
    """The saved recipient a row names: its text (a JSON row's non-text is named as its text, and
    found by no recipient), or None."""
    named = _blank(row.get("recipient"))
    return None if named is None else named if isinstance(named, str) else str(named)[:60]


def _with_recipient(row: dict, named: str, recipient: Recipient | None) -> tuple[dict, dict[str, list[str]]]:
    """A row naming a saved recipient, its cells filled from the recipient (its account and
    currency, its billing where the row gives none); or the row and why the recipient cannot be
    paid by it."""
    if recipient is None:
        return row, {"Recipient": [f"Recipient {named} not found (or archived)"]}
    given = [column for column in RECIPIENT_ACCOUNT_COLUMNS if _blank(row.get(column)) is not None]
    if given:
        return row, {"Recipient": [f"Recipient {named} has its own account: leave "
                                   f"{', '.join(given)} empty"]}
    filled = dict(row)
    for column, attribute in RECIPIENT_ACCOUNT_COLUMNS.items():
        filled[column] = getattr(recipient, attribute)
    for column, attribute in RECIPIENT_BILLING_COLUMNS.items():
        if _blank(row.get(column)) is None:
            filled[column] = getattr(recipient, attribute)
    if _blank(row.get("currency")) is None:
        filled["currency"] = recipient.currency
    return filled, {}


# -- checking -----------------------------------------------------------------------------------

class _BatchReads:
    """What checking a batch reads, read once for all its rows: the merchant's methods, the
    references already used, the banks of each list asked."""

    def __init__(self, deps: Deps, caller: Caller):
        self.deps = deps
        with deps.uow(write=False) as uow:
            self.methods = {method.method_id: method for method in uow.methods.list(caller)}
        self.references: dict[str, str] = {}
        self._banks: dict[tuple, bool | BankListNotReady] = {}

    def knows_bank(self, deps: Deps, method: PaymentMethod, currency: str, code: str,
                   country: str | None) -> bool:
        key = (method.method_id, currency, code, country)
        if key not in self._banks:
            try:
                self._banks[key] = bank_lists.knows_bank(deps, method, currency, code, country)
            except BankListNotReady as error:
                self._banks[key] = error
        found = self._banks[key]
        if isinstance(found, BankListNotReady):
            raise found
        return found


def check_payout_rows(deps: Deps, caller: Caller, rows: list[dict],
                      defaults: PayoutDefaults) -> list[CheckedRow]:
    """Every payout row checked as its own create would be (the create's checks and messages),
    plus a reference used twice in the batch; nothing written."""
    reads = _BatchReads(deps, caller)
    named = {_recipient_id(row) for row in rows} - {None}
    with deps.uow(write=False) as uow:
        saved = {public_id: recipients.find(uow, caller, public_id) for public_id in named}
    parsed = []
    for number, row in enumerate(rows, start=1):
        errors = dict(row.get("_errors") or {})
        recipient_id = _recipient_id(row)
        if recipient_id is not None:
            row, refused = _with_recipient(row, recipient_id, saved.get(recipient_id))
            if refused:  # the rest of the row would only repeat what the recipient lacks
                parsed.append((number, payout_body(row, defaults), None, {**errors, **refused}))
                continue
        body = payout_body(row, defaults)
        request = None
        try:
            request = parse_create(body)
        except FieldErrors as error:
            errors.update(error.errors)
        parsed.append((number, body, request, errors))
    references = [request.reference for _n, _b, request, _e in parsed if request is not None]
    with deps.uow(write=False) as uow:
        reads.references = uow.batches.existing_references(caller, references)
    first_row_of: dict[str, int] = {}
    checked = []
    for number, body, request, errors in parsed:
        if request is not None:
            errors.update(_check_payout(deps, caller, request, reads))
            first = first_row_of.setdefault(request.reference, number)
            if first != number and "Reference" not in errors:
                errors["Reference"] = [f"Reference {request.reference} is also on row {first}"]
        checked.append(CheckedRow(number, body, errors or None,
                                  request.amount if request else None, request.currency if request else None))
    return checked


def _check_payout(deps: Deps, caller: Caller, request, reads: _BatchReads) -> dict[str, list[str]]:
    """The create's own checks of one parsed row, with what the batch read once."""
    method = reads.methods.get(request.payment.payment_method)
    if method is not None and not method.is_payout:
        return {"Payment.PaymentMethod": [f"Payment method {method.method_id} is not a payout method"]}
    try:
        create.check_read(deps, caller, request, method, reads.references.get(request.reference),
                          knows_bank=reads.knows_bank)
    except FieldErrors as error:
        return error.errors
    except DuplicateReference as error:
        return {"Reference": [str(error)]}
    except PaymentError as error:  # the simulator in live mode, a bank list not fetched yet
        return {"Row": [str(error)]}
    return {}


def check_refund_rows(deps: Deps, caller: Caller, rows: list[dict]) -> list[CheckedRow]:
    """Every refund row checked by the refund rules in the interface's order and messages, each
    row's amount taken from what the payment has left after the rows before it; nothing written."""
    parsed = []
    for number, row in enumerate(rows, start=1):
        body = refund_body(row)
        errors = dict(row.get("_errors") or {})
        request = None
        try:
            request = parse_refund(body)
        except FieldErrors as error:
            errors.update(error.errors)
        parsed.append((number, body, request, errors))
    tx_nos = [request.tx_no for _n, _b, request, _e in parsed if request is not None]
    with deps.uow(write=False) as uow:
        originals = uow.batches.payments_by_tx_no(caller, tx_nos)
        methods = {tx_no: uow.methods.of_transaction(original) for tx_no, original in originals.items()}
    taken: dict[str, Decimal] = {}
    checked = []
    for number, body, request, errors in parsed:
        currency = None
        if request is not None and not errors:
            original = originals.get(request.tx_no)
            state = None
            if original is not None:
                state = refund_state(original, RefundArithmetic.of_payment(original, methods[request.tx_no]))
                state = replace(state, remaining_refundable=state.remaining_refundable
                                - taken.get(request.tx_no, Decimal(0)))
                currency = original.currency
            try:
                check_refund(state, request.tx_no, request.amount)
            except FieldErrors as error:
                errors.update(error.errors)
            except RefundRejected as error:
                errors["Refund"] = [str(error)]
            else:
                taken[request.tx_no] = taken.get(request.tx_no, Decimal(0)) + request.amount
        checked.append(CheckedRow(number, body, errors or None,
                                  request.amount if request and not errors else None, currency))
    return checked


def totals_of(rows: list[CheckedRow]) -> dict[str, Decimal]:
    """The valid rows' amounts added up per currency, by currency."""
    totals: dict[str, Decimal] = {}
    for row in rows:
        if row.errors is None and row.currency is not None:
            totals[row.currency] = totals.get(row.currency, Decimal(0)) + row.amount
    return dict(sorted(totals.items()))


def totals_text(totals: dict[str, Decimal]) -> dict[str, str]:
    """Totals as the API writes amounts (the currency's digits)."""
    return {currency: format_amount(amount, currency) for currency, amount in totals.items()}


# -- the batch's life -----------------------------------------------------------------------------

def create_batch(deps: Deps, caller: Caller, kind: BatchKind, rows: list[dict], *, source: str,
                 file_name: str | None = None, request_key: str | None = None,
                 defaults: PayoutDefaults | None = None) -> Batch:
    """Check every row and store the batch in review with its rows (nothing else is created).

    A second batch with the same request key (the API's Idempotency-Key, the upload form's
    one-time key) is the first one.
    """
    check_token_may_send(caller, kind)
    if request_key is not None:
        found = _by_request_key(deps, caller, request_key)
        if found is not None:
            return found
    checked = (check_payout_rows(deps, caller, rows, defaults or PayoutDefaults(None, None))
               if kind is BatchKind.PAYOUT else check_refund_rows(deps, caller, rows))
    now = deps.clock()
    public_id = new_public_id()
    try:
        with deps.uow() as uow:
            uow.batches.add(caller, public_id, kind.value, source, file_name, totals_of(checked),
                            request_key, now, checked)
            uow.audit(caller, "batch.create", public_id, None, None,
                      {"kind": kind.value, "rows": len(checked), "file": file_name})
            uow.commit()
    except BatchKeyTaken:
        found = _by_request_key(deps, caller, request_key)
        if found is not None:
            return found
        raise
    return get_batch(deps, caller, public_id)


class BatchKeyTaken(Exception):
    """The store already has a batch made with this request key (raised by app.store.batches)."""


def _by_request_key(deps: Deps, caller: Caller, request_key: str) -> Batch | None:
    with deps.uow(write=False) as uow:
        return uow.batches.by_request_key(caller, request_key)


def get_batch(deps: Deps, caller: Caller, public_id: str) -> Batch:
    """The caller's batch; BatchNotFound otherwise (another merchant's answers the same)."""
    with deps.uow(write=False) as uow:
        found = uow.batches.get(caller, public_id)
    if found is None:
        raise BatchNotFound(public_id)
    return found


class BatchNotFound(PaymentError):
    """No batch of the caller's has this id."""

    def __init__(self, public_id: str):
        super().__init__(f"Batch {shown_field_name(public_id)} not found")


def rows_of(deps: Deps, batch: Batch) -> list[BatchRow]:
    """The batch's rows in order, with the status of each transaction made (the batch as
    get_batch gave it the caller: not read again)."""
    with deps.uow(write=False) as uow:
        return uow.batches.rows(batch.id)


def progress_mark(deps: Deps, batch: Batch) -> str:
    """What the batch's page shows of it, in a few characters: its state, its rows' counts per
    state and their transactions' per status. The page's poll sends the mark it drew; the same
    mark means nothing it shows has moved (its rows are not read again)."""
    with deps.uow(write=False) as uow:
        made = uow.batches.made_statuses(batch.id)
    counted = [*(f"{state}{n}" for state, n in sorted(batch.counts.items())),
               *(f"{status}{n}" for status, n in sorted(made.items()))]
    return "-".join([batch.state.value, *counted])


def run(deps: Deps, caller: Caller, public_id: str) -> Batch:
    """Run a batch in review: its invalid rows are skipped; its valid rows run now, or once a
    second user approves them when a currency's total is above the merchant's threshold (one
    approval request for the whole batch)."""
    batch = get_batch(deps, caller, public_id)
    check_token_may_send(caller, batch.kind)
    if batch.state is not BatchState.REVIEW:
        raise BatchRefused(f"This batch is {_state_words(batch.state)}; only a batch in review can be run.")
    if batch.count(RowState.VALID) == 0:
        raise BatchRefused("This batch has no valid rows to run.")
    now = deps.clock()
    with deps.uow() as uow:
        above = [(currency, total) for currency, total in batch.totals.items()
                 if needs_approval(uow.batches.threshold_of(caller, currency), total)]
        approval_id = None
        if above:
            currency, total = above[0]
            approval = uow.approvals.add(
                caller, batch.kind.approval_kind, total, currency, None,
                {"batch": batch.public_id, "rows": batch.count(RowState.VALID),
                 "totals": totals_text(batch.totals)},
                batch.public_id, now, now + APPROVAL_WINDOW)
            approval_id = approval.id
        state = BatchState.AWAITING_APPROVAL if above else BatchState.RUNNING
        if not uow.batches.submit(batch.id, state, caller.actor, now, approval_id):
            raise BatchRefused("This batch was run or cancelled meanwhile.")
        uow.audit(caller, "batch.run", batch.public_id, None, None,
                  {"kind": batch.kind.value, "rows": batch.count(RowState.VALID),
                   "totals": totals_text(batch.totals), "approval": bool(above)})
        uow.commit()
    return get_batch(deps, caller, public_id)


def cancel(deps: Deps, caller: Caller, public_id: str) -> Batch:
    """Cancel a batch in review: none of its rows will be created."""
    batch = get_batch(deps, caller, public_id)
    check_token_may_send(caller, batch.kind)
    with deps.uow() as uow:
        if not uow.batches.cancel(batch.id, (BatchState.REVIEW,), deps.clock()):
            raise BatchRefused(f"This batch is {_state_words(batch.state)}; only a batch in review "
                               "can be cancelled.")
        uow.audit(caller, "batch.cancel", batch.public_id, None, None, {"kind": batch.kind.value})
        uow.commit()
    return get_batch(deps, caller, public_id)


def _state_words(state: BatchState) -> str:
    return {BatchState.AWAITING_APPROVAL: "awaiting approval"}.get(state, state.value)


# -- the worker -----------------------------------------------------------------------------------

class _RowTaken(Exception):
    """Another worker created this row meanwhile: this unit's transaction is rolled back."""


def run_due_batches(deps: Deps, *, lease: timedelta = LEASE, chunk: int = CHUNK,
                    worker: str = "worker") -> int:
    """Worker: create the valid rows of running batches, a chunk at a time under a lease on the
    batch; a batch with none left is done. How many rows were handled."""
    handled = 0
    while True:
        now = deps.clock()
        with deps.uow() as uow:
            taken = uow.batches.take_running(now, now + lease)
            uow.commit()
        if taken is None:
            return handled
        batch_id, merchant_id, mode, kind, actor = taken
        caller = Caller(merchant_id, Mode(mode), actor)
        while True:
            with deps.uow(write=False) as uow:
                due = uow.batches.due_rows(batch_id, chunk)
            if not due:
                with deps.uow() as uow:
                    uow.batches.finish(batch_id, deps.clock())
                    uow.commit()
                break
            for row_id, body in due:
                if not _run_row(deps, caller, BatchKind(kind), row_id, body):
                    break  # a bank list being fetched: the batch waits for the next pass
                handled += 1
            else:
                with deps.uow() as uow:
                    now = deps.clock()
                    uow.batches.renew_lease(batch_id, now + lease)
                    uow.commit()
                continue
            with deps.uow() as uow:
                uow.batches.renew_lease(batch_id, None)
                uow.commit()
            return handled


def _run_row(deps: Deps, caller: Caller, kind: BatchKind, row_id: int, body: dict) -> bool:
    """Create one row's payout or refund with the row's move to created in its unit of work; a
    refusal is the row's failure. False when the row must wait (its bank list is being fetched)."""
    def created(uow, tx) -> None:
        if not uow.batches.mark_created(row_id, tx.tx_no):
            raise _RowTaken()

    try:
        if kind is BatchKind.PAYOUT:
            create.create_transaction(deps, caller, parse_create(body), on_created=created)
        else:
            refunds.refund(deps, caller, parse_refund(body), on_created=created)
    except _RowTaken:
        return True
    except BankListNotReady:
        return False
    except DuplicateReference as error:
        _fail_row(deps, row_id, {"Reference": [str(error)]}, error.existing_tx_no)
    except FieldErrors as error:
        _fail_row(deps, row_id, error.errors)
    except RefundRejected as error:
        _fail_row(deps, row_id, {"Refund": [str(error)]})
    except PaymentError as error:
        _fail_row(deps, row_id, {"Row": [str(error)]})
    return True


def _fail_row(deps: Deps, row_id: int, errors: dict[str, list[str]], tx_no: str | None = None) -> None:
    """A row refused when run (unless another worker created it meanwhile)."""
    with deps.uow() as uow:
        uow.batches.mark_failed(row_id, errors, tx_no)
        uow.commit()


def results_csv(rows: list[BatchRow]) -> str:
    """The results file: row, txNo, status, decline reason (or the row's refusal)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["row", "txNo", "status", "declineReason"])
    for row in rows:
        writer.writerow([row.number, row.tx_no or "", row_status(row), row_reason(row) or ""])
    return out.getvalue()


def row_status(row: BatchRow) -> str:
    """A row's status: its transaction's once created, else the row's own state."""
    return row.tx_status if row.state is RowState.CREATED and row.tx_status else row.state.value


def row_reason(row: BatchRow) -> str | None:
    """Why a row did not go through: its transaction's decline reason, or its own messages."""
    if row.state is RowState.CREATED:
        return row.decline_reason
    if row.errors:
        return "; ".join(message for messages in row.errors.values() for message in messages)
    return None
