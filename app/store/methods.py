"""A merchant's payment methods: which it offers in a mode, read through the process's cache."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sqlalchemy import Connection, bindparam, insert, select

from app.payments.model import Caller, PaymentMethod, Transaction

from .method_cache import MethodCache
from .tables import payment_methods

if TYPE_CHECKING:
    from .unit_of_work import UnitOfWork

# A method of the merchant offered in the mode: its own (a provider account's) or both modes'.
_METHOD_IN_MODE = (payment_methods.c.mode.is_(None)) | (payment_methods.c.mode == bindparam("mode"))
_METHOD = select(payment_methods).where(
    payment_methods.c.merchant_id == bindparam("merchant_id"),
    payment_methods.c.method_id == bindparam("method_id"),
    _METHOD_IN_MODE,
)
_ACTIVE_METHOD = _METHOD.where(payment_methods.c.active)


class MethodRepository:
    """A merchant's payment methods (new transactions' look-ups through the process's cache)."""

    def __init__(self, uow: "UnitOfWork", cache: MethodCache | None = None):
        self._uow = uow
        self.cache = cache or MethodCache(0)

    @property
    def conn(self) -> Connection:
        return self._uow.conn

    def get(self, caller: Caller, method_id: str) -> PaymentMethod | None:
        """The caller's method with this identifier that takes new transactions, or None."""
        def load() -> PaymentMethod | None:
            row = self.conn.execute(_ACTIVE_METHOD, {"merchant_id": caller.merchant_id,
                                                     "mode": caller.mode.value,
                                                     "method_id": method_id}).mappings().first()
            return _row_to_method(row) if row else None

        return self.cache.get((caller.merchant_id, caller.mode.value, method_id), load)

    def forget_merchant(self, merchant_id: int) -> None:
        """This process changed the merchant's methods: its cache forgets them now."""
        self.cache.forget_merchant(merchant_id)

    def of_transaction(self, tx: Transaction) -> PaymentMethod | None:
        """The method a stored transaction was made with, even if its provider account was
        disconnected (None when it is no longer configured at all)."""
        def load() -> PaymentMethod | None:
            row = self.conn.execute(_METHOD, {"merchant_id": tx.merchant_id, "mode": tx.mode.value,
                                              "method_id": tx.payment_method}).mappings().first()
            return _row_to_method(row) if row else None

        return self.cache.get((tx.merchant_id, tx.mode.value, tx.payment_method, "configured"), load)

    def list(self, caller: Caller) -> list[PaymentMethod]:
        """The caller's methods that take new transactions, card methods first."""
        rows = self.conn.execute(
            select(payment_methods)
            .where(payment_methods.c.merchant_id == caller.merchant_id, payment_methods.c.active,
                   (payment_methods.c.mode.is_(None)) | (payment_methods.c.mode == caller.mode.value))
            .order_by(payment_methods.c.kind, payment_methods.c.method_id)
        ).mappings()
        return [_row_to_method(r) for r in rows]

    def add(self, merchant_id: int, method: PaymentMethod) -> None:
        """Give a merchant being created a method (there is no caller before the merchant exists)."""
        self.conn.execute(
            insert(payment_methods).values(
                merchant_id=merchant_id,
                method_id=method.method_id,
                name=method.name,
                kind=method.kind,
                currencies=json.dumps(method.currencies),
                countries=json.dumps(method.countries),
                bank_list=method.bank_list,
                account_rule=method.account_rule,
                partial_refunds=method.partial_refunds,
                provider=method.provider,
            )
        )


def _row_to_method(m) -> PaymentMethod:
    """The PaymentMethod of a row of payment_methods' columns, as a mapping (`Result.mappings()`)."""
    return PaymentMethod(
        method_id=m["method_id"],
        name=m["name"],
        kind=m["kind"],
        currencies=json.loads(m["currencies"]),
        countries=json.loads(m["countries"]),
        bank_list=m["bank_list"],
        account_rule=m["account_rule"],
        partial_refunds=bool(m["partial_refunds"]),
        provider=m["provider"],
        provider_account_id=m["provider_account_id"],
        active=bool(m["active"]),
    )
