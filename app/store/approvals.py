"""Approval requests, approval thresholds and per-user limits, always read within the caller's scope.

A request's state moves once, from awaiting, by one conditional UPDATE (`decide`, `expire`):
of two approvers (or two clicks) at once, exactly one moves it, and only that one goes on.
"""
from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from app.payments.approvals import (
    AlreadyRequested,
    ApprovalKind,
    ApprovalRequest,
    ApprovalState,
    UserLimits,
)
from app.payments.model import Caller, Mode
from app.payments.money import from_minor, to_minor

from .scope import counts_per_mode, scoped_to_merchant, scoped_to_mode
from .tables import approval_requests, approval_thresholds, transactions, user_limits, users

originals = transactions.alias("approval_originals")
_SELECT_REQUEST = select(approval_requests, originals.c.tx_no.label("original_tx_no")).outerjoin(
    originals, originals.c.id == approval_requests.c.original_id)


def _request(m) -> ApprovalRequest:
    """The ApprovalRequest of a row, as a mapping (`Result.mappings()`)."""
    return ApprovalRequest(
        id=m["id"], merchant_id=m["merchant_id"], mode=Mode(m["mode"]), kind=ApprovalKind(m["kind"]),
        state=ApprovalState(m["state"]), amount=from_minor(m["amount_minor"], m["currency"]),
        currency=m["currency"], original_id=m["original_id"], original_tx_no=m["original_tx_no"],
        body=json.loads(m["request"]), requested_by=m["requested_by"],
        requested_at=m["requested_at"], expires_at=m["expires_at"], decided_by=m["decided_by"],
        decided_at=m["decided_at"], result_tx_no=m["result_tx_no"], note=m["note"])


class ApprovalRepository:
    """The caller's approval requests (the worker's expiry, which has no caller, says so)."""

    def __init__(self, uow):
        self._uow = uow

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def add(self, caller: Caller, kind: ApprovalKind, amount: Decimal, currency: str,
            original_id: int | None, body: dict, form_key: str, now: datetime,
            expires_at: datetime) -> ApprovalRequest:
        """Record a request awaiting approval; AlreadyRequested when its form was sent before."""
        try:
            new_id = self.conn.execute(insert(approval_requests).values(
                merchant_id=caller.merchant_id, mode=caller.mode.value, kind=kind.value,
                state=ApprovalState.AWAITING.value, amount_minor=to_minor(amount, currency),
                currency=currency, original_id=original_id, request=json.dumps(body, default=str),
                form_key=form_key, requested_by=caller.actor, requested_at=now,
                expires_at=expires_at).returning(approval_requests.c.id)).scalar_one()
        except IntegrityError as error:
            raise AlreadyRequested(form_key) from error
        return self.get(caller, new_id)

    def get(self, caller: Caller, approval_id: int) -> ApprovalRequest | None:
        """The caller's request with this id, or None."""
        row = self.conn.execute(_SELECT_REQUEST.where(
            approval_requests.c.id == approval_id, *scoped_to_mode(approval_requests, caller),
        )).mappings().first()
        return _request(row) if row else None

    def by_form_key(self, caller: Caller, form_key: str) -> ApprovalRequest | None:
        """The caller's request made by the form with this one-time key, or None."""
        row = self.conn.execute(_SELECT_REQUEST.where(
            approval_requests.c.form_key == form_key, *scoped_to_mode(approval_requests, caller),
        )).mappings().first()
        return _request(row) if row else None

    def decide(self, caller: Caller, approval_id: int, state: ApprovalState, now: datetime, *,
               result_tx_no: str | None = None, note: str | None = None) -> bool:
        """Move the caller's awaiting, unexpired request to `state` (an approval only by someone
        other than its requester); False when it was not awaiting any more (or is expired)."""
        conditions = [approval_requests.c.id == approval_id, *scoped_to_mode(approval_requests, caller),
                      approval_requests.c.state == ApprovalState.AWAITING.value,
                      approval_requests.c.expires_at > now]
        if state is ApprovalState.APPROVED:
            conditions.append(approval_requests.c.requested_by != caller.actor)
        result = self.conn.execute(update(approval_requests).where(*conditions).values(
            state=state.value, decided_by=caller.actor, decided_at=now, result_tx_no=result_tx_no,
            note=note))
        return result.rowcount == 1

    def fail(self, caller: Caller, approval_id: int, now: datetime, note: str) -> None:
        """An approved request whose refund or payout could not be made after all."""
        self.conn.execute(update(approval_requests).where(
            approval_requests.c.id == approval_id, *scoped_to_mode(approval_requests, caller),
            approval_requests.c.state == ApprovalState.APPROVED.value,
        ).values(state=ApprovalState.FAILED.value, note=note[:500], result_tx_no=None))

    def due_for_expiry_for_worker(self, now: datetime, limit: int = 100) -> list[int]:
        """Ids of awaiting requests past their expiry, in every merchant (the worker's read)."""
        return list(self.conn.execute(
            select(approval_requests.c.id).where(
                approval_requests.c.state == ApprovalState.AWAITING.value,
                approval_requests.c.expires_at <= now).order_by(approval_requests.c.expires_at)
            .limit(limit)).scalars())

    def expire_for_worker(self, approval_id: int, now: datetime) -> ApprovalRequest | None:
        """Move one awaiting request past its expiry to expired; the request, or None when
        someone decided it first."""
        result = self.conn.execute(update(approval_requests).where(
            approval_requests.c.id == approval_id,
            approval_requests.c.state == ApprovalState.AWAITING.value,
            approval_requests.c.expires_at <= now,
        ).values(state=ApprovalState.EXPIRED.value, decided_by="worker", decided_at=now,
                 note="Expired before anyone approved it"))
        if result.rowcount != 1:
            return None
        row = self.conn.execute(_SELECT_REQUEST.where(approval_requests.c.id == approval_id)).mappings().one()
        return _request(row)

    def list(self, caller: Caller, *, awaiting: bool, limit: int = 100) -> list[ApprovalRequest]:
        """The caller's awaiting requests, oldest first; or the decided ones, newest first."""
        query = _SELECT_REQUEST.where(*scoped_to_mode(approval_requests, caller))
        if awaiting:
            query = query.where(approval_requests.c.state == ApprovalState.AWAITING.value) \
                .order_by(approval_requests.c.requested_at, approval_requests.c.id)
        else:
            query = query.where(approval_requests.c.state != ApprovalState.AWAITING.value) \
                .order_by(approval_requests.c.id.desc())
        return [_request(row) for row in self.conn.execute(query.limit(limit)).mappings()]

    def of_payment(self, caller: Caller, original_id: int) -> list[ApprovalRequest]:
        """The refund requests of one of the caller's payments, newest first."""
        return [_request(row) for row in self.conn.execute(_SELECT_REQUEST.where(
            approval_requests.c.original_id == original_id, *scoped_to_mode(approval_requests, caller),
        ).order_by(approval_requests.c.id.desc())).mappings()]


