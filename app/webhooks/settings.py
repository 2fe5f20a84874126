"""How webhooks are delivered: the retry schedule, time limits, leases, threads and the address guard."""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from .guard import AddressGuard

# The setting that lets deliveries reach networks that are not public (the built-in inbox's loopback).
ALLOWED_NETWORKS_SETTING = "WEBHOOK_ALLOWED_NETWORKS"

# Delays before attempts 2 to 8 (decisions.md): 8 attempts in all, then Failed.
RETRY_DELAYS = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=10),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
JITTER = 0.10  # each delay grows by a random 0-10% so retries of many events spread out
# A claimed event stays leased this long beyond the request's own time limit,
# enough to write the result; after that another worker may try it again.
LEASE_MARGIN = timedelta(seconds=45)


@dataclass(frozen=True)
class DeliverySettings:
    """How deliveries are made: guard, time limits, threads."""

    guard: AddressGuard = AddressGuard(ALLOWED_NETWORKS_SETTING)
    connect_timeout: float = 5.0
    timeout: float = 15.0  # total: a 2xx arriving later than this is a failure
    concurrency: int = 16
    # At most this many deliveries of one merchant at once per worker, so a slow
    # receiver can never take every thread from the other merchants.
    per_merchant: int = 8

    @property
    def lease(self) -> timedelta:
        """How long a claimed event is reserved for the worker that claimed it."""
        return timedelta(seconds=self.timeout) + LEASE_MARGIN

    @classmethod
    def from_config(cls, config: Mapping) -> DeliverySettings:
        """Settings from the app's configuration (WEBHOOK_* keys)."""
        concurrency = int(config.get("WEBHOOK_CONCURRENCY", cls.concurrency))
        return cls(
            guard=AddressGuard.from_config(config, ALLOWED_NETWORKS_SETTING),
            connect_timeout=float(config.get("WEBHOOK_CONNECT_TIMEOUT", cls.connect_timeout)),
            timeout=float(config.get("WEBHOOK_TIMEOUT", cls.timeout)),
            concurrency=concurrency,
            per_merchant=max(1, concurrency // 2),
        )


# Its own generator: drawing from the random module's shared one would move every other user's
# sequence (a seeded test's among them) from a delivery thread.
_JITTER_SOURCE = random.SystemRandom()


def retry_delay(schedule_position: int) -> timedelta | None:
    """Wait before the attempt after attempt `schedule_position` failed; None when none is left."""
    if schedule_position >= MAX_ATTEMPTS:
        return None
    jitter = _JITTER_SOURCE.uniform(0, JITTER)
    return RETRY_DELAYS[schedule_position - 1] * (1 + jitter)
