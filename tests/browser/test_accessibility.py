"""Every dashboard page, for every role, in both modes, on a desktop and on a phone: axe-core finds
no WCAG 2.2 AA violation and nothing scrolls sideways. The pages are listed in accessibility.py.
Set DASHBOARD_SCREENSHOTS=<dir> to keep a screenshot of each for review."""
from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from app.payments import batches, dispute_service, recipients, settlement
from app.payments.recipients import RecipientDetails
from app.payments.model import Caller, Mode, Status
from app.store.merchants import NewMerchant, create_merchant
from app.webhooks.dispatcher import deliver_due
from app.webhooks.settings import DeliverySettings
from tests.api.test_create_and_status import payout_body
from tests.conftest import Api, payment_body
from tests.dashboard.conftest import add_user
from tests.dashboard.test_payouts import nuban

from .accessibility import ROLES, SIGNED_OUT, Sample, page_problems, shown_across, visits
from .conftest import open_in_mode, sign_in, slow_down

WIDTHS = {"desktop": 1366, "phone": 390}
# Every page is checked at a tablet's width too, where the top bar wraps and tables are still
# tables: the account link was 21.6 px tall there, the audit log and disputes scrolled sideways.
PAGE_WIDTHS = {**WIDTHS, "tablet": 900}
MODES = ("live", "sandbox")


@dataclass(frozen=True)
class Shop:
    """A merchant with a sample of transactions in each mode."""

    merchant: NewMerchant
    samples: dict[str, Sample]


@pytest.fixture(scope="module")
def shop(server) -> Shop:
    """A merchant of this module with, in both modes, the transactions visits() looks at, their
    webhooks delivered to the merchant's inbox, and refunds and payouts in the audit log."""
    app = server.app
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        merchant = create_merchant(uow, f"Merchant {uuid.uuid4().hex[:10]}", app.config["BASE_URL"])
        uow.commit()
    tokens = {"live": merchant.live_token, "sandbox": merchant.sandbox_token}
    samples = {mode: _sample(deps, merchant, Mode(mode), Api(server.url, tokens[mode])) for mode in MODES}
    deliver_due(deps, DeliverySettings.from_config(app.config), merchant.merchant_id)
    _long_audit_rows(deps, merchant)
    return Shop(merchant, samples)


def _long_audit_rows(deps, merchant: NewMerchant) -> None:
    """Audit rows as long as real ones get: staff e-mails, an IPv6 address, a provider's URL."""
    for mode in Mode:
        admin = Caller(merchant.merchant_id, mode, "operations-admin@a-shop-with-a-long-name.example",
                       "2001:db8:85a3::8a2e:370:7334")
        with deps.uow() as uow:
            uow.audit(admin, "provider.connect", "paystack:1", detail={
                "provider": "paystack", "keyHint": "sk_live_…9f2c", "webhookSecret": True,
                "baseUrl": "https://api.paystack.co/a-long-path-of-a-proxy-in-front-of-paystack"})
            uow.commit()
    with deps.uow() as uow:
        uow.audit(admin, "user.role", "finance-lead-for-europe@a-shop-with-a-long-name.example",
                  detail={"from": "support", "to": "finance"}, both_modes=True)
        uow.commit()


