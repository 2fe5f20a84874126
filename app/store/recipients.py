"""Saved recipients, read and written in the caller's merchant and mode (uow.recipients)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from app.payments.model import Caller
from app.payments.recipients import Recipient, RecipientDetails

from .db import is_unique_violation
from .listing import escape_like
from .merchants import merchant_by_id
from .scope import scoped_to_mode
from .tables import recipients


class RecipientRepository:
    """The caller's recipients (uow.recipients)."""

    def __init__(self, uow):
        self._uow = uow

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def add(self, caller: Caller, public_id: str, details: RecipientDetails, at: datetime) -> Recipient | None:
        """Store a new recipient; None when the account has a live one already (saved meanwhile:
        the unique index refused the second)."""
        values = dict(public_id=public_id, merchant_id=caller.merchant_id, mode=caller.mode.value,
                      payment_method=details.payment_method, currency=details.currency,
                      country=details.country, bank=details.bank, holder=details.holder,
                      account_number=details.account_number, label=details.label,
                      first_name=details.first_name, last_name=details.last_name, email=details.email,
                      customer_reference=details.customer_reference, created_at=at,
                      created_by=caller.actor)
        try:
            with self.conn.begin_nested():
                self.conn.execute(insert(recipients).values(**values))
        except IntegrityError as error:
            if is_unique_violation(error):
                return None
            raise
        return _recipient(values)

    def of_account(self, caller: Caller, details: RecipientDetails) -> Recipient | None:
        """The live recipient of this method, bank and account, if one is saved."""
        bank = recipients.c.bank == details.bank if details.bank else recipients.c.bank.is_(None)
        row = self.conn.execute(select(recipients).where(
            *scoped_to_mode(recipients, caller), recipients.c.archived_at.is_(None),
            recipients.c.payment_method == details.payment_method, bank,
            recipients.c.account_number == details.account_number)).mappings().first()
        return _recipient(row) if row else None

    def get(self, caller: Caller, public_id: str, *, for_update: bool = False) -> Recipient | None:
        """The caller's recipient with this id (archived ones too), or None."""
        query = select(recipients).where(*scoped_to_mode(recipients, caller),
                                         recipients.c.public_id == public_id)
        if for_update and self._uow.is_postgres:
            query = query.with_for_update()
        row = self.conn.execute(query).mappings().first()
        return _recipient(row) if row else None

    def list(self, caller: Caller, search: str = "", *, archived: bool = False, limit: int = 100) -> list[Recipient]:
        """The caller's live (or archived) recipients by holder, those whose holder or label
        contains `search` (any case)."""
        query = select(recipients).where(
            *scoped_to_mode(recipients, caller),
            recipients.c.archived_at.is_not(None) if archived else recipients.c.archived_at.is_(None))
        term = search.strip()
        if term:
            pattern = "%" + escape_like(term) + "%"
            query = query.where(or_(recipients.c.holder.ilike(pattern, escape="\\"),
                                    recipients.c.label.ilike(pattern, escape="\\")))
        rows = self.conn.execute(query.order_by(recipients.c.holder, recipients.c.id).limit(limit)).mappings()
        return [_recipient(row) for row in rows]

    def archive(self, caller: Caller, public_id: str, at: datetime) -> None:
        """Mark the caller's recipient archived, by the caller, now."""
        self.conn.execute(update(recipients).where(
            *scoped_to_mode(recipients, caller), recipients.c.public_id == public_id,
            recipients.c.archived_at.is_(None)).values(archived_at=at, archived_by=caller.actor))

    def payout_defaults(self, caller: Caller) -> tuple[str, str | None]:
        """What a payout to a recipient takes from its merchant unless told: the statement text
        (the merchant's name, as the payout form has it) and the default callback URL."""
        merchant = merchant_by_id(self.conn, caller.merchant_id)
        return merchant.name, merchant.default_callback_url


def _recipient(row) -> Recipient:
    return Recipient(
        public_id=row["public_id"], payment_method=row["payment_method"], currency=row["currency"],
        country=row["country"], bank=row["bank"], holder=row["holder"],
        account_number=row["account_number"], label=row["label"], first_name=row["first_name"],
        last_name=row["last_name"], email=row["email"], customer_reference=row["customer_reference"],
        created_at=row["created_at"], created_by=row["created_by"],
        archived_at=row.get("archived_at"), archived_by=row.get("archived_by"))
