"""Accessibility checks of a page (axe-core at WCAG 2.2 AA, no sideways scrolling) and the list of
dashboard pages to check, role by role: add a page to `visits()` and every role allowed to open it
checks it in both modes at both widths (tests/browser/test_accessibility.py)."""
from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from app.auth.users import PERMISSIONS
from tests.dashboard.test_payouts import nuban

# axe-core from npm (tests/browser/axe, pinned with its lock file; `make install-test` installs it).
AXE_SCRIPT = Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.2 AA: axe tags each rule with the level that first asked for it, so AA is all five.
WCAG_22_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
ROLES = ("support", "finance", "payouts", "admin")
EVERYONE = frozenset(ROLES)
REFUNDERS = PERMISSIONS["refund"]
CANCELLERS = PERMISSIONS["cancel"]
PAYERS = PERMISSIONS["create_payout"]
ADMINS = PERMISSIONS["manage_settings"]
OVERVIEWERS = PERMISSIONS["view_overview"]
RECONCILERS = PERMISSIONS["reconcile"]
DISPUTERS = PERMISSIONS["answer_disputes"]
BATCHERS = PERMISSIONS["batches"]
PAYOUT_BATCHERS = BATCHERS & PAYERS  # a payout batch's page also needs create_payout
SIGNED_OUT = frozenset({"signed out"})


@dataclass(frozen=True)
class Sample:
    """One mode's transactions worth a look: a captured payment partly refunded (with a long
    reference), a Pending payment, a declined payment and a payout."""

    payment: str
    pending: str
    declined: str
    payout: str
    dispute: str = "DSP-NONE"  # an open dispute of another captured payment
    disputed: str = "PAY-NONE"  # that payment
    recipient: str = "rcp_none"  # a saved recipient (an NGN bank account)
    batch_in_review: str = "bat_none"  # a payout batch with a refused row, in review
    batch_done: str = "bat_none"  # a payout batch the worker has made
    endpoint: str = "we_none"  # a webhook endpoint


@dataclass(frozen=True)
class Visit:
    """A page to check: what it is, its path, the roles that open it, and a step to take on it
    before the check (opening a review step, sending a form with errors)."""

    name: str
    path: str
    roles: frozenset[str] = EVERYONE
    then: Callable[[Page], None] | None = None


