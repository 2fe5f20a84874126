"""The Overview page: finance and admin land on it, support and payouts keep the transactions list;
it shows the seeded set's exact figures per currency, as SVG charts with names and as tables, for
the range the URL names, in the current mode only."""
from __future__ import annotations

import re
import uuid
from datetime import date, timedelta

import pytest
from babel.dates import format_date
from sqlalchemy import insert

from app.store.tables import dispute_history, disputes, settlements
from app.util import utcnow
from tests.support.overview_rows import Rows, at, seed_three_days

from .conftest import Browserless, add_user, switch_to_sandbox

SEEDED_RANGE = "/overview?from=2026-03-01&to=2026-03-03"


@pytest.fixture
def seeded(app, merchant):
    """The seeded set in the test's merchant."""
    return seed_three_days(app, merchant.merchant_id)


def _figures_row(page: str, currency: str, figure: str) -> str:
    """The text of one row of a currency's figures table, tags removed, spaces squeezed."""
    section = page.split(f'<h2 id="cur-{currency.lower()}">')[1].split("</section>")[0]
    row = re.search(rf"<tr><th scope=\"row\">{figure}</th>(.*?)</tr>", section, re.S).group(1)
    return " ".join(re.sub(r"<[^>]+>", " ", row).split())


def test_the_figures_table_shows_exact_amounts_per_currency(finance, seeded):
    page = finance.get(SEEDED_RANGE)
    assert page.status_code == 200
    assert ("Live payments and refunds, 1 Mar 2026 to 3 Mar 2026 (UTC days), compared with 26 Feb 2026 "
            "to 28 Feb 2026." in page.text)
    # The previous three days (26 to 28 Feb) captured 999.00 EUR and nothing else.
    assert _figures_row(page.text, "EUR", "Captured") == "180.05 EUR 4 -82.0 %"
    assert _figures_row(page.text, "EUR", "Refunded") == "57.50 EUR 2 new"
    assert _figures_row(page.text, "EUR", "Net") == "122.55 EUR -87.7 %"
    assert _figures_row(page.text, "EUR", "Refund rate") == "31.9 %"
    assert _figures_row(page.text, "EUR", "Payouts") == "500.00 EUR 1 new"
    assert _figures_row(page.text, "EUR", "Fees") == "not known yet"
    assert _figures_row(page.text, "EUR", "Declined") == "3 new"
    assert _figures_row(page.text, "EUR", "Expired") == "0 –"
    assert _figures_row(page.text, "JPY", "Captured") == "1,500 JPY 1 new"
    assert _figures_row(page.text, "JPY", "Net") == "1,000 JPY new"
    assert _figures_row(page.text, "KWD", "Captured") == "1.250 KWD 1 new"
    assert _figures_row(page.text, "KWD", "Refund rate") == "0.0 %"
    # Another merchant's (888.00) and the sandbox's (777.00) rows are not in the live figures.
    assert "888" not in page.text and "777" not in page.text and "GBP" not in page.text


def test_each_currency_has_a_named_daily_chart_and_a_declines_chart_with_their_tables(finance, seeded):
    page = finance.get(SEEDED_RANGE).text
    eur = page.split('<h2 id="cur-eur">')[1].split("</section>")[0]
    assert 'role="group" aria-labelledby="cur-eur-daily-title cur-eur-daily-desc"' in eur
    assert '<title id="cur-eur-daily-title">Captured and refunded EUR per day</title>' in eur
    assert ('<desc id="cur-eur-daily-desc">3 days, 1 Mar 2026 to 3 Mar 2026. Most captured: 150.00 EUR '
            'on 1 Mar. Most refunded: 50.00 EUR on 2 Mar. The table of figures by day gives every day.'
            '</desc>') in eur
    assert '<title id="cur-eur-declines-title">Declined EUR payments by reason</title>' in eur
    assert ('<desc id="cur-eur-declines-desc">3 declined payments: Insufficient Funds 2; '
            'No reason given 1.</desc>') in eur
    days = re.findall(r'<time datetime="(2026-03-0\d)">', eur)
    assert days == ["2026-03-01", "2026-03-02", "2026-03-03"]
    assert "<td>Insufficient Funds</td><td class=\"num\">2</td>" in eur
    assert "No declined KWD payments in this period." in page


