"""The demo merchant of `make run`: users, tokens kept for reprinting, sample transactions."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path

from flask import Flask

from app.payments import create, recipients, refunds, settlement
from app.payments.model import Caller, Mode, Status
from app.payments.recipients import RecipientDetails
from app.payments.schemas import parse_create, parse_refund
from app.store.merchants import create_merchant, create_user, inbox_url, merchant_by_name
from app.web import deps as app_deps, password_hasher

DEMO_MERCHANT = "Demo Shop"
DEMO_PASSWORD = "paydesk-demo"  # nosec B105 # published in the README; only `flask demo` seeds users with it
DEMO_USERS = (
    ("admin@demo.test", "admin"),
    ("finance@demo.test", "finance"),
    ("support@demo.test", "support"),
    ("payouts@demo.test", "payouts"),
)


@dataclass
class DemoCredentials:
    """What `make run` prints."""

    base_url: str
    data: dict

    def describe(self) -> str:
        """The text block printed at start-up."""
        lines = [
            f"Paydesk is running at {self.base_url}",
            f"Dashboard: {self.base_url}/  (password for every demo user: {DEMO_PASSWORD})",
        ]
        lines += [f"  {email:<22} role {role}" for email, role in DEMO_USERS]
        lines += [
            f"Live API token:     {self.data['liveToken']}",
            f"Sandbox API token:  {self.data['sandboxToken']}",
            f"Sandbox webhook secret: {self.data['sandboxWebhookSecret']}",
            f"Inbox URL:          {self.data['inboxUrl']}",
        ]
        return "\n".join(lines)


def _credentials_file(app: Flask) -> Path:
    return Path(app.instance_path) / "demo-credentials.json"


def seed_demo(app: Flask) -> DemoCredentials:
    """Create the demo merchant once; later runs reprint the credentials kept in instance/."""
    deps = app_deps(app)
    path = _credentials_file(app)
    with deps.uow() as uow:
        existing = merchant_by_name(uow.conn, DEMO_MERCHANT)
        if existing is None:
            created = create_merchant(uow, DEMO_MERCHANT, app.config["BASE_URL"])
            for email, role in DEMO_USERS:
                create_user(uow.conn, created.merchant_id, email, role,
                            password_hasher(app).hash(DEMO_PASSWORD))
            uow.commit()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(created.as_json(), indent=2))
            os.chmod(path, 0o600)
            _sample_transactions(deps, created.merchant_id, created.inbox_url)
            _sample_recipients(deps, created.merchant_id)
    if not path.exists():
        raise RuntimeError(f"demo merchant exists but {path} is gone; remove instance/ to start over")
    data = json.loads(path.read_text())
    with deps.uow(write=False) as uow:
        key = merchant_by_name(uow.conn, DEMO_MERCHANT).inbox_key
    data["inboxUrl"] = inbox_url(app.config["BASE_URL"], key)  # the address this run serves
    return DemoCredentials(app.config["BASE_URL"], data)


def _sample_transactions(deps, merchant_id: int, callback_url: str) -> None:
    """A few payments in every state so the dashboard has something to show, their webhooks sent
    to callback_url (the merchant's inbox, where the dashboard shows them received).

    Its live ones are the simulator's, made as a demo whatever DEMO_MODE says: they are sample
    data, and without DEMO_MODE their checkout page lets no payer decide them.
    """
    deps = replace(deps, demo_mode=True)
    for mode in (Mode.LIVE, Mode.SANDBOX):
        caller = Caller(merchant_id, mode, "demo")
        samples = [
            ("ORDER-1001", "100.00", Status.CAPTURED, None),
            ("ORDER-1002", "49.90", Status.CAPTURED, None),
            ("ORDER-1003", "250.00", Status.DECLINED, "Insufficient Funds"),
            ("ORDER-1004", "15.00", None, None),
            ("ORDER-1005", "75.50", Status.CAPTURED, None),
        ]
        for reference, amount, outcome, reason in samples:
            tx = create.create_transaction(deps, caller, parse_create({
                "amount": Decimal(amount), "currency": "EUR", "reference": reference,
                "statementDescriptor": "DEMO SHOP", "callbackUrl": callback_url,
                "billing": {"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
                            "customerReference": "cust-42"},
                "payment": {"paymentMethod": "card"},
            }))
            if outcome:
                settlement.move_by_provider(deps, caller, tx.tx_no, outcome, reason, source="demo")
        first = _by_reference(deps, caller, "ORDER-1005")
        refunds.refund(deps, caller, parse_refund({"txNo": first, "amount": Decimal("20.00"),
                                                   "reason": "Damaged item"}))


# Sandbox recipients the payouts demo user can pay again at once: a Nigerian bank account (a
# valid NUBAN at Guaranty Trust Bank) and a German IBAN at Commerzbank.
DEMO_RECIPIENTS = (
    RecipientDetails(payment_method="ng-bank-payout", currency="NGN", bank="058", holder="Chinedu Okafor",
                     account_number="0123456785", first_name="Chinedu", last_name="Okafor",
                     email="chinedu@example.com", label="Lagos office rent"),
    RecipientDetails(payment_method="sepa-payout", currency="EUR", country="DE", bank="COBADEFF",
                     holder="Greta Schmidt", account_number="DE89370400440532013000", first_name="Greta",
                     last_name="Schmidt", email="greta@example.com", label="Berlin freelancer"),
)


def _sample_recipients(deps, merchant_id: int) -> None:
    """Two saved recipients in the sandbox, so the Recipients page shows something to pay."""
    caller = Caller(merchant_id, Mode.SANDBOX, "demo")
    for details in DEMO_RECIPIENTS:
        recipients.save(deps, caller, details)


def _by_reference(deps, caller: Caller, reference: str) -> str:
    with deps.uow(write=False) as uow:
        return uow.transactions.find_by_reference(caller, reference)

