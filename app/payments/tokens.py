"""What an API token may do: its scopes, expiry, client networks and daily limits, and the rules
that refuse a request beyond them (the messages the merchant reads)."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum

from .model import PaymentError
from .money import fits_currency, format_amount, from_minor, is_currency, to_minor

# Every scope a token can hold, in the order the dashboard and the docs list them.
SCOPES = ("read", "payments", "refunds", "payouts", "webhooks", "sandbox")
SCOPE_DESCRIPTIONS = {
    "read": "Read transactions, their status, payment methods, bank lists, settlements, disputes "
            "and webhook deliveries (every GET)",
    "payments": "Create and cancel payments; answer disputes",
    "refunds": "Refund payments",
    "payouts": "Create payouts; read bank lists",
    "webhooks": "Resend webhooks",
    "sandbox": "Use the sandbox helpers (outcomes, reset, settlement runs)",
}
# A network list longer than this is refused (each request checks every entry).
MAX_NETWORKS = 20


class LimitKind(StrEnum):
    """What a daily limit counts."""

    REFUND = "refund"
    PAYOUT = "payout"

    @property
    def verb(self) -> str:
        """The limit message's verb: "may refund", "may pay out"."""
        return "refund" if self is LimitKind.REFUND else "pay out"


@dataclass(frozen=True)
class TokenLimit:
    """The most a token may refund (or pay out) in a currency on one UTC day."""

    kind: LimitKind
    currency: str
    daily: Decimal


@dataclass(frozen=True)
class TokenGrant:
    """What one API token allows; the Caller of a request made with it carries it."""

    token_id: int
    label: str
    scopes: frozenset[str]
    expires_at: datetime | None = None
    networks: tuple = ()  # ipaddress networks; empty: any client
    limits: tuple[TokenLimit, ...] = ()

    def daily_limit(self, kind: LimitKind, currency: str) -> Decimal | None:
        """The token's daily limit of this kind in the currency; None: no limit."""
        for limit in self.limits:
            if limit.kind is kind and limit.currency == currency:
                return limit.daily
        return None

    def limits_any(self, kind: LimitKind) -> bool:
        """The token has a daily limit of this kind in some currency."""
        return any(limit.kind is kind for limit in self.limits)

    def expired(self, now: datetime) -> bool:
        """Past its expiry: refused as an unknown token is."""
        return self.expires_at is not None and now >= self.expires_at

    def allows_address(self, address: str | None) -> bool:
        """The client address is in one of the token's networks (any, when it has none)."""
        if not self.networks:
            return True
        try:
            client = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        if client.version == 6 and client.ipv4_mapped is not None:
            client = client.ipv4_mapped
        return any(client in network for network in self.networks)


class ScopeMissing(PaymentError):
    """A request needs a scope the token does not hold (HTTP 403)."""

    def __init__(self, scopes: tuple[str, ...]):
        self.scopes = scopes
        super().__init__(f"This token lacks the {' or '.join(scopes)} scope")


class NetworkRefused(PaymentError):
    """A request from a client address outside the token's networks (HTTP 403)."""

    def __init__(self, address: str | None):
        super().__init__(f"This token may not be used from {address or 'an unknown address'}: "
                         "the address is outside its allowed networks")


class TokenLimitExceeded(PaymentError):
    """A refund or payout above what the token has left of its daily limit (HTTP 403)."""


def require_scope(grant: TokenGrant | None, scope: str) -> None:
    """Refuse a request that needs `scope` when the token lacks it (None: not a token's caller)."""
    if grant is not None and scope not in grant.scopes:
        raise ScopeMissing((scope,))


def limit_refusal(kind: LimitKind, currency: str, daily: Decimal, left: Decimal) -> TokenLimitExceeded:
    """The refusal of an amount above what is left today, naming the limit and what is left."""
    return TokenLimitExceeded(
        f"This token may {kind.verb} {format_amount(daily, currency)} {currency} a day; "
        f"{format_amount(max(left, Decimal(0)), currency)} {currency} is left today")


def limit_day(now: datetime) -> date:
    """The UTC day a refund or payout made at `now` counts on."""
    return now.date()


def parse_networks(text: str) -> tuple:
    """Comma- or newline-separated CIDRs (a bare address is a /32 or /128); ValueError names the
    first that is not one."""
    networks = []
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part[:60]} is not a network (write it as 203.0.113.0/24 or 2001:db8::/32)") from None
    if len(networks) > MAX_NETWORKS:
        raise ValueError(f"At most {MAX_NETWORKS} networks")
    return tuple(networks)


def parse_scopes(text: str) -> frozenset[str]:
    """Comma-separated scopes as stored; a word that is not a scope is dropped."""
    return frozenset(word for word in (w.strip() for w in text.split(",")) if word in SCOPES)


def take_from_daily_limit(uow, caller, kind: LimitKind, amount: Decimal, currency: str,
                          now: datetime) -> None:
    """Take a refund's or payout's amount from the caller's token's daily limit in its currency,
    in the unit that writes it; raise TokenLimitExceeded (the unit then rolls back) when what is
    left today is less. A caller without a token, or a token without that limit, takes nothing."""
    grant = caller.grant
    daily = grant.daily_limit(kind, currency) if grant is not None else None
    if daily is None:
        return
    left = uow.take_token_limit(grant.token_id, limit_day(now), kind.value, currency,
                                to_minor(amount, currency), to_minor(daily, currency))
    if left is not None:
        raise limit_refusal(kind, currency, daily, from_minor(left, currency))


def parse_limits(text: str) -> tuple[TokenLimit, ...]:
    """Daily limits, one a line: "refund EUR 500.00" or "payout NGN 1000000"; ValueError names
    the first line that is not one (or a kind and currency given twice)."""
    limits: dict[tuple, TokenLimit] = {}
    for line in text.replace(",", "\n").splitlines():
        words = line.split()
        if not words:
            continue
        shown = " ".join(words)[:60]
        if len(words) != 3 or words[0].lower() not in ("refund", "payout"):
            raise ValueError(f"{shown}: write a limit as refund EUR 500.00 or payout NGN 100000")
        kind, currency, amount = LimitKind(words[0].lower()), words[1].upper(), _amount(words[2])
        if not is_currency(currency):
            raise ValueError(f"{shown}: {currency[:10]} is not a currency code")
        if amount is None or amount <= 0 or not fits_currency(amount, currency):
            raise ValueError(f"{shown}: the amount must be above 0, with at most {currency}'s decimals")
        if (kind, currency) in limits:
            raise ValueError(f"{shown}: a {kind.value} limit in {currency} is given twice")
        limits[(kind, currency)] = TokenLimit(kind, currency, amount)
    return tuple(limits.values())


def describe_limit(limit: TokenLimit) -> str:
    """"refunds up to 500.00 EUR a day": how the dashboard lists a limit."""
    what = "refunds" if limit.kind is LimitKind.REFUND else "payouts"
    return f"{what} up to {format_amount(limit.daily, limit.currency)} {limit.currency} a day"


def _amount(text: str) -> Decimal | None:
    """A positive decimal written plainly (digits and one point), else None."""
    if not text.replace(".", "", 1).isdigit() or not text.isascii() or len(text) > 20:
        return None
    return Decimal(text)
