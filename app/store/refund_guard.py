"""The refund guard: the one SQL statement that keeps concurrent refunds from over-refunding a
payment, and the statements that hold, reserve and release amounts on a payment's refund totals.

The refund rules have their home in app.payments (model.check_refund, on what
refundable.RefundArithmetic says is left); this is their counterpart in the database, which
app.store.transactions runs, and tests/store/test_refund_guard_property.py keeps the two agreeing.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import BigInteger, bindparam, case, cast, exists, literal_column, update

from app.payments.model import Caller, Kind, Status
from app.payments.money import currencies_by_minor_digits, decimal_places, to_minor, to_units

from .tables import payment_methods, transactions
from .writes import Returned, Writes

# A refund's amount in the minor units of its original's currency, chosen on the row by the
# currency's digits. It is NULL where the amount has more decimals than the currency, so no
# row matches and the refund rules, read afterwards, name the field error in their order.
_CURRENCY_DIGITS = currencies_by_minor_digits()
_COMMON_DIGITS = max(_CURRENCY_DIGITS, key=lambda digits: len(_CURRENCY_DIGITS[digits]))
def _currency_in(codes) -> Any:
    """currency IN ('BIF', 'CLP', ...) with the ISO codes written into the SQL: the statement's
    text stays the same from call to call: SQLAlchemy's compiled cache and psycopg's prepared
    statements keep it (bound lists are expanded into new text on every call)."""
    assert all(len(code) == 3 and code.isascii() and code.isalpha() and code.isupper()
               for code in codes)  # nosec B101 # ISO 4217 codes from our own table
    return transactions.c.currency.in_([literal_column(f"'{code}'") for code in sorted(codes)])


_REFUND_MINOR = case(
    *((_currency_in(codes), cast(bindparam(f"refund_minor_{digits}"), BigInteger))
      for digits, codes in _CURRENCY_DIGITS.items() if digits != _COMMON_DIGITS),
    else_=cast(bindparam(f"refund_minor_{_COMMON_DIGITS}"), BigInteger),
)
# The payment's method refuses partial refunds (one no longer configured allows them, as
# app.payments.refundable says).
_PARTIAL_REFUNDS_REFUSED = exists().where(
    payment_methods.c.merchant_id == transactions.c.merchant_id,
    payment_methods.c.method_id == transactions.c.payment_method,
    payment_methods.c.mode.is_(None) | (payment_methods.c.mode == transactions.c.mode),
    ~payment_methods.c.partial_refunds,
)


def _refund_guard(total) -> Any:
    """The refund guard, what keeps concurrent refunds from over-refunding: an UPDATE that adds a
    refund's amount (_REFUND_MINOR) to `total` on the caller's payment's row (what its refunds
    reserve, or what its requests awaiting approval hold) only when the refund rules of
    app.payments.model.check_refund allow the refund on the row as the database has it once it
    is locked. What refunds reserve, requests hold and lost disputes took back together never
    pass the payment's amount.
    It returns the row as it leaves it, and the amount in the payment's minor units
    (`refund_minor`); refused, it changes and returns nothing (the rules say why, on the locked
    row). tests/store/test_refund_guard_property.py drives it, the rules and the service fakes
    with the same cases. The bound values' names are not column names: update() keeps those for
    its SET clause."""
    return (
        update(transactions)
        .where(
            transactions.c.merchant_id == bindparam("caller_merchant_id"),
            transactions.c.mode == bindparam("caller_mode"),
            transactions.c.tx_no == bindparam("original_tx_no"),
            transactions.c.kind == Kind.PAYMENT.value,
            transactions.c.status == Status.CAPTURED.value,
            transactions.c.amount_minor - transactions.c.refund_reserved_minor
            - transactions.c.refund_held_minor - transactions.c.dispute_lost_minor >= _REFUND_MINOR,
            (transactions.c.amount_minor == _REFUND_MINOR) | ~_PARTIAL_REFUNDS_REFUSED,
        )
        .values({total: total + _REFUND_MINOR})
        .returning(*transactions.c, _REFUND_MINOR.label("refund_minor"))
    )


RESERVE_REFUND = _refund_guard(transactions.c.refund_reserved_minor)
HOLD_REFUND = _refund_guard(transactions.c.refund_held_minor)
# An approved request's hold becomes a refund's reservation, while the payment is still Captured.
HELD_TO_RESERVED = (
    update(transactions)
    .where(transactions.c.id == bindparam("payment_id"),
           transactions.c.kind == Kind.PAYMENT.value,
           transactions.c.status == Status.CAPTURED.value,
           transactions.c.refund_held_minor >= bindparam("held_minor"))
    .values(refund_held_minor=transactions.c.refund_held_minor - bindparam("held_minor"),
            refund_reserved_minor=transactions.c.refund_reserved_minor + bindparam("held_minor"))
    .returning(*transactions.c)
)
RELEASE_HOLD = (
    update(transactions)
    .where(transactions.c.id == bindparam("payment_id"))
    .values(refund_held_minor=transactions.c.refund_held_minor - bindparam("held_minor"))
)
# What a refund's row and its audit row take of a payment not read yet: what the refund guard
# sent with them returns.
_GUARDED_REFUND_MINOR = Returned("refund_minor")


def reserve_params(caller: Caller, tx_no: str, amount: Decimal) -> dict:
    """The bound values of RESERVE_REFUND and HOLD_REFUND: the caller's payment and the amount."""
    return {"caller_merchant_id": caller.merchant_id, "caller_mode": caller.mode.value,
            "original_tx_no": tx_no, **_refund_minor_params(amount)}


def _refund_minor_params(amount: Decimal) -> dict[str, int | None]:
    """The values of _REFUND_MINOR: the amount in units of each currency group's digits, None
    where it has more decimals than they allow."""
    places = decimal_places(amount)
    return {f"refund_minor_{digits}": to_units(amount, digits) if places <= digits else None
            for digits in _CURRENCY_DIGITS}


def minor_units(writes: Writes, amount: Decimal, currency) -> int | Returned:
    """The amount in the currency's minor units. In the currency of a payment that the refund
    guard sent with the unit's writes returns (not known before: reserve_refund_with_writes),
    the guard's own conversion of its refund's amount, the one amount such a unit writes in it
    (the refund's row and its audit row)."""
    if currency.__class__ is not Returned:
        return to_minor(amount, currency)
    guard = writes.condition
    if guard is None or guard[0] is not RESERVE_REFUND or any(
            guard[1][name] != value for name, value in _refund_minor_params(amount).items()):
        raise ValueError(f"{amount} in a payment's currency not known yet: only its refund's amount")
    return _GUARDED_REFUND_MINOR

