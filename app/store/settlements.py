"""Stored settlements and their lines, matched to Paydesk's transactions; the reconciliation's
exceptions; the workers' settlement fetch schedule."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import Connection, and_, case, delete, func, insert, literal, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.payments.disputes import LOST_STATUSES
from app.payments.model import Caller, Kind, Status
from app.payments.reconcile import (
    MATCHED_KIND, FetchedSettlement, KnownTransaction, LineType, Outcome, match,
)

from .tables import (
    disputes,
    payment_methods,
    provider_accounts,
    settlement_fetches,
    settlement_lines,
    settlements,
    transactions,
)

MAX_ERROR_LENGTH = 500  # settlement_fetches.last_error
# The settlement's public id: what the API and the dashboard's URLs name it by.
PUBLIC_PREFIX = "stl_"


def public_id(settlement_id: int) -> str:
    """The id the API and the dashboard show (stl_42)."""
    return f"{PUBLIC_PREFIX}{settlement_id}"


def parse_public_id(text: str) -> int | None:
    """The row id in a public id, or None when the text is not one."""
    digits = text.removeprefix(PUBLIC_PREFIX) if text.startswith(PUBLIC_PREFIX) else ""
    return int(digits) if digits.isdigit() and len(digits) <= 18 else None


@dataclass(frozen=True)
class SettlementSummary:
    """A stored settlement with its line count and how many lines are exceptions (not matched)."""

    id: int
    provider: str
    provider_settlement_id: str
    settled_on: date
    currency: str
    gross_minor: int
    fees_minor: int
    net_minor: int
    status: str
    fetched_at: datetime
    line_count: int
    exception_count: int

    @property
    def public_id(self) -> str:
        return public_id(self.id)


@dataclass(frozen=True)
class StoredLine:
    """A settlement line as stored, with the txNo of the Paydesk transaction it matched."""

    provider_transaction_id: str
    reference: str | None
    type: LineType
    gross_minor: int
    fee_minor: int
    net_minor: int
    currency: str
    tx_no: str | None
    outcome: Outcome
    paydesk_amount_minor: int | None = None  # the matched transaction's own amount and currency
    paydesk_currency: str | None = None


@dataclass(frozen=True)
class MissingPayment:
    """A Captured payment past the settlement delay that no stored settlement carries."""

    merchant_id: int
    mode: str
    tx_no: str
    amount_minor: int
    currency: str
    provider: str
    created_at: datetime


@dataclass(frozen=True)
class LineException:
    """A settlement line that is not matched, for `reconcile verify`."""

    merchant_id: int
    mode: str
    provider: str
    provider_settlement_id: str
    settled_on: date
    line: StoredLine


@dataclass(frozen=True)
class KnownFee:
    """A transaction's fee as a settlement carried it."""

    fee_minor: int
    currency: str
    settlement_id: int
    settled_on: date

    @property
    def public_settlement_id(self) -> str:
        return public_id(self.settlement_id)


# Writing what a worker fetched


