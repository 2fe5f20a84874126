"""Issue 31's measure, as a person does it: a repeat payout to a saved recipient takes at most 5
clicks (or Enter presses), for a SEPA payout and for an NGN bank payout. Typing is not counted."""
from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

from app.payments import recipients
from app.payments.model import Caller, Mode
from app.payments.recipients import RecipientDetails
from tests.dashboard.conftest import add_user
from tests.dashboard.test_payouts import nuban

from .conftest import open_in_mode, sign_in

MAX_CLICKS = 5
IBAN = "DE89370400440532013000"


class Clicks:
    """Every click and Enter press the test makes on the way, counted."""

    def __init__(self, page: Page):
        self.page = page
        self.count = 0

    def click(self, target: Locator) -> None:
        """Click it, as a person would."""
        self.count += 1
        target.click()

    def enter(self) -> None:
        """Press Enter where the focus is."""
        self.count += 1
        self.page.keyboard.press("Enter")


def _saved(server, merchant, mode: Mode, details: RecipientDetails) -> recipients.Recipient:
    caller = Caller(merchant.merchant_id, mode, "someone-earlier@shop.test")
    return recipients.save(server.app.extensions["paydesk"], caller, details).recipient


def _pay_again(page: Page, holder: str, amount: str, shown_amount: str) -> Clicks:
    """From any dashboard page: Recipients, Pay <holder>, the amount typed, Enter (review), Confirm."""
    clicks = Clicks(page)
    clicks.click(page.get_by_role("navigation", name="Main").get_by_role("link", name="Recipients"))
    expect(page).to_have_title("Recipients · Paydesk")
    page.wait_for_load_state("load")
    clicks.click(page.get_by_role("link", name=re.compile(f"^Pay {holder}")))
    expect(page).to_have_title(f"Pay {holder} · Paydesk")
    page.wait_for_load_state("load")
    expect(page.get_by_label(re.compile(r"^Amount \("))).to_be_focused()  # typed at once
    page.keyboard.type(amount)
    clicks.enter()
    expect(page.get_by_role("heading", name=f"Review payout of {shown_amount}")).to_be_visible()
    clicks.click(page.get_by_role("button", name="Confirm payout"))
    expect(page).to_have_title(re.compile(r"^Payout POU-[0-9A-F]{16} · Paydesk$"))
    expect(page.get_by_role("status").first).to_contain_text(f"to {holder} created")
    expect(page.locator(".tx-amount")).to_have_text(shown_amount)
    return clicks


def test_a_repeat_sepa_payout_to_a_saved_recipient_takes_at_most_5_clicks(page: Page, server, merchant):
    _saved(server, merchant, Mode.LIVE, RecipientDetails(
        payment_method="sepa-payout", currency="EUR", country="DE", bank="COBADEFF", holder="Greta Schmidt",
        account_number=IBAN, first_name="Greta", last_name="Schmidt", email="greta@example.com",
        label="Berlin freelancer"))
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))

    clicks = _pay_again(page, "Greta Schmidt", "1250.50", "1,250.50 EUR")

    assert clicks.count == 4 <= MAX_CLICKS, clicks.count  # Recipients, Pay, Enter, Confirm
    expect(page.get_by_text("•••• 3000")).to_be_visible()
    assert IBAN not in page.content()


def test_a_repeat_ngn_payout_to_a_saved_recipient_takes_at_most_5_clicks(page: Page, server, merchant):
    account = nuban("058")
    _saved(server, merchant, Mode.SANDBOX, RecipientDetails(
        payment_method="ng-bank-payout", currency="NGN", bank="058", holder="Chinedu Okafor",
        account_number=account, first_name="Chinedu", last_name="Okafor", email="chinedu@example.com"))
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))
    open_in_mode(page, server.url, "/transactions", "sandbox")  # where the operator works already
    page.wait_for_load_state("load")

    clicks = _pay_again(page, "Chinedu Okafor", "25000", "25,000.00 NGN")

    assert clicks.count == 4 <= MAX_CLICKS, clicks.count  # Recipients, Pay, Enter, Confirm
    assert page.url.startswith(f"{server.url}/test/transactions/POU-")
    expect(page.get_by_text("Guaranty Trust Bank")).to_be_visible()
    assert account not in page.content()


def test_a_recipient_is_saved_from_the_form_and_then_listed_masked(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "payouts"))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Recipients").click()
    page.get_by_role("link", name="Save recipient").click()
    expect(page).to_have_title("Save recipient · Paydesk")
    page.wait_for_load_state("load")
    page.get_by_label("Payout method").select_option(label="NGN bank payout")
    page.get_by_role("listbox", name="Bank").select_option("058")
    page.get_by_label("Account holder").fill("Chinedu Okafor")
    page.get_by_label("Account number").fill(nuban("058"))
    page.get_by_label("Nickname").fill("Lagos office rent")
    page.get_by_label("First name").fill("Chinedu")
    page.get_by_label("Last name").fill("Okafor")
    page.get_by_label("E-mail").fill("chinedu@example.com")
    page.get_by_role("button", name="Save recipient").click()

    expect(page).to_have_title("Recipients · Paydesk")
    expect(page.get_by_role("status").first).to_contain_text(
        f"Recipient Chinedu Okafor saved (account •••• {nuban('058')[-4:]}).")
    expect(page.get_by_role("link", name="Pay Chinedu Okafor (Lagos office rent)")).to_be_visible()
    assert nuban("058") not in page.content()
