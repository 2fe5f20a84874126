"""What a provider's answer to a void (Provider.cancel) means for Paydesk: the cancel's and the
expiry's one reading of it, whoever asks (the request's own process for the simulator, a worker
for a provider behind a network)."""
from __future__ import annotations

from dataclasses import replace

from .model import CANCELLED, Status
from .provider import Outcome

# Answers to a void that leave Paydesk to decline the payment: voided (Declined, whatever reason
# the provider gives) or nothing to void (Pending: Paystack has no void). Other answers say where
# the payment went meanwhile (Captured, say) and are recorded as they are.
VOIDED = (Status.PENDING, Status.DECLINED)


def as_cancelled(answer: Outcome) -> Outcome:
    """A cancel's void answer as Paydesk records it: voided or nothing to void is Declined,
    Payment Cancelled By User (the provider's words kept, else "Cancelled by the merchant");
    any other answer (paid meanwhile) as the provider gave it."""
    if answer.status not in VOIDED:
        return answer
    return replace(answer, status=Status.DECLINED, decline_reason=CANCELLED,
                   provider_message=answer.provider_message or "Cancelled by the merchant")
