"""Secrets at rest: provider keys, webhook signing secrets and TOTP secrets are stored only as
Fernet tokens, under keys that can rotate."""
from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy import Column, Connection, select, update


class SecretBoxError(ValueError):
    """The configured key text is not a list of Fernet keys, or a token is not readable with them."""


class SecretBox:
    """Encrypts with the first key of PAYDESK_ENCRYPTION_KEY and decrypts with any of them."""

    def __init__(self, keys: str):
        try:
            self._fernet = MultiFernet([Fernet(key.strip()) for key in keys.split(",") if key.strip()])
        except (ValueError, TypeError) as error:
            raise SecretBoxError("PAYDESK_ENCRYPTION_KEY must be comma-separated Fernet keys "
                                 "(Fernet.generate_key())") from error

    def __repr__(self) -> str:
        return "SecretBox()"  # never the keys

    def seal(self, secret: str) -> str:
        """The secret as a token to store."""
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, token: str) -> str:
        """The secret a stored token holds."""
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise SecretBoxError("a stored secret cannot be decrypted with PAYDESK_ENCRYPTION_KEY "
                                 "(was its key removed?)") from None

    def reseal(self, token: str) -> str:
        """The token re-encrypted under the first key (after a rotation)."""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken:
            raise SecretBoxError("a stored secret cannot be decrypted with PAYDESK_ENCRYPTION_KEY") from None


def reseal_column(conn: Connection, column: Column, key: Column, box: SecretBox) -> int:
    """Seal every token stored in `column` again under the box's first key (after a rotation),
    each row found by its `key`; how many."""
    rows = conn.execute(select(key, column).where(column.is_not(None))).all()
    for row_key, token in rows:
        conn.execute(update(column.table).where(key == row_key)
                     .values({column.name: box.reseal(token)}))
    return len(rows)
