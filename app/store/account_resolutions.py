"""Account names a provider resolved for payout forms: asked for by requests, answered by workers."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.payments.account_names import ResolutionKey, StoredResolution

from .tables import account_resolutions, provider_accounts

MAX_TEXT = 500  # refusal, last_error
MAX_NAME = 200  # holder_name


@dataclass(frozen=True)
class DueResolution:
    """An account a worker should ask the provider to name now, and how many tries failed."""

    id: int
    key: ResolutionKey
    failed_tries: int


def _is_key(key: ResolutionKey):
    return and_(account_resolutions.c.provider_account_id == key.provider_account_id,
                account_resolutions.c.bank_code == key.bank_code,
                account_resolutions.c.account_number == key.account_number)


class AccountResolutionRepository:
    """The unit of work's reads and requests of account names (uow.account_resolutions)."""

    def __init__(self, uow):
        self._uow = uow

    def get(self, key: ResolutionKey) -> StoredResolution | None:
        """What is known of the account's name, or None when nobody asked for it yet."""
        row = self._uow.conn.execute(select(account_resolutions).where(_is_key(key))).mappings().first()
        if row is None:
            return None
        return StoredResolution(row["holder_name"], row["refusal"], row["last_error"], row["due_at"],
                                row["answered_at"], row["failed_tries"])

    def ask_for(self, key: ResolutionKey, now: datetime) -> None:
        """Due now: a new row, or an answer grown stale asked again. A row already due keeps its
        schedule (its backoff after failures too), so repeated requests never hurry a provider."""
        conn = self._uow.conn
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        inserted = dialect.insert(account_resolutions).values(
            provider_account_id=key.provider_account_id, bank_code=key.bank_code,
            account_number=key.account_number, requested_at=now, due_at=now, failed_tries=0)
        conn.execute(inserted.on_conflict_do_update(
            index_elements=[account_resolutions.c.provider_account_id, account_resolutions.c.bank_code,
                            account_resolutions.c.account_number],
            set_={"requested_at": now, "due_at": now, "failed_tries": 0},
            where=account_resolutions.c.due_at.is_(None)))


def due_resolutions(conn: Connection, now: datetime, limit: int) -> list[DueResolution]:
    """Resolutions of connected accounts due by `now`, the longest waiting first."""
    rows = conn.execute(
        select(account_resolutions.c.id, account_resolutions.c.provider_account_id,
               account_resolutions.c.bank_code, account_resolutions.c.account_number,
               account_resolutions.c.failed_tries)
        .join(provider_accounts, provider_accounts.c.id == account_resolutions.c.provider_account_id)
        .where(account_resolutions.c.due_at <= now, provider_accounts.c.disconnected_at.is_(None))
        .order_by(account_resolutions.c.due_at).limit(limit))
    return [DueResolution(row.id, ResolutionKey(row.provider_account_id, row.bank_code, row.account_number),
                          row.failed_tries) for row in rows]


def claim(conn: Connection, due: DueResolution, now: datetime, until: datetime) -> bool:
    """Take a due resolution for one worker: not due again before `until` (then another worker
    takes it, if this one died). False when another worker took it first."""
    return conn.execute(update(account_resolutions).where(
        account_resolutions.c.id == due.id, account_resolutions.c.due_at <= now,
    ).values(due_at=until)).rowcount == 1


def save_answer(conn: Connection, resolution_id: int, *, holder_name: str | None, refusal: str | None,
                answered_at: datetime) -> None:
    """The provider's answer: the holder's name, or its words for an account it did not find."""
    conn.execute(update(account_resolutions).where(account_resolutions.c.id == resolution_id).values(
        holder_name=holder_name[:MAX_NAME] if holder_name else None,
        refusal=refusal[:MAX_TEXT] if refusal else None, last_error=None, due_at=None,
        failed_tries=0, answered_at=answered_at))


def save_failure(conn: Connection, resolution_id: int, error: str, retry_at: datetime) -> None:
    """No answer: why is kept, and the provider is asked again at retry_at."""
    conn.execute(update(account_resolutions).where(account_resolutions.c.id == resolution_id).values(
        due_at=retry_at, failed_tries=account_resolutions.c.failed_tries + 1,
        last_error=error[:MAX_TEXT]))
