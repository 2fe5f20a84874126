"""The Overview in Chromium: finance lands on it, picks a period, sees each currency's charts and
tables, on a desktop and on a phone without sideways scrolling. Set DASHBOARD_SCREENSHOTS=<dir>
to keep screenshots for review."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard.conftest import add_user
from tests.support.overview_rows import seed_three_days

from .conftest import sign_in

WIDTHS = {"desktop": 1366, "phone": 390}


def _screenshot(page: Page, name: str) -> None:
    folder = os.environ.get("DASHBOARD_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("screen", WIDTHS)
def test_finance_lands_on_the_overview_and_reads_a_custom_period(page: Page, server, merchant, screen):
    seed_three_days(server.app, merchant.merchant_id)
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    expect(page).to_have_title("Overview · Paydesk")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Overview")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("link", name="Last 30 days")).to_have_attribute("aria-current", "page")

    page.get_by_label("From (UTC)").fill("2026-03-01")
    page.get_by_label("To (UTC)").fill("2026-03-03")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(f"{server.url}/overview?from=2026-03-01&to=2026-03-03")
    expect(page.get_by_text("Live payments and refunds, 1 Mar 2026 to 3 Mar 2026 (UTC days).")).to_be_visible()

    eur = page.get_by_role("region", name="EUR")
    expect(eur.get_by_role("img", name="Captured and refunded EUR per day")).to_be_visible()
    expect(eur.get_by_role("img", name="Declined EUR payments by reason")).to_be_visible()
    figures = eur.get_by_role("table", name="EUR figures, 1 Mar 2026 to 3 Mar 2026")
    expect(figures).to_be_visible()
    expect(figures.get_by_role("row", name="Captured")).to_have_text("Captured180.05 EUR4")
    expect(figures.get_by_role("row", name="Net")).to_have_text("Net122.55 EUR")
    expect(eur.get_by_role("row", name="Insufficient Funds")).to_have_text("Insufficient Funds2")
    expect(page.get_by_role("region", name="JPY").get_by_role("row", name="Captured")).to_have_text(
        "Captured1,500 JPY1")

    by_day = eur.locator("details")
    by_day.locator("summary", has_text="Figures by day").click()
    expect(by_day.get_by_role("row", name="2026-03-02")).to_have_text(
        re.compile(r"^2026-03-02\s*20\.05 EUR\s*50\.00 EUR\s*$"))
    _screenshot(page, f"overview-{screen}")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the Overview scrolls sideways by {overflow}px on {screen}"


def test_a_preset_is_a_shareable_link(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.get_by_role("link", name="Last 7 days").click()
    expect(page).to_have_url(f"{server.url}/overview?days=7")
    expect(page.get_by_role("link", name="Last 7 days")).to_have_attribute("aria-current", "page")
    expect(page.get_by_text("Nothing in this period")).to_be_visible()


def test_support_lands_on_transactions_without_an_overview_link(page: Page, server, merchant):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "support"))
    expect(page).to_have_title("Transactions · Paydesk")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview")).to_have_count(0)