def _sample(deps, merchant: NewMerchant, mode: Mode, api: Api) -> Sample:
    checkout = Caller(merchant.merchant_id, mode, "checkout")

    def payment(reference: str, status: Status | None, reason: str | None = None) -> str:
        created = api.post("/transactions", payment_body(
            amount=1234.5, reference=reference, callbackUrl=merchant.inbox_url))
        assert created.status_code == 200, created.text
        tx_no = created.json()["transactionId"]
        if status is not None:  # decided at the checkout, as a customer would
            settlement.move_by_provider(deps, checkout, tx_no, status, reason, source="checkout")
        return tx_no

    tag = uuid.uuid4().hex[:6].upper()
    captured = payment(f"ORDER-{tag}-WITH-A-LONG-REFERENCE-FROM-THE-SHOP", Status.CAPTURED)
    refund = api.post("/transactions/refund", {"txNo": captured, "amount": 34.5, "reason": "Damaged item"})
    assert refund.status_code == 200, refund.text
    payout = api.post("/transactions", payout_body())
    assert payout.status_code == 200, payout.text
    disputed = payment(f"ORDER-{tag}-DISPUTED", Status.CAPTURED)
    charged_back = settlement.move_by_provider(deps, checkout, disputed, Status.CHARGEBACK, None, source="checkout")
    dispute = dispute_service.open_in_sandbox(deps, charged_back).dispute  # the simulator's dispute
    recipient = recipients.save(deps, Caller(merchant.merchant_id, mode, "payouts@shop.test"), RecipientDetails(
        payment_method="ng-bank-payout", currency="NGN", bank="058", holder="Oluwaseun Adebayo-Williams",
        account_number=nuban("058"), first_name="Oluwaseun", last_name="Adebayo-Williams",
        email="oluwaseun.adebayo-williams@a-long-domain-name.example", label="Lagos warehouse rent, monthly"))
    endpoint = api.post("/webhook-endpoints", {
        "url": "https://hooks.a-shop-with-a-long-name.example/paydesk/events/finance-team-alerts",
        "enabledEvents": ["refund.failed", "payout.failed", "payment.chargeback"], "description": "Finance alerts"})
    assert endpoint.status_code == 201, endpoint.text
    return Sample(payment=captured, pending=payment(f"ORDER-{tag}-PENDING", None),
                  declined=payment(f"ORDER-{tag}-DECLINED", Status.DECLINED, "Insufficient Funds"),
                  payout=payout.json()["transactionId"], dispute=dispute.dispute_no, disputed=disputed,
                  recipient=recipient.recipient.public_id, endpoint=endpoint.json()["id"],
                  batch_in_review=_batch(api, tag, refused_row=True),
                  batch_done=_batch(api, tag, refused_row=False, deps=deps))


def _batch(api: Api, tag: str, *, refused_row: bool, deps=None) -> str:
    """A payout batch of three rows: with a refused row it stays in review; without, it runs
    and a worker's pass makes its rows (deps given)."""
    account = nuban("058", "012345678")
    rows = [{"paymentMethod": "ng-bank-payout", "amount": 1500, "currency": "NGN", "bank": "058",
             "holder": "Ada Obi", "accountNumber": account, "reference": f"BATCH-{tag}-{refused_row}-{n}",
             "email": "ada@example.com"} for n in range(3)]
    if refused_row:
        rows[1].update(bank="999", amount=-5)
    created = api.post("/payouts/batches", {"rows": rows})
    assert created.status_code == 201, created.text
    if deps is not None:
        batches.run_due_batches(deps)
        assert api.get(f"/payouts/batches/{created.json()['id']}").json()["state"] == "done"
    return created.json()["id"]


@pytest.fixture
def context_at(browser: Browser):
    """Factory: a browser context at the width, which lets axe's script into the dashboard's
    pages (bypass_csp: their CSP allows only the site's own scripts); closed after the test."""
    made: list[BrowserContext] = []

    def new_context(width: int) -> BrowserContext:
        made.append(browser.new_context(bypass_csp=True, viewport={"width": width, "height": 900}))
        made[-1].on("page", slow_down)
        return made[-1]

    yield new_context
    for context in made:
        context.close()