def test_the_sandbox_overview_shows_only_sandbox_rows(finance, seeded):
    switch_to_sandbox(finance)
    page = finance.get(SEEDED_RANGE).text
    assert "Sandbox payments and refunds" in page
    assert _figures_row(page, "EUR", "Captured") == "777.00 EUR 1 new"
    assert "Suspected Fraud" in page and "Insufficient Funds" not in page
    assert 'id="cur-jpy"' not in page


def test_presets_are_the_last_days_up_to_today_and_the_default_is_30(finance):
    today = utcnow().date()
    for query, days in (("", 30), ("?days=7", 7), ("?days=30", 30), ("?days=90", 90)):
        page = finance.get("/overview" + query).text
        first = today - timedelta(days=days - 1)
        # Days as en-GB writes them (CLDR: "5 Sept 2026", not strftime's "5 Sep 2026").
        shown = [format_date(day, "d MMM y", locale="en_GB") for day in (first, today)]
        assert f"{shown[0]} to {shown[1]}" in page
        assert re.search(rf'href="/overview\?days={days}"\s+aria-current="page">Last {days} days', page)


@pytest.mark.parametrize("query, message", [
    ("?days=12", "Choose a period of 7, 30, 90 days"),
    ("?from=2026-03-04&to=2026-03-01", "The range&#39;s first day comes after its last day"),
    ("?from=2026-03-01", "Give both dates of a custom range (to is missing)"),
    ("?from=2026-3-1&to=2026-03-02",
     "Dates are written day/month/year, e.g. 29/10/2026 (from was &#39;2026-3-1&#39;)"),
    ("?from=2024-01-01&to=2026-03-01", "A range is at most 366 days"),
])
def test_a_range_not_understood_says_why_and_shows_the_last_30_days(finance, query, message):
    page = finance.get("/overview" + query)
    assert page.status_code == 200
    assert f'<div class="alert alert-error" role="alert">{message}. Showing the last 30 days.</div>' in page.text


def test_a_period_without_rows_says_so(finance):
    page = finance.get("/overview?from=2020-01-01&to=2020-01-31").text
    assert "Nothing in this period" in page and "<svg" not in page


@pytest.mark.parametrize("role, landing", [("finance", "/overview"), ("admin", "/overview"),
                                           ("support", "/transactions"), ("payouts", "/transactions")])
def test_finance_and_admin_land_on_the_overview_the_others_on_transactions(server, merchant, role, landing):
    client = Browserless(server.url)
    signed_in = client.login(add_user(server.app, merchant.merchant_id, role))
    assert signed_in.headers["Location"] == landing
    assert client.get("/").headers["Location"] == landing
    assert client.get("/login").headers["Location"] == landing  # already signed in
    nav = client.get("/transactions").text.split('aria-label="Main"')[1].split("</nav>")[0]
    assert ('>Overview</a>' in nav) is (landing == "/overview")
    if landing == "/overview":
        assert nav.index(">Overview<") < nav.index(">Transactions<")


@pytest.mark.parametrize("role", ["support", "payouts"])
def test_support_and_payouts_may_not_open_the_overview(dashboard, merchant, role):
    response = dashboard(merchant.merchant_id, role).get("/overview")
    assert response.status_code == 403
    assert "Your role does not allow this action." in response.text


def test_a_link_into_the_overview_survives_sign_in(server, merchant):
    client = Browserless(server.url)
    assert client.get("/overview?days=7").headers["Location"].endswith("/login?next=/overview?days%3D7")
    client.get("/login")
    response = client.post("/login?next=/overview?days%3D7",
                           {"email": add_user(server.app, merchant.merchant_id, "finance"),
                            "password": "correct horse battery staple"})
    assert response.headers["Location"] == "/overview?days=7"


