"""The rule of who may decide a transaction the simulator serves: live only in a demo."""
from __future__ import annotations

import pytest

from app.payments.model import Mode, PaymentMethod, SimulatedLiveMoney, check_simulator_may_decide

SIMULATED = PaymentMethod("card", "Card", "card", ["EUR"], [], None, None, True)
AT_PROVIDER = PaymentMethod("paystack-card", "Card", "card", ["NGN"], [], None, None, True,
                            provider="paystack", provider_account_id=7)


@pytest.mark.parametrize("mode, method, demo", [
    (Mode.SANDBOX, SIMULATED, False),
    (Mode.LIVE, SIMULATED, True),
    (Mode.LIVE, AT_PROVIDER, False),
])
def test_allowed(mode, method, demo):
    check_simulator_may_decide(mode, method.method_id, method, demo=demo)


@pytest.mark.parametrize("method", [SIMULATED, None])  # None: no longer configured
def test_live_outside_a_demo_is_refused_with_the_method_named(method):
    with pytest.raises(SimulatedLiveMoney) as refused:
        check_simulator_may_decide(Mode.LIVE, "card", method, demo=False)
    assert str(refused.value) == ("Payment method card is served by the simulator, which moves no real "
                                  "money in live mode; connect a provider for it")
