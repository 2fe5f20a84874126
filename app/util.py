"""Small helpers shared by the outer layers: the clock, keys in URLs, exact JSON, backoff after failures."""
from __future__ import annotations

import re
from datetime import UTC, datetime

import simplejson


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def whole_number(text: str, max_digits: int) -> int | None:
    """The text as a whole number when it is 1 to max_digits ASCII digits (no sign, no spaces,
    no other scripts' digits, nothing too long for int()); None otherwise."""
    if text.isascii() and text.isdigit() and len(text) <= max_digits:
        return int(text)
    return None


def could_be_key(text: str, max_length: int) -> bool:
    """True when the text could name a stored record (a txNo, a webhook id, an inbox key, an
    Idempotency-Key): 1 to max_length printable characters. Other text names nothing and is
    never looked up (PostgreSQL would refuse a NUL in it outright)."""
    return 0 < len(text) <= max_length and text.isprintable()


def dumps(value, *, sort_keys: bool = False) -> str:
    """JSON with Decimals and amounts written exactly, never through float."""
    return (_SORTED_ENCODER if sort_keys else _ENCODER).encode(value)


def _default(value):
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# Built once (simplejson.dumps builds an encoder on every call given any option); an encoder
# keeps no state between calls, so threads share them.
_ENCODER = simplejson.JSONEncoder(use_decimal=True, default=_default, ensure_ascii=False)
_SORTED_ENCODER = simplejson.JSONEncoder(use_decimal=True, default=_default, ensure_ascii=False,
                                         sort_keys=True)


class Backoff:
    """Pauses after consecutive failures: `first`, then twice as long each time, never above `cap`."""

    def __init__(self, first: float, cap: float):
        self.first = first
        self.cap = cap
        self.failures = 0

    def next_pause(self) -> float:
        """The pause after one more failure."""
        pause = min(self.cap, self.first * 2 ** min(self.failures, 32))
        self.failures += 1
        return pause

    def reset(self) -> None:
        """A success: the next failure starts again from `first`."""
        self.failures = 0


# JSON from outside (API bodies, their copies in the request log) is read at most this many arrays
# and objects deep; Paydesk's deepest body nests four. The standard parser recurses once a level,
# and near the interpreter's recursion limit a garbage collection that runs Python code (a
# finalizer, a gc callback) can turn its RecursionError into a fatal "Cannot recover from stack
# overflow" that ends the process (seen in the suite's request log writer, under the hostile corpus).
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_A_BRACKET = re.compile(rb"[^\[\]{}]+")


def json_too_deep(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text nests more than `limit` arrays and objects (brackets inside strings do
    not count; text that is no JSON may be counted loosely: its parser refuses it anyway). One
    count for a text with at most `limit` opening brackets in all, as ordinary bodies have."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:
            return False
        text = text.encode("utf-8", "surrogatepass")
    elif text.count(b"[") + text.count(b"{") <= limit:
        return False
    depth = 0
    for bracket in _NOT_A_BRACKET.sub(b"", _JSON_STRING.sub(b"", text)):
        depth += 1 if bracket in b"[{" else -1
        if depth > limit:
            return True
    return False

