"""How the interface writes time and which text it can store (ISO 8601 UTC with Z, no controls),
and how a machine word reads to people."""
from __future__ import annotations

import re
from datetime import UTC, datetime


def iso_utc(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z, milliseconds kept: 2026-11-22T10:00:00.123Z."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# What a "\ud800" escape without its pair leaves in a str: no UTF-8 text holds it.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 control characters other than tab, newline and carriage return, and lone surrogates.
_UNSTORABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def storable_text(text: str) -> bool:
    """Text both databases can store and search for: no NUL or other C0 control but tab,
    newline and carriage return, and valid UTF-8 (no lone surrogates)."""
    return _UNSTORABLE.search(text) is None


# Where a camelCase word begins its next part: "originalTxNo" -> original | Tx | No.
_CAMEL_PART = re.compile(r"(?<=[a-z])(?=[A-Z])")


def code_in_words(code: str) -> str:
    """A machine word (snake_case or camelCase) as people read it, the one way the dashboard and
    the CLI write codes: "needs_response" -> "Needs response", "sessionsEnded" -> "Sessions ended"."""
    spaced = _CAMEL_PART.sub(" ", code).replace("_", " ").lower()
    return spaced[:1].upper() + spaced[1:]