def save_settlement(conn: Connection, *, merchant_id: int, mode: str, provider: str,
                    provider_account_id: int | None, fetched: FetchedSettlement, fetched_at: datetime) -> int:
    """Store a fetched settlement and its lines, each matched to Paydesk's transaction; its id.

    A settlement stored before (same merchant, mode, provider and provider id) is updated and
    its lines replaced, so fetching it again changes nothing that did not change. The caller runs
    this in one unit of work: a worker killed midway leaves the settlement as it was.
    """
    values = {"provider_account_id": provider_account_id, "settled_on": fetched.settled_on,
              "currency": fetched.currency, "gross_minor": fetched.gross_minor,
              "fees_minor": fetched.fees_minor, "net_minor": fetched.net_minor,
              "status": fetched.status[:40], "fetched_at": fetched_at}
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    upsert = dialect.insert(settlements).values(
        merchant_id=merchant_id, mode=mode, provider=provider,
        provider_settlement_id=fetched.provider_settlement_id, **values)
    settlement_id = conn.execute(upsert.on_conflict_do_update(
        index_elements=[settlements.c.merchant_id, settlements.c.mode, settlements.c.provider,
                        settlements.c.provider_settlement_id],
        set_=values).returning(settlements.c.id)).scalar_one()
    conn.execute(delete(settlement_lines).where(settlement_lines.c.settlement_id == settlement_id))
    if fetched.lines:
        known = _known_transactions(conn, merchant_id, mode, fetched)
        rows = []
        for line in fetched.lines:
            found = _named_by(line, known)
            rows.append({
                "settlement_id": settlement_id, "provider_transaction_id": line.provider_transaction_id,
                "reference": line.reference, "line_type": line.type.value, "gross_minor": line.gross_minor,
                "fee_minor": line.fee_minor, "net_minor": line.net_minor, "currency": line.currency,
                "transaction_id": found.id if found else None, "match_result": match(line, found).value,
            })
        conn.execute(insert(settlement_lines), rows)
    return settlement_id


def _known_transactions(conn: Connection, merchant_id: int, mode: str,
                        fetched: FetchedSettlement) -> list[tuple[str | None, KnownTransaction]]:
    """The merchant's transactions in the mode that the lines name by provider id or txNo."""
    ids = {line.provider_transaction_id for line in fetched.lines}
    references = {line.reference for line in fetched.lines if line.reference}
    named = transactions.c.provider_transaction_id.in_(ids)
    if references:
        named = or_(named, transactions.c.tx_no.in_(references))
    rows = conn.execute(select(transactions.c.id, transactions.c.tx_no, transactions.c.kind,
                               transactions.c.amount_minor, transactions.c.currency,
                               transactions.c.provider_transaction_id)
                        .where(transactions.c.merchant_id == merchant_id, transactions.c.mode == mode, named))
    return [(row.provider_transaction_id,
             KnownTransaction(row.id, row.tx_no, row.kind, row.amount_minor, row.currency)) for row in rows]


def _named_by(line, known: list[tuple[str | None, KnownTransaction]]) -> KnownTransaction | None:
    """The transaction a line names: by the provider's id first, then by its reference (txNo);
    only of the kind the line's type settles (a dispute's line names its payment)."""
    kind = MATCHED_KIND.get(line.type)
    candidates = [(provider_id, tx) for provider_id, tx in known if kind is None or tx.kind == kind]
    for provider_id, tx in candidates:
        if provider_id == line.provider_transaction_id:
            return tx
    for _provider_id, tx in candidates:
        if line.reference and tx.tx_no == line.reference:
            return tx
    return None


def stored_states(conn: Connection, merchant_id: int, mode: str, provider: str,
                  provider_settlement_ids: list[str]) -> dict[str, tuple[str, int]]:
    """(status, net) of the settlements already stored, by provider id: a worker fetches the
    lines of a settlement again only when one of them changed."""
    if not provider_settlement_ids:
        return {}
    rows = conn.execute(select(settlements.c.provider_settlement_id, settlements.c.status,
                               settlements.c.net_minor)
                        .where(settlements.c.merchant_id == merchant_id, settlements.c.mode == mode,
                               settlements.c.provider == provider,
                               settlements.c.provider_settlement_id.in_(provider_settlement_ids)))
    return {row.provider_settlement_id: (row.status, row.net_minor) for row in rows}


# Reading them


_LINE_COUNTS = (
    select(settlement_lines.c.settlement_id, func.count().label("line_count"),
           func.sum(case((settlement_lines.c.match_result != Outcome.MATCHED.value, 1), else_=0))
           .label("exception_count"))
    .group_by(settlement_lines.c.settlement_id)
    .subquery("line_counts")
)


def _summaries():
    return (select(settlements, func.coalesce(_LINE_COUNTS.c.line_count, 0).label("line_count"),
                   func.coalesce(_LINE_COUNTS.c.exception_count, 0).label("exception_count"))
            .select_from(settlements.outerjoin(_LINE_COUNTS, _LINE_COUNTS.c.settlement_id == settlements.c.id)))


