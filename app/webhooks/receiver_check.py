"""The receiver check of a webhook endpoint: does the merchant's receiver really verify what it
gets? A request records the check (nothing is sent on its thread); a worker pass claims it and
sends the endpoint four test deliveries, then stores which ones the receiver accepted (2xx):

- valid: a correctly signed test event (it should accept it);
- tampered: the same signature over a changed body (it must refuse it);
- replay: the valid one again, same webhook-id, timestamp and signature. It must not act on it
  twice. Refusing it is right; so is answering 2xx without acting, which is what Standard
  Webhooks' libraries leave to the receiver and what a retry of a delivery whose answer was lost
  needs. An accepted replay is therefore not judged (as_expected None): the merchant is told
  what to make sure of;
- stale: correctly signed, but with a timestamp 10 minutes old, beyond Standard Webhooks'
  5-minute tolerance (it must refuse it).
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import requests
from sqlalchemy import Connection, insert, or_, select, update

from app.payments.formats import iso_utc
from app.payments.model import Caller
from app.store.tables import webhook_endpoints, webhook_receiver_checks

from . import endpoints
from .guard import TargetRefused, check_url, guarded_session
from .settings import DeliverySettings
from .signing import signed_headers

# A claimed check is the claiming worker's this long (four sends, each within the timeout).
CLAIM_FOR = timedelta(minutes=2)
STALE_BY = timedelta(minutes=10)
BATCH = 10
CASES = ("valid", "tampered", "replay", "stale")
# Whether each case should be accepted; a replay may be either (see the module's words).
EXPECTED = {"valid": True, "tampered": False, "replay": None, "stale": False}
# What to do when the receiver answers otherwise, or, for an accepted replay, what to make sure of.
ADVICE = {
    "valid": ("Your receiver refused a correctly signed delivery. Check that it verifies with this "
              "endpoint's own secret (not the merchant's callbackUrl secret), over the raw body as "
              "received, and that any of the space-separated signatures may match."),
    "tampered": ("Your receiver accepted a delivery whose body does not match its signature: it does not "
                 "verify signatures. Verify every delivery before acting on it, e.g. "
                 "Webhook(secret).verify(raw_body, headers) with a Standard Webhooks library, and answer "
                 "400 when it fails."),
    "replay": ("Your receiver accepted the same delivery (same webhook-id) twice. That is right only if it "
               "did not act on it the second time, which this check cannot see. Keep the webhook-ids you "
               "have processed and answer 2xx to a repeat without acting on it again; otherwise an "
               "attacker who captured one delivery can replay it."),
    "stale": ("Your receiver accepted a delivery whose webhook-timestamp is 10 minutes old. Refuse "
              "timestamps more than 5 minutes from your clock (Standard Webhooks libraries do), so a "
              "captured delivery cannot be replayed later."),
}


class CheckNotFound(Exception):
    """No such check of this endpoint."""

    def __init__(self, check_id: str):
        super().__init__(f"Receiver check {check_id[:40]} not found")


@dataclass(frozen=True)
class CaseResult:
    """What the receiver answered to one of the four sends."""

    case: str
    http_status: int | None
    error: str | None
    accepted: bool

    @property
    def as_expected(self) -> bool | None:
        """Whether the answer is the right one; None when the answer alone cannot tell (an
        accepted replay)."""
        expected = EXPECTED[self.case]
        if expected is None:
            return None if self.accepted else True
        return self.accepted == expected

    @property
    def advice(self) -> str | None:
        return None if self.as_expected else ADVICE[self.case]


@dataclass(frozen=True)
class Check:
    """One receiver check and, once done, its results."""

    row_id: int
    public_id: str
    endpoint_public_id: str
    done: bool
    requested_at: datetime
    finished_at: datetime | None
    results: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool | None:
        """No send got a wrong answer (an accepted replay is not one); None until done."""
        return all(r.as_expected is not False for r in self.results) if self.done else None

    @property
    def unjudged(self) -> list[CaseResult]:
        """The results whose answer cannot tell whether the receiver did right."""
        return [r for r in self.results if r.as_expected is None]


def request_check(deps, caller: Caller, endpoint_id: str) -> Check:
    """Record a check of the endpoint for a worker to run; audited."""
    now = deps.clock()
    public_id = "chk_" + secrets.token_hex(12)
    with deps.uow() as uow:
        endpoint = endpoints.get_endpoint(uow.conn, caller, endpoint_id)
        uow.conn.execute(insert(webhook_receiver_checks).values(
            public_id=public_id, endpoint_id=endpoint.row_id, merchant_id=caller.merchant_id,
            mode=caller.mode.value, state="pending", requested_at=now, requested_by=caller.actor[:254]))
        uow.audit(caller, "webhook_endpoint.check", target=endpoint_id)
        uow.commit()
    with deps.uow(write=False) as uow:
        return get_check(uow.conn, caller, endpoint_id, public_id)


def get_check(conn: Connection, caller: Caller, endpoint_id: str, check_id: str) -> Check:
    """One check of one of the caller's endpoints; CheckNotFound (or EndpointNotFound) otherwise."""
    endpoint = endpoints.get_endpoint(conn, caller, endpoint_id)
    if not 0 < len(check_id) <= 40 or not check_id.isprintable():
        raise CheckNotFound(check_id)
    c = webhook_receiver_checks.c
    row = conn.execute(select(webhook_receiver_checks).where(
        c.endpoint_id == endpoint.row_id, c.public_id == check_id)).first()
    if row is None:
        raise CheckNotFound(check_id)
    results = tuple(CaseResult(**item) for item in json.loads(row.results)) if row.results else ()
    return Check(row_id=row.id, public_id=row.public_id, endpoint_public_id=endpoint.public_id,
                 done=row.state == "done", requested_at=row.requested_at, finished_at=row.finished_at,
                 results=results)