def test_expired_checkouts_are_not_declines_and_fees_show_once_a_settlement_carried_them(app, finance, seeded):
    with app.extensions["paydesk.engine"].begin() as conn:
        rows = Rows(conn, seeded.merchant_id)
        rows.add("payment", "Declined", 900, "EUR", at(2), reason="Transaction Expired")
        rows.add("payment", "Declined", 900, "EUR", at(2), reason="Transaction Expired")
        conn.execute(insert(settlements).values(
            merchant_id=seeded.merchant_id, mode="live", provider="simulator",
            provider_settlement_id="st-overview", settled_on=date(2026, 3, 3), currency="EUR",
            gross_minor=18005, fees_minor=321, net_minor=17684, status="paid", fetched_at=at(3)))
    page = finance.get(SEEDED_RANGE).text
    assert _figures_row(page, "EUR", "Declined") == "3 new"
    assert _figures_row(page, "EUR", "Expired") == "2 new"
    assert _figures_row(page, "EUR", "Fees") == "3.21 EUR"
    assert _figures_row(page, "JPY", "Fees") == "not known yet"
    eur = page.split('<h2 id="cur-eur">')[1].split("</section>")[0]
    assert "Transaction Expired" not in eur  # not among the reasons of declines


def test_each_day_of_the_chart_names_its_values_for_pointer_and_keyboard(finance, seeded):
    eur = finance.get(SEEDED_RANGE).text.split('<h2 id="cur-eur">')[1].split("</section>")[0]
    days = re.findall(r'<g class="chart-day" tabindex="0" role="img" aria-label="([^"]+)">\s*<title>([^<]+)</title>', eur)
    assert days == [(words, words) for words in (
        "1 Mar 2026: captured 150.00 EUR, refunded 0.00 EUR",
        "2 Mar 2026: captured 20.05 EUR, refunded 50.00 EUR",
        "3 Mar 2026: captured 10.00 EUR, refunded 7.50 EUR")]
    assert '<text class="chart-label chart-unit" x="0" y="12">EUR</text>' in eur
    assert ">Day (UTC)</text>" in eur


def test_disputes_lost_in_the_period_are_a_figure_and_come_off_net(app, finance, seeded):
    """A dispute lost or accepted counts on the day it closed (as a refund on the day it was made);
    one still open, one won, one lost outside the range or in the sandbox does not."""
    with app.extensions["paydesk.engine"].begin() as conn:
        rows = Rows(conn, seeded.merchant_id)

        def dispute(status, amount_minor, closed_at, *, mode="live", moves=None):
            # the payment before both periods, so that only the dispute's close counts in them
            payment = rows.add("payment", "Chargeback", amount_minor, "EUR", at(-5, 9), mode=mode)
            dispute_id = conn.execute(insert(disputes).values(
                dispute_no=f"DSP-{uuid.uuid4().hex[:16].upper()}", merchant_id=seeded.merchant_id, mode=mode,
                payment_id=payment, provider="simulator", provider_dispute_id=uuid.uuid4().hex,
                amount_minor=amount_minor, currency="EUR", status=status, created_at=at(-5, 9),
                updated_at=closed_at)).inserted_primary_key[0]
            for from_status, to_status in moves or [(None, "needs_response"), ("needs_response", status)]:
                conn.execute(insert(dispute_history).values(
                    dispute_id=dispute_id, from_status=from_status, to_status=to_status, source="test",
                    at=at(-5, 9) if from_status is None else closed_at))

        dispute("lost", 2000, at(2, 8))
        dispute("accepted", 550, at(3, 23, 59))
        dispute("won", 7000, at(2))
        dispute("needs_response", 8000, at(2), moves=[(None, "needs_response")])
        dispute("lost", 9000, at(4, 0))  # the day after the range
        dispute("lost", 6000, at(2), mode="sandbox")

    page = finance.get(SEEDED_RANGE).text

    assert _figures_row(page, "EUR", "Lost to disputes") == "25.50 EUR 2 new"
    assert _figures_row(page, "EUR", "Net") == "97.05 EUR -90.3 %"  # 180.05 - 57.50 - 25.50
    assert _figures_row(page, "JPY", "Lost to disputes") == "0 JPY 0 –"
    assert "Lost to disputes: disputes lost or accepted in the period" in page
