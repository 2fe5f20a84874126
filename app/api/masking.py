"""What the request log may keep of a body or a query string: the one masking function (mask_body,
and mask_query with the same rules). Account numbers keep their last 4
(app.payments.accounts.mask_account_number), e-mails their first letter and domain, and secrets
(bearer tokens, webhook secrets, provider keys, passwords, card numbers) nothing, whether they
sit under a field that names them or anywhere in any text."""
from __future__ import annotations

import json
import re
from decimal import Decimal
from functools import lru_cache
from urllib.parse import parse_qsl

from app.payments.accounts import mask_account_number
from app.util import dumps, json_too_deep

SECRET_SHOWN = "[masked]"  # nosec B105 # what the log shows in place of a secret, not a secret
# The most of a body the log keeps (after masking), and the most it reads to mask.
MAX_KEPT = 16 * 1024
MAX_READ = 64 * 1024
_TRUNCATED = "…[truncated]"
# Field names (lower case, letters and digits only) whose values are secrets, account numbers or
# e-mails wherever they appear in a body.
_SECRET_FIELDS = re.compile(r"token|secret|password|passwd|apikey|privatekey|authorization|signature"
                            r"|cvv|cvc|cardnumber|^pan$|^key$|credential")
_ACCOUNT_FIELDS = re.compile(r"accountnumber|iban|^account$|nuban|msisdn|phone")
_EMAIL_FIELDS = re.compile(r"email")
# Secrets and account numbers anywhere in text: Paydesk's tokens, Standard Webhooks secrets,
# Stripe and Paystack keys, IBANs, and runs of 8 or more digits (account and card numbers,
# phone numbers), spaces, dots and dashes allowed between them.
_SECRET_TEXT = re.compile(
    r"pd_(?:live|test)_[A-Za-z0-9_\-]*|whsec_[A-Za-z0-9+/=_\-]*"
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9_]*|Bearer\s+\S+", re.IGNORECASE)
_IBAN_TEXT = re.compile(r"(?<![A-Za-z0-9\-])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){10,30}(?![A-Za-z0-9])")
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9])\+?\d(?:[ .\-]?\d){7,}(?![A-Za-z0-9])")
# A transaction number (PAY-9F2C41D07A3B5E68, SBX-CAPTURED): kept as it is in the fields that
# hold one and in paths, though its hex digits may look like an account number's.
_TX_NO = re.compile(r"[A-Z]{2,5}-[A-Z0-9\-]{1,34}")
_TX_FIELDS = frozenset({"txno", "transactionid", "refundtxno", "originaltxno"})
_EMAIL_TEXT = re.compile(r"[^\s@\"'<>,;:()\[\]]+@[^\s@\"'<>,;:()\[\]]+")


# What masked_body gives as the value read when the body is no JSON (or none, or too long).
NOT_JSON = object()
# JSON read with every number exact (built once: json.loads builds a decoder per call when given
# parse_float).
_DECODER = json.JSONDecoder(parse_float=Decimal)


def mask_body(raw: bytes | str | None) -> str | None:
    """A request's or response's body as the request log keeps it: JSON walked field by field,
    anything else as text, secrets hidden and account numbers and e-mails masked, at most
    MAX_KEPT characters. None for no body."""
    return masked_body(raw)[0]


def masked_body(raw: bytes | str | None) -> tuple[str | None, object]:
    """mask_body's text, and the JSON value the body holds (NOT_JSON when it holds none, or is
    longer than MAX_READ), read once for whoever needs more of it (the request log's txNos)."""
    if raw is None:
        return None, NOT_JSON
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text:
        return None, NOT_JSON
    truncated = len(text) > MAX_READ
    text = text[:MAX_READ]
    value = NOT_JSON
    try:
        if json_too_deep(text):  # the API refused it unread: kept as text, never parsed
            raise ValueError("nested too deep")
        value = _DECODER.decode(text)
        shown = dumps(_mask_value(value, "text"))
    except (ValueError, RecursionError, ArithmeticError):
        value = NOT_JSON
        shown = mask_text(text)
    if truncated:
        value = NOT_JSON
    if truncated or len(shown) > MAX_KEPT:
        shown = shown[:MAX_KEPT] + _TRUNCATED
    return storable(shown), value


def kept_tx_no(value: object) -> bool:
    """The value is a transaction number the log keeps as it is (in a txNo field, a path, the
    request's touched transactions); any other text under such a field is masked as text."""
    return isinstance(value, str) and _TX_NO.fullmatch(value) is not None