def run_due_checks(deps, settings: DeliverySettings, limit: int = BATCH) -> int:
    """Run the checks asked for and not claimed by a live worker; how many were run."""
    c = webhook_receiver_checks.c
    made = 0
    with deps.uow(write=False) as uow:
        due = list(uow.conn.execute(select(c.id).where(
            c.state == "pending", or_(c.claimed_until.is_(None), c.claimed_until <= deps.clock()))
            .order_by(c.requested_at).limit(limit)).scalars())
    session = guarded_session(settings.guard, 2)
    try:
        for check_row_id in due:
            now = deps.clock()
            with deps.uow() as uow:
                claimed = uow.conn.execute(
                    update(webhook_receiver_checks)
                    .where(c.id == check_row_id, c.state == "pending",
                           or_(c.claimed_until.is_(None), c.claimed_until <= now))
                    .values(claimed_until=now + CLAIM_FOR)).rowcount
                target = _target(uow, check_row_id, now) if claimed else None
                uow.commit()
            if target is None:
                continue
            results = _send_all(session, settings, target, deps.clock)
            with deps.uow() as uow:
                uow.conn.execute(update(webhook_receiver_checks).where(c.id == check_row_id).values(
                    state="done", finished_at=deps.clock(), claimed_until=None,
                    results=json.dumps([r.__dict__ for r in results])))
                uow.commit()
            made += 1
    finally:
        session.close()
    return made


@dataclass(frozen=True)
class _Target:
    public_id: str
    url: str
    secrets: list[str]


def _target(uow, check_row_id: int, now: datetime) -> _Target:
    c, e = webhook_receiver_checks.c, webhook_endpoints.c
    row = uow.conn.execute(select(c.public_id, e.id, e.url).join(
        webhook_endpoints, webhook_endpoints.c.id == c.endpoint_id).where(c.id == check_row_id)).one()
    found = endpoints.active_secrets(uow.conn, uow.box, {row.id}, now)[row.id]
    return _Target(row.public_id, row.url, found)


def test_body(check_id: str, now: datetime) -> str:
    """The test event's body: the webhook fields, plainly a test (transactionType Test)."""
    return json.dumps({"txNo": check_id.upper().replace("_", "-"), "status": "Test", "amount": 1.00,
                       "currency": "EUR", "transactionType": "Test", "originalTxNo": None,
                       "providerTransactionId": None, "providerStatus": None,
                       "providerMessage": "Paydesk receiver check: do not act on this event",
                       "createdAt": iso_utc(now)})


def _send_all(session: requests.Session, settings: DeliverySettings, target: _Target, clock) -> list[CaseResult]:
    now = clock()
    body = test_body(target.public_id, now)
    valid = signed_headers("msg_" + secrets.token_hex(12), now, body, target.secrets)
    tampered_body = body.replace('"amount": 1.0', '"amount": 1000000.0')
    sends = {
        "valid": (valid, body),
        "tampered": ({**signed_headers("msg_" + secrets.token_hex(12), now, body, target.secrets)}, tampered_body),
        "replay": (valid, body),
        "stale": (signed_headers("msg_" + secrets.token_hex(12), now - STALE_BY, body, target.secrets), body),
    }
    return [_send(session, settings, target.url, case, *sends[case]) for case in CASES]


def _send(session, settings: DeliverySettings, url: str, case: str, headers: dict, body: str) -> CaseResult:
    try:
        check_url(url)
        response = session.post(url, data=body.encode(), headers=headers, allow_redirects=False,
                                timeout=(settings.connect_timeout, settings.timeout))
        response.close()
    except TargetRefused as refused:
        return CaseResult(case, None, str(refused)[:300], False)
    except requests.RequestException as error:
        return CaseResult(case, None, f"{type(error).__name__}: no answer"[:300], False)
    return CaseResult(case, response.status_code, None, 200 <= response.status_code < 300)

