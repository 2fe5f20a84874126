"""The simulator provider's rules that need no database."""
from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from app.payments.model import Kind, Mode, Status, Transaction
from app.providers.simulator import SimulatorProvider

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_asking_about_a_refund_without_its_original_is_an_error_even_under_python_o():
    """An explicit error, not an assert that `python -O` would strip."""
    refund = Transaction(merchant_id=1, mode=Mode.SANDBOX, tx_no="RFD-1", kind=Kind.REFUND,
                         status=Status.PENDING, amount=Decimal("1.00"), currency="EUR",
                         reference="r", payment_method="card", created_at=NOW, updated_at=NOW)
    with pytest.raises(ValueError, match="Refund RFD-1 has no original"):
        SimulatorProvider().status(refund, None, NOW)
