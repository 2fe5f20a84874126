"""The API's listings a page at a time: `?limit=` and the opaque `?cursor=` a page's nextCursor gives.

A cursor is the last listed row's id behind a prefix naming its listing, base64url without
padding; a listing shows the rows before it (newest first).
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from flask import request

from app.payments.model import FieldErrors
from app.util import whole_number

# The longest cursor any listing gives (a prefix and an 18-digit id, encoded).
MAX_CURSOR_LENGTH = 40


def page_limit(default: int, most: int) -> int:
    """The request's `limit`: a whole number from 1 to `most`, `default` when absent."""
    limit = whole_number(request.args.get("limit", str(default)), len(str(most)))
    if limit is None or not 1 <= limit <= most:
        raise FieldErrors.one("Limit", f"Limit must be a whole number from 1 to {most}")
    return limit


@dataclass(frozen=True)
class Cursor:
    """One listing's cursors: `prefix` names the listing, `refusal` answers a cursor it did not give."""

    prefix: str
    refusal: str

    def encode(self, row_id: int) -> str:
        """The cursor that continues the listing after this row."""
        return base64.urlsafe_b64encode(f"{self.prefix}{row_id}".encode()).decode().rstrip("=")

    def position(self) -> int | None:
        """The row id in the request's `cursor`, None without one; FieldErrors for one this
        listing did not give."""
        text = request.args.get("cursor")
        if text is None:
            return None
        try:
            decoded = base64.urlsafe_b64decode(text.encode("ascii") + b"=" * (-len(text) % 4)).decode("ascii")
        except (UnicodeError, ValueError, binascii.Error):
            decoded = ""
        row_id = (whole_number(decoded.removeprefix(self.prefix), 18)
                  if decoded.startswith(self.prefix) and len(text) <= MAX_CURSOR_LENGTH else None)
        if row_id is None:
            raise FieldErrors.one("Cursor", self.refusal)
        return row_id
