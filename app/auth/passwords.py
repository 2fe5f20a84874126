"""What a dashboard password must be: long enough, and not a common or easily guessed one (zxcvbn)."""
from __future__ import annotations

from zxcvbn import zxcvbn

MIN_LENGTH = 12
MAX_LENGTH = 1024
# zxcvbn's scores run 0-4; 3 is "safely unguessable: moderate protection from offline attacks".
MIN_STRENGTH = 3
LENGTH_MESSAGE = f"Use {MIN_LENGTH} to {MAX_LENGTH} characters"
# zxcvbn reads only this much: its cost grows with the length, a longer password is not weak, and
# zxcvbn 4.5 refuses (raises on) anything longer than its max_length, 72 by default.
_CHECKED_LENGTH = 72


def password_problem(password: str, *, known: tuple[str, ...] = ()) -> str | None:
    """Why the password may not be used, or None; `known` are words of the account (its e-mail)."""
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        return LENGTH_MESSAGE
    result = zxcvbn(password[:_CHECKED_LENGTH], user_inputs=list(known), max_length=_CHECKED_LENGTH)
    if result["score"] >= MIN_STRENGTH:
        return None
    advice = result["feedback"]["warning"] or "This password is easy to guess."
    return f"{advice} Choose a longer phrase of uncommon words."