def visits(sample: Sample) -> list[Visit]:
    """Every dashboard page, with the roles allowed to open it (PERMISSIONS in app/auth/users.py);
    the roles not allowed see the "Not allowed" page instead."""
    return [
        Visit("Sign in", "/login", SIGNED_OUT),
        Visit("Sign in refused", "/login", SIGNED_OUT, then=sign_in_with_a_wrong_password),
        Visit("Password link expired", "/password/not-a-link-of-anyone", SIGNED_OUT),
        Visit("Transactions", "/transactions"),
        Visit("Search without results", "/transactions?q=nothing-matches-this"),
        Visit("Payment", f"/transactions/{sample.payment}"),
        Visit("Refund review", f"/transactions/{sample.payment}", REFUNDERS, then=review_a_refund),
        Visit("Refund refused", f"/transactions/{sample.payment}", REFUNDERS, then=refund_too_much),
        Visit("Pending payment", f"/transactions/{sample.pending}"),
        Visit("Cancel review", f"/transactions/{sample.pending}", CANCELLERS, then=review_a_cancel),
        Visit("Declined payment", f"/transactions/{sample.declined}"),
        Visit("Disputed payment", f"/transactions/{sample.disputed}"),
        Visit("Payout", f"/transactions/{sample.payout}"),
        Visit("New payout", "/payouts/new", PAYERS),
        Visit("New payout with errors", "/payouts/new", PAYERS, then=review_an_empty_payout),
        Visit("Payout review", "/payouts/new", PAYERS, then=review_a_payout),
        Visit("SEPA payout", "/payouts/new?method=sepa-payout&currency=EUR", PAYERS, then=type_an_iban),
        Visit("Sent webhooks", "/webhooks"),
        Visit("Received webhooks", "/webhooks/inbox"),
        Visit("Provider events", "/webhooks/providers"),
        Visit("Audit log", "/audit"),
        Visit("Settings", "/settings", ADMINS),
        Visit("New token shown once", "/settings", ADMINS, then=create_a_token),
        Visit("Providers", "/settings/providers", ADMINS),
        Visit("Provider form with errors", "/settings/providers", ADMINS, then=connect_without_a_key),
        Visit("Not allowed", "/settings", EVERYONE - ADMINS),
        Visit("Not allowed", "/payouts/new", EVERYONE - PAYERS),
        Visit("Not found", "/transactions/NO-SUCH-TX"),
        Visit("Approvals", "/approvals", REFUNDERS | PAYERS),
        Visit("Approvals and limits", "/settings/approvals", ADMINS),
        Visit("Not allowed", "/approvals", EVERYONE - REFUNDERS - PAYERS),
        Visit("Overview", "/overview", OVERVIEWERS),
        Visit("Overview, 90 days", "/overview?days=90", OVERVIEWERS),
        Visit("Overview range problem", "/overview?from=2026-13-01&to=2026-01-01", OVERVIEWERS),
        Visit("Not allowed", "/overview", EVERYONE - OVERVIEWERS),
        Visit("Reconciliation", "/reconciliation", RECONCILERS),
        Visit("Not allowed", "/reconciliation", EVERYONE - RECONCILERS),
        Visit("Search by customer", "/transactions?q=example"),
        Visit("Customer", "/customer?reference=cust-1"),
        Visit("Customer by e-mail", "/customer?email=ada@example.com"),
        Visit("Audit log filtered", "/audit?action=refund.create&from=2020-01-01"),
        Visit("Audit filter problem", "/audit?from=not-a-day"),
        Visit("Your account", "/account"),
        Visit("Top bar search results", "/audit", then=search_from_the_top_bar),
        Visit("Your sessions", "/account/sessions"),
        Visit("Two-factor enrolment", "/account/two-factor"),
        Visit("Disputes", "/disputes", DISPUTERS),
        Visit("Dispute", f"/disputes/{sample.dispute}", DISPUTERS),
        Visit("Not allowed", "/disputes", EVERYONE - DISPUTERS),
        Visit("Recipients", "/recipients", PAYERS),
        Visit("Recipients search without results", "/recipients?q=nobody-is-called-this", PAYERS),
        Visit("Save recipient", "/recipients/new", PAYERS),
        Visit("Save recipient with errors", "/recipients/new", PAYERS, then=save_an_empty_recipient),
        Visit("Pay a recipient", f"/recipients/{sample.recipient}/pay", PAYERS),
        Visit("Pay a recipient with errors", f"/recipients/{sample.recipient}/pay", PAYERS,
              then=review_an_empty_recipient_payout),
        Visit("Recipient payout review", f"/recipients/{sample.recipient}/pay", PAYERS,
              then=review_a_recipient_payout),
        Visit("Not allowed", "/recipients", EVERYONE - PAYERS),
        Visit("Batches", "/batches", BATCHERS),
        Visit("Batch file refused", "/batches", BATCHERS, then=upload_a_file_without_rows),
        Visit("Batch in review", f"/batches/{sample.batch_in_review}", PAYOUT_BATCHERS),
        Visit("Batch done", f"/batches/{sample.batch_done}", PAYOUT_BATCHERS),
        Visit("Not allowed", "/batches", EVERYONE - BATCHERS),
        Visit("Webhook endpoints", "/settings/webhook-endpoints", ADMINS),
        Visit("Webhook endpoint form with errors", "/settings/webhook-endpoints", ADMINS,
              then=create_an_empty_endpoint),
        Visit("Webhook endpoint", f"/settings/webhook-endpoints/{sample.endpoint}", ADMINS),
        Visit("Not allowed", "/settings/webhook-endpoints", EVERYONE - ADMINS),
    ]


