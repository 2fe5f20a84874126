"""How long a worker waits before asking a provider again after failed attempts in a row (a bank
list, a provider account's settlements, a dispute's evidence): 30 s, doubling, at most an hour.

(A Pending transaction's own question waits by how long it has waited instead:
settlement.retry_delay.)
"""
from __future__ import annotations

from datetime import timedelta

FIRST_RETRY = timedelta(seconds=30)
MAX_RETRY = timedelta(hours=1)


def retry_after(failures: int) -> timedelta:
    """The wait after the n-th failure in a row: 30 s after the first, doubling, at most MAX_RETRY."""
    doublings = min(max(failures - 1, 0), 7)  # 30 s × 2^7 is past the hour already; more would overflow
    return min(FIRST_RETRY * 2 ** doublings, MAX_RETRY)
