"""Second factors: users' TOTP secrets and last accepted time-steps, recovery codes, the merchant's rule."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from .encryption import SecretBox, reseal_column
from .tables import merchants, recovery_codes, totp_enrolments, users


def sealed_totp_secret(conn: Connection, user_id: int) -> tuple[str | None, int | None]:
    """The user's TOTP secret as stored (a Fernet token, or None) and the last step accepted."""
    row = conn.execute(select(users.c.totp_secret, users.c.totp_last_step)
                       .where(users.c.id == user_id)).one()
    return row.totp_secret, row.totp_last_step


def enrolment_secret(conn: Connection, user_id: int, sealed_new_secret: str, at: datetime) -> str:
    """The sealed secret the user is enrolling: the one begun earlier, or else this new one
    (kept until enable_totp; two tabs or sessions of the user show the same secret)."""
    dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    conn.execute(dialect_insert(totp_enrolments)
                 .values(user_id=user_id, sealed_secret=sealed_new_secret, created_at=at)
                 .on_conflict_do_nothing(index_elements=["user_id"]))
    return pending_enrolment(conn, user_id)


def pending_enrolment(conn: Connection, user_id: int) -> str | None:
    """The sealed secret the user is enrolling, or None when they have not begun."""
    return conn.execute(select(totp_enrolments.c.sealed_secret)
                        .where(totp_enrolments.c.user_id == user_id)).scalar_one_or_none()


def enable_totp(conn: Connection, user_id: int, sealed_secret: str, step: int,
                code_hashes: list[str]) -> None:
    """Give the user a second factor (its confirmation code's step used) and new recovery codes;
    their enrolment is over."""
    conn.execute(update(users).where(users.c.id == user_id)
                 .values(totp_secret=sealed_secret, totp_last_step=step))
    conn.execute(delete(totp_enrolments).where(totp_enrolments.c.user_id == user_id))
    conn.execute(delete(recovery_codes).where(recovery_codes.c.user_id == user_id))
    conn.execute(insert(recovery_codes), [{"user_id": user_id, "code_hash": h} for h in code_hashes])


def reseal_totp_secrets(conn: Connection, box: SecretBox) -> int:
    """Seal every TOTP secret, enabled or being enrolled, again under the first key (after a key
    rotation); how many."""
    return (reseal_column(conn, users.c.totp_secret, users.c.id, box)
            + reseal_column(conn, totp_enrolments.c.sealed_secret, totp_enrolments.c.user_id, box))


def remove_totp(conn: Connection, user_id: int) -> None:
    """Take the user's second factor and recovery codes away (an admin's reset)."""
    conn.execute(update(users).where(users.c.id == user_id)
                 .values(totp_secret=None, totp_last_step=None))
    conn.execute(delete(recovery_codes).where(recovery_codes.c.user_id == user_id))


def claim_step(conn: Connection, user_id: int, step: int) -> bool:
    """Accept a code of this time-step once: False when this or a later step was accepted already."""
    return conn.execute(
        update(users)
        .where(users.c.id == user_id, users.c.totp_secret.is_not(None),
               or_(users.c.totp_last_step.is_(None), users.c.totp_last_step < step))
        .values(totp_last_step=step)
    ).rowcount == 1


def use_recovery_code(conn: Connection, user_id: int, code_hash: str, at: datetime) -> bool:
    """Spend one of the user's unused recovery codes; False when there is no such unused code."""
    return conn.execute(
        update(recovery_codes)
        .where(recovery_codes.c.user_id == user_id, recovery_codes.c.code_hash == code_hash,
               recovery_codes.c.used_at.is_(None))
        .values(used_at=at)
    ).rowcount == 1


def unused_recovery_codes(conn: Connection, user_id: int) -> int:
    """How many recovery codes the user has left."""
    return len(conn.execute(select(recovery_codes.c.id).where(
        recovery_codes.c.user_id == user_id, recovery_codes.c.used_at.is_(None))).all())


def set_required(conn: Connection, merchant_id: int, required: bool) -> None:
    """Require a second factor of every user of the merchant, or stop requiring it."""
    conn.execute(update(merchants).where(merchants.c.id == merchant_id)
                 .values(require_two_factor=required))


def is_required(conn: Connection, merchant_id: int) -> bool:
    """Whether the merchant requires a second factor of every user."""
    return bool(conn.execute(select(merchants.c.require_two_factor)
                             .where(merchants.c.id == merchant_id)).scalar_one())