@pytest.mark.parametrize("screen", PAGE_WIDTHS)
@pytest.mark.parametrize("role", ROLES)
def test_every_page_of_the_role_passes_axe_and_fits_the_screen(context_at, server, shop, role, screen):
    page = context_at(PAGE_WIDTHS[screen]).new_page()
    sign_in(page, server.url, add_user(server.app, shop.merchant.merchant_id, role))
    problems = []
    for mode in MODES:
        for visit in visits(shop.samples[mode]):
            if role in visit.roles:
                open_in_mode(page, server.url, visit.path, mode)
                if visit.then:
                    visit.then(page)
                _keep_screenshot(page, f"{role}-{mode}-{visit.name}-{screen}")
                problems += [f"{mode} {visit.name} ({visit.path}): {problem}"
                             for problem in page_problems(page)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("screen", PAGE_WIDTHS)
def test_the_signed_out_pages_pass_axe_and_fit_the_screen(context_at, server, shop, screen):
    page = context_at(PAGE_WIDTHS[screen]).new_page()
    problems = []
    for visit in visits(shop.samples["live"]):
        if SIGNED_OUT <= visit.roles:
            page.goto(server.url + visit.path)
            if visit.then:
                visit.then(page)
            _keep_screenshot(page, f"{visit.name}-{screen}")
            problems += [f"{visit.name} ({visit.path}): {problem}" for problem in page_problems(page)]
    assert not problems, "\n".join(problems)


def _signed_in_at(page: Page, server, shop: Shop, role: str, screen: str) -> None:
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    sign_in(page, server.url, add_user(server.app, shop.merchant.merchant_id, role))


# The cells whose width to check; on a phone, tables shown as cards keep their header row for
# screen readers only (1 px, clipped).
CELLS = {"desktop": "th, td", "phone": "td"}


def _cut_off(cells) -> list[str]:
    """The texts of the visible cells that are not seen across their whole width."""
    return [cell.inner_text() for cell in cells.all() if cell.is_visible() and not shown_across(cell)]


def test_every_menu_item_is_on_a_phone_screen(page: Page, server, shop):
    _signed_in_at(page, server, shop, "admin", "phone")
    links = page.get_by_role("navigation", name="Main").get_by_role("link")
    expect(links.last).to_have_text("Settings")
    _keep_screenshot(page, "menu-phone")
    assert _cut_off(links) == []
    links.last.focus()  # reached with the keyboard, and seen where it is
    assert shown_across(links.last)


def test_revoke_and_deactivate_are_on_a_phone_screen(page: Page, server, shop):
    add_user(server.app, shop.merchant.merchant_id, "support")
    _signed_in_at(page, server, shop, "admin", "phone")
    page.goto(f"{server.url}/settings")
    revoke = page.locator("#tokens").get_by_role("button", name=re.compile("^Revoke"))
    deactivate = page.locator("#users").get_by_role("button", name=re.compile("^Deactivate"))
    expect(revoke.first).to_be_visible()
    expect(deactivate.first).to_be_visible()
    _keep_screenshot(page, "settings-phone")
    assert shown_across(revoke.first) and shown_across(deactivate.first)
    assert _cut_off(page.locator("#tokens td, #users td")) == []


@pytest.mark.parametrize("screen", WIDTHS)
def test_every_audit_column_is_seen_whole(page: Page, server, shop, screen):
    _signed_in_at(page, server, shop, "support", screen)
    page.goto(f"{server.url}/audit")
    expect(page.get_by_text("Base URL:").first).to_be_visible()
    _keep_screenshot(page, f"audit-{screen}")
    assert _cut_off(page.locator("main").locator(CELLS[screen])) == []


@pytest.mark.parametrize("screen", WIDTHS)
def test_every_refunds_column_is_seen_whole(page: Page, server, shop, screen):
    _signed_in_at(page, server, shop, "finance", screen)
    page.goto(f"{server.url}/transactions/{shop.samples['live'].payment}")
    refunds = page.locator("#refunds")
    expect(refunds.get_by_text("Damaged item")).to_be_visible()
    expect(refunds.locator("time")).to_be_visible()  # when the refund was issued
    assert shown_across(refunds.locator("time"))
    _keep_screenshot(page, f"refunds-{screen}")
    assert _cut_off(refunds.locator(CELLS[screen])) == []


def _keep_screenshot(page: Page, name: str) -> None:
    folder = os.environ.get("DASHBOARD_SCREENSHOTS")
    if folder:
        file_name = re.sub(r"[^a-z0-9]+", "-", name.lower()) + ".png"
        page.screenshot(path=str(Path(folder) / file_name), full_page=True)