def storable(text: str) -> str:
    """Text any database column takes: lone surrogates (a JSON "\\ud800") and NULs replaced."""
    if text.isascii() and "\x00" not in text:
        return text
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def mask_query(query: str) -> str:
    """A query string as the log shows it: each parameter decoded and its value masked as a body's
    field of that name would be (customerEmail=a•••@example.com, token=[masked]); pairs joined
    by & as sent, for people to read rather than a URL to follow."""
    shown = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        name, kind = _field_kind(key)
        shown.append(f"{name}={_mask_value(value, kind)}")
    return storable("&".join(shown))


def mask_path(path: str) -> str:
    """A request's path with whatever a segment hides masked; transaction numbers kept."""
    return storable("/".join(segment if kept_tx_no(segment) else mask_text(segment)
                             for segment in path.split("/")))


# Text without a digit, an @, an underscore or "bearer" (in any case) holds nothing mask_text hides.
_MAYBE_SECRET = re.compile(r"[0-9@_]|(?i:bearer)")
# Texts mask_text found nothing to hide in, remembered (a body's currency, method, descriptor,
# callback URL come again and again): never a text it changed, so no secret is kept here.
_PLAIN: dict[str, None] = {}
_PLAIN_MAX = 20_000


def mask_text(text: str) -> str:
    """Free text with every secret hidden and every account number and e-mail masked."""
    if text in _PLAIN or not _MAYBE_SECRET.search(text):
        return text
    masked = _masked_text(text)
    if masked == text and len(text) <= 200:
        if len(_PLAIN) >= _PLAIN_MAX:
            _PLAIN.clear()
        _PLAIN[text] = None
    return masked


# Each of _SECRET_TEXT's forms holds an underscore or "bearer" (in any case), each e-mail an @:
# a text without them is not searched for them (the searches cost 1 to 3 us a text, the e-mail's
# longest, as it tries every start in a run of characters without an @).
_BEARER = re.compile(r"bearer", re.IGNORECASE)


def _masked_text(text: str) -> str:
    if "_" in text or _BEARER.search(text):
        text = _SECRET_TEXT.sub(SECRET_SHOWN, text)
    if "@" in text:
        text = _EMAIL_TEXT.sub(lambda found: mask_email(found.group()), text)
    text = _IBAN_TEXT.sub(lambda found: mask_account_number(found.group()), text)
    return _DIGIT_RUN.sub(lambda found: mask_account_number(found.group()), text)


def mask_email(address: str) -> str:
    """a•••@example.com: the first character and the domain."""
    local, _, domain = address.rpartition("@")
    if not local:
        return "•••"
    return f"{local[0]}•••@{mask_text(domain) if '@' in domain else domain}"


def _mask_value(value, field: str):
    """A JSON value under `field` (what _field_kind says of its name), masked."""
    kind_of = value.__class__
    if kind_of is str and field == "text":  # most values: no call below mask_text's
        return mask_text(value)
    if kind_of is dict:
        masked = {}
        for key, item in value.items():
            name, kind = _field_kind(key)
            masked[name] = mask_text(item) if kind == "text" and item.__class__ is str else _mask_value(item, kind)
        return masked
    if kind_of is list:
        return [_mask_value(item, field) for item in value]
    if value is None or value is True or value is False:
        return value
    if field == "secret":
        return SECRET_SHOWN
    if field == "account":
        return mask_account_number(str(value))
    if isinstance(value, str):
        if field == "tx" and kept_tx_no(value):
            return value
        if field == "email":
            return mask_email(value)
        return mask_text(value)
    if isinstance(value, int) and field != "amount" and len(str(abs(value))) >= 8:
        return mask_account_number(str(value))  # a number as long as an account number
    return value


@lru_cache(maxsize=4096)
def _field_kind(key: str) -> tuple[str, str]:
    """A field's name as the log shows it (masked too: a client may send anything as a name), and
    what its values are: secret, account, email, tx (a transaction number), amount or text."""
    name = "".join(ch for ch in key.lower() if ch.isalnum())
    if _SECRET_FIELDS.search(name):
        kind = "secret"
    elif _ACCOUNT_FIELDS.search(name):
        kind = "account"
    elif _EMAIL_FIELDS.search(name):
        kind = "email"
    elif name in _TX_FIELDS:
        kind = "tx"
    elif "amount" in name:
        kind = "amount"
    else:
        kind = "text"
    return mask_text(key), kind
