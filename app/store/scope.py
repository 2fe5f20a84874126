"""Tenant scope: the conditions that limit a query to the caller's merchant, or to its merchant and mode."""
from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Table

from app.payments.model import Caller, Mode


def scoped_to_merchant(table: Table, caller: Caller) -> tuple:
    """Conditions selecting only the rows of the caller's merchant (for data of both modes, such as users)."""
    return (table.c.merchant_id == caller.merchant_id,)


def scoped_to_mode(table: Table, caller: Caller) -> tuple:
    """Conditions selecting only the rows of the caller's merchant in the caller's mode."""
    return (*scoped_to_merchant(table, caller), table.c.mode == caller.mode.value)


def counts_per_mode(rows: Iterable[tuple[str, int]]) -> dict[Mode, int]:
    """(mode, count) rows of a query grouped by mode as a count for every mode, 0 where none
    (the menu's counts say each mode's share)."""
    found = {mode: 0 for mode in Mode}
    for mode, count in rows:
        found[Mode(mode)] = count
    return found