def upload_a_file_without_rows(page: Page) -> None:
    """Send the batch upload form a CSV file with a header and no rows: the file's error."""
    page.get_by_label("CSV file", exact=False).set_input_files(
        {"name": "empty.csv", "mimeType": "text/csv", "buffer": b"txNo,amount\r\n"})
    page.get_by_role("button", name="Check the file").click()
    expect(page.get_by_role("alert")).to_be_visible()


def sign_in_with_a_wrong_password(page: Page) -> None:
    """Send the sign-in form with a password that is not the user's."""
    page.get_by_label("E-mail").fill("nobody@shop.test")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()


def review_a_refund(page: Page) -> None:
    """Take the refund panel to its review step."""
    panel = page.locator("#refund-panel")
    panel.get_by_label("Reason").fill("Damaged item")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_role("button", name="Confirm refund", exact=False)).to_be_visible()


def refund_too_much(page: Page) -> None:
    """Ask the refund panel for more than can be refunded."""
    panel = page.locator("#refund-panel")
    panel.get_by_label("Amount to refund", exact=False).fill("999999")
    panel.get_by_role("button", name="Review refund").click()
    expect(panel.get_by_role("alert")).to_be_visible()


def review_a_cancel(page: Page) -> None:
    """Take the cancel panel to its confirm step."""
    page.locator("#cancel-panel").get_by_role("button", name="Cancel payment").click()
    expect(page.get_by_role("button", name="Confirm cancel")).to_be_visible()


def review_an_empty_payout(page: Page) -> None:
    """Send the payout form without filling it in."""
    page.get_by_role("button", name="Review payout").click()
    expect(page.locator("#error-summary")).to_be_visible()


def review_a_payout(page: Page) -> None:
    """Fill in an NGN bank payout and take it to its review step."""
    page.get_by_label("Payout method").select_option(label="NGN bank payout")
    page.get_by_role("listbox", name="Bank").select_option("058")
    page.get_by_label("Account holder").fill("Chinedu Okafor")
    page.get_by_label("Account number").fill(nuban("058"))
    page.get_by_label("Amount", exact=True).fill("25000")
    page.get_by_label("Reference", exact=True).fill(f"PAYOUT-{uuid.uuid4().hex[:8]}")
    page.get_by_label("First name").fill("Chinedu")
    page.get_by_label("Last name").fill("Okafor")
    page.get_by_label("E-mail").fill("chinedu@example.com")
    page.get_by_label("Customer reference").fill("cust-42")
    page.get_by_role("button", name="Review payout").click()
    expect(page.get_by_role("button", name="Confirm payout")).to_be_visible()


def search_from_the_top_bar(page: Page) -> None:
    """Press "/" and type in the top bar's search until its options show."""
    page.wait_for_load_state("load")
    page.keyboard.press("/")
    page.keyboard.type("SBX", delay=20)
    expect(page.locator("#quick-results [role=option]").first).to_have_attribute("aria-selected", "true")


def save_an_empty_recipient(page: Page) -> None:
    """Send the recipient form without filling it in."""
    page.get_by_role("button", name="Save recipient").click()
    expect(page.locator("#error-summary")).to_be_visible()


def review_an_empty_recipient_payout(page: Page) -> None:
    """Send a recipient's pay form without an amount."""
    page.get_by_role("button", name="Review payout").click()
    expect(page.locator("#error-summary")).to_be_visible()


def review_a_recipient_payout(page: Page) -> None:
    """Type an amount to pay the recipient and take it to its review step."""
    page.get_by_label(re.compile(r"^Amount \(")).fill("25000")
    page.get_by_role("button", name="Review payout").click()
    expect(page.get_by_role("button", name="Confirm payout")).to_be_visible()


