"""The Overview in Chromium: finance lands on it, picks a period, sees each currency's charts and
tables, on a desktop and on a phone without sideways scrolling. Set DASHBOARD_SCREENSHOTS=<dir>
to keep screenshots for review."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import payment_body
from tests.dashboard.conftest import SANDBOX, add_user
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

    # Days are typed as the user's locale writes them (en-GB: day/month/year), as the hint says.
    expect(page.get_by_text("UTC days: day/month/year, e.g. 29/10/2026")).to_be_visible()
    page.get_by_label("From", exact=True).fill("01/03/2026")
    page.get_by_label("To", exact=True).fill("03/03/2026")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(f"{server.url}/overview?from=01%2F03%2F2026&to=03%2F03%2F2026")
    page.wait_for_load_state("load")  # the layout below is the stylesheet's, once it applies
    expect(page.get_by_text("Live payments and refunds, 1 Mar 2026 to 3 Mar 2026 (UTC days), compared "
                            "with 26 Feb 2026 to 28 Feb 2026.")).to_be_visible()

    eur = page.get_by_role("region", name="EUR")
    expect(eur.get_by_role("group", name="Captured and refunded EUR per day")).to_be_visible()
    expect(eur.get_by_role("img", name="Declined EUR payments by reason")).to_be_visible()
    figures = eur.get_by_role("table", name="EUR figures, 1 Mar 2026 to 3 Mar 2026")
    expect(figures).to_be_visible()
    expect(figures.get_by_role("row", name="Captured")).to_have_text("Captured180.05 EUR4-82.0 %")
    expect(figures.get_by_role("row", name="Net")).to_have_text("Net122.55 EUR-87.7 %")
    expect(figures.get_by_role("row", name="Payouts")).to_have_text("Payouts500.00 EUR1new")
    expect(figures.get_by_role("row", name="Fees")).to_have_text("Feesnot known yet")
    expect(figures.get_by_role("row", name="Expired")).to_have_text("Expired0–")
    expect(eur.get_by_role("row", name="Insufficient Funds")).to_have_text("Insufficient Funds2")
    expect(page.get_by_role("region", name="JPY").get_by_role("row", name="Captured")).to_have_text(
        "Captured1,500 JPY1new")
    # Currencies side by side on a desktop, one under the other on a phone.
    boxes = [page.get_by_role("region", name=c).bounding_box() for c in ("EUR", "JPY")]
    assert (boxes[0]["y"] == boxes[1]["y"]) == (screen == "desktop"), boxes

    # A day's values show while it has the keyboard's focus, and while the pointer rests on it.
    first = eur.get_by_role("img", name="1 Mar 2026: captured 150.00 EUR, refunded 0.00 EUR")
    second = eur.get_by_role("img", name="2 Mar 2026: captured 20.05 EUR, refunded 50.00 EUR")
    expect(second.locator(".chart-tip")).to_be_hidden()
    first.focus()
    page.keyboard.press("Tab")
    expect(second).to_be_focused()
    expect(second.locator(".chart-tip")).to_be_visible()
    expect(second.locator(".chart-tip")).to_contain_text("Refunded 50.00 EUR")
    page.keyboard.press("Tab")
    expect(second.locator(".chart-tip")).to_be_hidden()
    first.locator(".chart-column").hover()
    expect(first.locator(".chart-tip")).to_be_visible()

    by_day = eur.locator("details")
    by_day.locator("summary", has_text="Figures by day").click()
    expect(by_day.get_by_role("row", name="2 Mar 2026")).to_have_text(
        re.compile(r"^2 Mar 2026\s*20\.05 EUR\s*50\.00 EUR\s*$"))
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


@pytest.mark.parametrize("screen", WIDTHS)
def test_one_currency_reads_its_figures_beside_its_chart_on_a_wide_screen(page: Page, server, merchant,
                                                                           sandbox, screen):
    """A merchant with one currency: its figures and daily chart side by side on a desktop (the
    table no longer stretched over a chart in its left third), one under the other on a phone."""
    tx_no = sandbox.post("/transactions", payment_body()).json()["transactionId"]
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "finance"))
    page.goto(f"{server.url}{SANDBOX}/overview")
    page.wait_for_load_state("load")
    [currency] = page.locator(".overview-currency").all()
    figures = currency.locator(".overview-figures").bounding_box()
    chart = currency.locator(".overview-daily").bounding_box()
    if screen == "desktop":
        assert chart["x"] >= figures["x"] + figures["width"] and chart["y"] < figures["y"] + figures["height"]
    else:
        assert chart["y"] >= figures["y"] + figures["height"]