def _summary(row) -> SettlementSummary:
    return SettlementSummary(row.id, row.provider, row.provider_settlement_id, row.settled_on, row.currency,
                             row.gross_minor, row.fees_minor, row.net_minor, row.status, row.fetched_at,
                             int(row.line_count), int(row.exception_count))


def list_settlements(conn: Connection, caller: Caller, *, before_id: int | None = None,
                     limit: int = 50) -> list[SettlementSummary]:
    """The caller's settlements (merchant and mode), newest stored first, older than before_id."""
    query = _summaries().where(settlements.c.merchant_id == caller.merchant_id,
                               settlements.c.mode == caller.mode.value)
    if before_id is not None:
        query = query.where(settlements.c.id < before_id)
    return [_summary(row) for row in conn.execute(query.order_by(settlements.c.id.desc()).limit(limit))]


def get_settlement(conn: Connection, caller: Caller, settlement_id: int) -> SettlementSummary | None:
    """One of the caller's settlements, or None (another merchant's or mode's answers None too)."""
    row = conn.execute(_summaries().where(settlements.c.id == settlement_id,
                                          settlements.c.merchant_id == caller.merchant_id,
                                          settlements.c.mode == caller.mode.value)).first()
    return _summary(row) if row else None


def _line(row) -> StoredLine:
    return StoredLine(row.provider_transaction_id, row.reference, LineType(row.line_type), row.gross_minor,
                      row.fee_minor, row.net_minor, row.currency, row.tx_no, Outcome(row.match_result),
                      row.paydesk_amount_minor, row.paydesk_currency)


_LINES = (select(settlement_lines, transactions.c.tx_no,
                 transactions.c.amount_minor.label("paydesk_amount_minor"),
                 transactions.c.currency.label("paydesk_currency"))
          .select_from(settlement_lines.outerjoin(transactions,
                                                  transactions.c.id == settlement_lines.c.transaction_id)))


def lines_of(conn: Connection, settlement_id: int) -> list[StoredLine]:
    """A settlement's lines in the provider's order (read its settlement with get_settlement first)."""
    rows = conn.execute(_LINES.where(settlement_lines.c.settlement_id == settlement_id)
                        .order_by(settlement_lines.c.id))
    return [_line(row) for row in rows]


def fees_of(conn: Connection, transaction_id: int) -> list[KnownFee]:
    """The provider's fees on a transaction, from the settlements that carried it."""
    rows = conn.execute(select(settlement_lines.c.fee_minor, settlement_lines.c.currency,
                               settlements.c.id, settlements.c.settled_on)
                        .join(settlements, settlements.c.id == settlement_lines.c.settlement_id)
                        .where(settlement_lines.c.transaction_id == transaction_id)
                        .order_by(settlement_lines.c.id))
    return [KnownFee(row.fee_minor, row.currency, row.id, row.settled_on) for row in rows]


def line_exceptions(conn: Connection, caller: Caller | None = None) -> list[LineException]:
    """Every settlement line that is not matched (the caller's, or everyone's), oldest first."""
    query = (_LINES.add_columns(settlements.c.merchant_id, settlements.c.mode, settlements.c.provider,
                                settlements.c.provider_settlement_id, settlements.c.settled_on)
             .join(settlements, settlements.c.id == settlement_lines.c.settlement_id)
             .where(settlement_lines.c.match_result != Outcome.MATCHED.value))
    if caller is not None:
        query = query.where(settlements.c.merchant_id == caller.merchant_id,
                            settlements.c.mode == caller.mode.value)
    rows = conn.execute(query.order_by(settlements.c.settled_on, settlement_lines.c.id))
    return [LineException(row.merchant_id, row.mode, row.provider, row.provider_settlement_id,
                          row.settled_on, _line(row)) for row in rows]