# -- settings: thresholds and per-user limits (admin) ------------------------------------------

def threshold_of(conn: Connection, caller: Caller, currency: str) -> Decimal | None:
    """The caller's merchant's approval threshold in this currency, or None (no approval)."""
    minor = conn.execute(select(approval_thresholds.c.amount_minor).where(
        *scoped_to_merchant(approval_thresholds, caller),
        approval_thresholds.c.currency == currency)).scalar()
    return None if minor is None else from_minor(minor, currency)


def thresholds_of(conn: Connection, caller: Caller) -> list[tuple[str, Decimal]]:
    """The merchant's thresholds, (currency, amount), by currency."""
    rows = conn.execute(select(approval_thresholds.c.currency, approval_thresholds.c.amount_minor)
                        .where(*scoped_to_merchant(approval_thresholds, caller))
                        .order_by(approval_thresholds.c.currency))
    return [(row.currency, from_minor(row.amount_minor, row.currency)) for row in rows]


def set_threshold(conn: Connection, caller: Caller, currency: str, amount: Decimal | None,
                  now: datetime) -> Decimal | None:
    """Set (or with None remove) the merchant's threshold in a currency; the previous one."""
    previous = threshold_of(conn, caller, currency)
    conn.execute(delete(approval_thresholds).where(*scoped_to_merchant(approval_thresholds, caller),
                                                   approval_thresholds.c.currency == currency))
    if amount is not None:
        conn.execute(insert(approval_thresholds).values(
            merchant_id=caller.merchant_id, currency=currency, amount_minor=to_minor(amount, currency),
            updated_by=caller.actor, updated_at=now))
    return previous


def limits_of_user(conn: Connection, caller: Caller, user_id: int, currency: str) -> UserLimits:
    """One of the merchant's users' limits in a currency (none set: no limit)."""
    row = conn.execute(select(user_limits).where(
        *scoped_to_merchant(user_limits, caller), user_limits.c.user_id == user_id,
        user_limits.c.currency == currency)).first()
    if row is None:
        return UserLimits(currency, None, None)
    return _limits(row)


def _limits(row) -> UserLimits:
    def amount(minor):
        return None if minor is None else from_minor(minor, row.currency)
    return UserLimits(row.currency, amount(row.max_refund_minor), amount(row.max_payout_minor))


def limits_of_merchant(conn: Connection, caller: Caller) -> list[tuple[str, UserLimits]]:
    """Every limit set in the merchant: (user's e-mail, limits), by e-mail and currency."""
    rows = conn.execute(select(user_limits, users.c.email).join(users, users.c.id == user_limits.c.user_id)
                        .where(*scoped_to_merchant(user_limits, caller))
                        .order_by(users.c.email, user_limits.c.currency))
    return [(row.email, _limits(row)) for row in rows]


def set_limits(conn: Connection, caller: Caller, user_id: int, limits: UserLimits,
               now: datetime) -> None:
    """Replace one of the merchant's users' limits in a currency (both None: no limit)."""
    conn.execute(delete(user_limits).where(*scoped_to_merchant(user_limits, caller),
                                           user_limits.c.user_id == user_id,
                                           user_limits.c.currency == limits.currency))
    if limits.max_refund is None and limits.max_payout is None:
        return

    def minor(amount):
        return None if amount is None else to_minor(amount, limits.currency)
    conn.execute(insert(user_limits).values(
        merchant_id=caller.merchant_id, user_id=user_id, currency=limits.currency,
        max_refund_minor=minor(limits.max_refund), max_payout_minor=minor(limits.max_payout),
        updated_by=caller.actor, updated_at=now))


def awaiting_counts(conn: Connection, merchant_id: int, kinds: list[ApprovalKind],
                    not_requested_by: str) -> dict[Mode, int]:
    """How many requests of these kinds await a decision in each mode of the merchant, leaving
    out the user's own (which another user must approve)."""
    if not kinds:
        return counts_per_mode(())
    return counts_per_mode(conn.execute(
        select(approval_requests.c.mode, func.count()).where(
            approval_requests.c.merchant_id == merchant_id,
            approval_requests.c.state == ApprovalState.AWAITING.value,
            approval_requests.c.kind.in_([kind.value for kind in kinds]),
            approval_requests.c.requested_by != not_requested_by,
        ).group_by(approval_requests.c.mode)))