def type_an_iban(page: Page) -> None:
    """Type an IBAN: the form names its bank, with no list to pick from."""
    page.get_by_label("IBAN").fill("DE89 3704 0044 0532 0130 00")
    expect(page.locator("#iban-bank")).to_have_text("This IBAN is at Commerzbank (COBADEFF)")


def create_a_token(page: Page) -> None:
    """Create an API token, which is shown once."""
    page.get_by_role("button", name=re.compile(r"^Create \w+ token$")).click()
    expect(page.get_by_role("heading", level=1)).not_to_have_text("Settings")


def connect_without_a_key(page: Page) -> None:
    """Send the provider form without a secret key."""
    page.get_by_role("button", name="Connect in", exact=False).click()
    expect(page.locator(".field-errors").first).to_be_visible()


def create_an_empty_endpoint(page: Page) -> None:
    """Send the new endpoint form without a URL or event types."""
    page.get_by_label("Every event type (*)").uncheck()
    page.get_by_role("button", name="Create endpoint").click()
    expect(page.locator(".field-errors").first).to_be_visible()


def axe_violations(page: Page) -> list[str]:
    """What axe-core finds against WCAG 2.2 AA on the page, one line per rule and element. The
    script is added as a <script> element, which the dashboard's CSP allows only in a browser
    context made with bypass_csp=True."""
    if not page.evaluate("typeof axe === 'object'"):  # still there after an htmx swap
        page.add_script_tag(path=AXE_SCRIPT)
    found = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags},"
                          " resultTypes: ['violations']}).then(result => result.violations)",
                          WCAG_22_AA)
    return [f"{rule['id']} ({rule['impact']}): {rule['help']}: {node['target']} "
            f"{node['failureSummary'].splitlines()[-1].strip()}"
            for rule in found for node in rule["nodes"]]


# Parts of a page that scroll sideways inside it: a menu or table that does would hide its
# last items or columns (the Revoke button, the audit's details) behind a scroll with no hint.
SIDEWAYS_PARTS = """() => [...document.querySelectorAll('body *')]
    .filter(el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
    .filter(el => el.scrollWidth > el.clientWidth + 1 && el.getClientRects().length)
    .map(el => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`
               + (el.closest('[id]') ? ` in #${el.closest('[id]').id}` : '')
               + ` by ${el.scrollWidth - el.clientWidth}px`)"""


def sideways_scroll(page: Page) -> int:
    """How many pixels the page scrolls sideways (0 when it fits the screen's width)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def parts_scrolling_sideways(page: Page) -> list[str]:
    """The menus, tables and other parts of the page that scroll sideways inside it."""
    return page.evaluate(SIDEWAYS_PARTS)


# Whether an element is shown across its whole width: inside the screen and inside every box
# around it that clips (a table scrolling inside its wrapper hides its last columns).
SHOWN_ACROSS = """element => {
    const box = element.getBoundingClientRect();
    if (box.left < 0 || box.right > document.documentElement.clientWidth + 0.5) return false;
    for (let around = element.parentElement; around; around = around.parentElement) {
        if (getComputedStyle(around).overflowX === 'visible') continue;
        const clip = around.getBoundingClientRect();
        if (box.left < clip.left - 0.5 || box.right > clip.right + 0.5) return false;
    }
    return true;
}"""


def shown_across(locator: Locator) -> bool:
    """Whether the element is seen across its whole width, without scrolling anything sideways."""
    return locator.evaluate(SHOWN_ACROSS)


def page_problems(page: Page) -> list[str]:
    """axe's violations and sideways scrolling of the page or of a part of it, as sentences, once
    the page has loaded: a page a step's form sent the browser to may show its errors before its
    stylesheet applies, and axe then measured unstyled links crowded together (target-size,
    seen under load)."""
    page.wait_for_load_state("load")
    problems = axe_violations(page)
    overflow = sideways_scroll(page)
    if overflow > 0:
        problems.append(f"scrolls sideways by {overflow}px")
    problems += [f"{part} scrolls sideways" for part in parts_scrolling_sideways(page)]
    return problems