def missing_from_settlement(conn: Connection, now: datetime, delay: timedelta,
                            caller: Caller | None = None, limit: int | None = None) -> list[MissingPayment]:
    """Captured payments older than the delay that no stored settlement carries (the caller's or
    everyone's), oldest first.

    Only payments a provider's settlements are expected to carry are checked: those of a merchant,
    mode and provider whose stored settlements carry a payment, created no earlier than the oldest
    payment they carry (Paydesk holds no settlement from before it began fetching them).
    """
    carried = transactions.alias("carried")
    first_carried = (select(settlements.c.merchant_id, settlements.c.mode, settlements.c.provider,
                            func.min(carried.c.created_at).label("since"))
                     .join(settlement_lines, settlement_lines.c.settlement_id == settlements.c.id)
                     .join(carried, carried.c.id == settlement_lines.c.transaction_id)
                     .group_by(settlements.c.merchant_id, settlements.c.mode, settlements.c.provider)
                     .subquery("first_carried"))
    settled = select(settlement_lines.c.transaction_id).where(
        settlement_lines.c.transaction_id == transactions.c.id)
    query = (select(transactions.c.merchant_id, transactions.c.mode, transactions.c.tx_no,
                    transactions.c.amount_minor, transactions.c.currency, transactions.c.created_at,
                    payment_methods.c.provider)
             .join(payment_methods, and_(payment_methods.c.merchant_id == transactions.c.merchant_id,
                                         payment_methods.c.method_id == transactions.c.payment_method,
                                         or_(payment_methods.c.mode.is_(None),
                                             payment_methods.c.mode == transactions.c.mode)))
             .join(first_carried, and_(first_carried.c.merchant_id == transactions.c.merchant_id,
                                       first_carried.c.mode == transactions.c.mode,
                                       first_carried.c.provider == payment_methods.c.provider))
             .where(transactions.c.kind == Kind.PAYMENT.value, transactions.c.status == Status.CAPTURED.value,
                    transactions.c.created_at <= now - delay,
                    transactions.c.created_at >= first_carried.c.since, ~settled.exists()))
    if caller is not None:
        query = query.where(transactions.c.merchant_id == caller.merchant_id,
                            transactions.c.mode == caller.mode.value)
    query = query.order_by(transactions.c.created_at, transactions.c.id)
    if limit is not None:
        query = query.limit(limit)
    return [MissingPayment(row.merchant_id, row.mode, row.tx_no, row.amount_minor, row.currency, row.provider,
                           row.created_at) for row in conn.execute(query)]


# The workers' fetch schedule


@dataclass(frozen=True)
class DueFetch:
    """A connected provider account whose settlements a worker should fetch now."""

    provider_account_id: int
    failed_fetches: int


def due_fetches(conn: Connection, now: datetime, limit: int) -> list[DueFetch]:
    """Connected Paystack and Stripe accounts never fetched, or due by now; the longest waiting first."""
    rows = conn.execute(
        select(provider_accounts.c.id, func.coalesce(settlement_fetches.c.failed_fetches, 0).label("failed"))
        .select_from(provider_accounts.outerjoin(
            settlement_fetches, settlement_fetches.c.provider_account_id == provider_accounts.c.id))
        .where(provider_accounts.c.disconnected_at.is_(None),
               or_(settlement_fetches.c.due_at.is_(None), settlement_fetches.c.due_at <= now))
        .order_by(settlement_fetches.c.due_at.is_not(None), settlement_fetches.c.due_at, provider_accounts.c.id)
        .limit(limit))
    return [DueFetch(row.id, int(row.failed)) for row in rows]


