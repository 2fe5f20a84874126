"""TOTP second factors (RFC 6238 through pyotp): new secrets, their QR codes, checking codes,
and recovery codes. Knows nothing of the web or the database."""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from datetime import UTC, datetime

import pyotp
import segno

ISSUER = "Paydesk"
# A code of the step before or after the current one is accepted too (clocks drift, people type slowly).
VALID_WINDOW = 1
RECOVERY_CODES = 10
_RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i to misread
_RECOVERY_LENGTH = 12  # about 59 bits each
_NOT_CODE_CHARACTERS = re.compile(r"[\s-]")


def new_secret() -> str:
    """A random base32 TOTP secret (160 bits)."""
    return pyotp.random_base32(32)


def provisioning_uri(secret: str, email: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def qr_code_data_uri(uri: str) -> str:
    """The QR code of the URI as an SVG data: URI (allowed by the dashboard's img-src 'self' data:)."""
    return segno.make(uri, error="m").svg_data_uri(scale=5, border=2)


def matching_step(secret: str, code: str, now: float | None = None) -> int | None:
    """The time-step (within the window around now) whose code this is, or None."""
    code = _NOT_CODE_CHARACTERS.sub("", code or "")
    if not (code.isdigit() and len(code) == 6):
        return None
    totp = pyotp.TOTP(secret)
    current = totp.timecode(datetime.fromtimestamp(time.time() if now is None else now, UTC))
    for step in range(current - VALID_WINDOW, current + VALID_WINDOW + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            return step
    return None


def new_recovery_codes() -> list[str]:
    """Ten random one-time codes, written xxxx-xxxx-xxxx."""
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(_RECOVERY_LENGTH))
        codes.append("-".join(raw[i:i + 4] for i in range(0, _RECOVERY_LENGTH, 4)))
    return codes


def hash_recovery_code(code: str) -> str:
    """Stored form of a recovery code, whatever its case, spaces and dashes (SHA-256: 59 random
    bits, tried only through the rate-limited sign-in form)."""
    return hashlib.sha256(_NOT_CODE_CHARACTERS.sub("", code or "").lower().encode()).hexdigest()


def looks_like_recovery_code(code: str) -> bool:
    """The text has a recovery code's length (rather than a 6-digit TOTP code's)."""
    return len(_NOT_CODE_CHARACTERS.sub("", code or "")) == _RECOVERY_LENGTH
