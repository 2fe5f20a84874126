"""Tenant scope: the conditions that limit a query to the caller's merchant, or to its merchant and mode."""
from __future__ import annotations

from sqlalchemy import Table

from app.payments.model import Caller


def scoped_to_merchant(table: Table, caller: Caller) -> tuple:
    """Conditions selecting only the rows of the caller's merchant (for data of both modes, such as users)."""
    return (table.c.merchant_id == caller.merchant_id,)


def scoped_to_mode(table: Table, caller: Caller) -> tuple:
    """Conditions selecting only the rows of the caller's merchant in the caller's mode."""
    return (*scoped_to_merchant(table, caller), table.c.mode == caller.mode.value)