def claim_fetch(conn: Connection, provider_account_id: int, now: datetime, until: datetime) -> bool:
    """Take an account's fetch for one worker: not due again before `until` (then another worker
    takes it, if this one died). False when another worker took it first."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    first = conn.execute(dialect.insert(settlement_fetches).values(
        provider_account_id=provider_account_id, due_at=until, failed_fetches=0)
        .on_conflict_do_nothing(index_elements=[settlement_fetches.c.provider_account_id])
        .returning(settlement_fetches.c.provider_account_id)).first()
    if first is not None:
        return True  # its first fetch
    return conn.execute(update(settlement_fetches).where(
        settlement_fetches.c.provider_account_id == provider_account_id,
        settlement_fetches.c.due_at <= now).values(due_at=until)).rowcount == 1


def save_fetch_success(conn: Connection, provider_account_id: int, fetched_at: datetime,
                       next_due: datetime) -> None:
    """A complete fetch: due again at next_due; the failures are forgotten."""
    conn.execute(update(settlement_fetches).where(
        settlement_fetches.c.provider_account_id == provider_account_id).values(
        due_at=next_due, fetched_at=fetched_at, failed_fetches=0, last_error=None))


def save_fetch_failure(conn: Connection, provider_account_id: int, error: str, retry_at: datetime) -> None:
    """A failed fetch: what was stored stays; the error is kept and the fetch tried at retry_at."""
    conn.execute(update(settlement_fetches).where(
        settlement_fetches.c.provider_account_id == provider_account_id).values(
        due_at=retry_at, failed_fetches=settlement_fetches.c.failed_fetches + 1,
        last_error=error[:MAX_ERROR_LENGTH]))


@dataclass(frozen=True)
class Settleable:
    """A sandbox payment, refund or lost dispute the simulator's daily settlement carries."""

    tx_no: str  # a dispute's: its payment's
    kind: str  # payment | refund | dispute
    amount_minor: int
    currency: str
    created_at: datetime  # the day it is settled on (a dispute's: when it closed)
    provider_transaction_id: str | None


# A payment in these statuses was captured: Refunded and Chargeback come only after Captured.
_WAS_CAPTURED = (Status.CAPTURED.value, Status.REFUNDED.value, Status.CHARGEBACK.value)


def sandbox_settleable(conn: Connection, caller: Caller, since: datetime) -> list[Settleable]:
    """The caller's simulator payments that were captured (Captured, or Refunded or charged back
    since) and its Captured refunds of them, created since `since`, oldest first."""
    simulated = select(payment_methods.c.method_id).where(
        payment_methods.c.merchant_id == caller.merchant_id, payment_methods.c.provider == "simulator")
    rows = conn.execute(
        select(transactions.c.tx_no, transactions.c.kind, transactions.c.amount_minor, transactions.c.currency,
               transactions.c.created_at, transactions.c.provider_transaction_id)
        .where(transactions.c.merchant_id == caller.merchant_id, transactions.c.mode == caller.mode.value,
               transactions.c.created_at >= since, transactions.c.payment_method.in_(simulated),
               or_(and_(transactions.c.kind == Kind.PAYMENT.value,
                        transactions.c.status.in_(_WAS_CAPTURED)),
                   and_(transactions.c.kind == Kind.REFUND.value,
                        transactions.c.status == Status.CAPTURED.value)))
        .order_by(transactions.c.created_at, transactions.c.id))
    return [Settleable(*row) for row in rows]


def sandbox_lost_disputes(conn: Connection, caller: Caller, since: datetime) -> list[Settleable]:
    """The caller's simulator disputes lost or accepted since `since` (their amount went back to
    the customer), each as its payment (txNo, provider id) with the dispute's amount and the
    moment it closed, oldest first."""
    rows = conn.execute(
        select(transactions.c.tx_no, literal("dispute"), disputes.c.amount_minor, disputes.c.currency,
               disputes.c.updated_at, transactions.c.provider_transaction_id)
        .join(transactions, transactions.c.id == disputes.c.payment_id)
        .where(disputes.c.merchant_id == caller.merchant_id, disputes.c.mode == caller.mode.value,
               disputes.c.provider == "simulator", disputes.c.updated_at >= since,
               disputes.c.status.in_([status.value for status in LOST_STATUSES]))
        .order_by(disputes.c.updated_at, disputes.c.id))
    return [Settleable(*row) for row in rows]
