"""Local time and formats in Chromium: the merchant's time zone (Settings), a user's own zone and
locale (Account), the CSV's local-time column, and every page walked at en-GB, en-US and de-DE
finding dates, times and amounts in that locale's one format only."""
from __future__ import annotations

import csv
import io
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import insert, update

from app.store.tables import transactions, users
from tests.dashboard.conftest import add_user

from .accessibility import visits
from .conftest import open_in_mode, sign_in
from .test_accessibility import MODES, shop  # noqa: F401 # the merchant with a sample of every page

WIDTHS = {"desktop": 1366, "phone": 390}
WINTER_MOMENT = datetime(2026, 1, 27, 9, 44, 48, tzinfo=UTC)


def _payment_at(app, merchant_id: int, created: datetime) -> str:
    """A live Captured payment of 1,234.50 EUR created at that moment; its TxNo."""
    tx_no = f"PAY-{uuid.uuid4().hex[:16].upper()}"
    with app.extensions["paydesk.engine"].begin() as conn:
        conn.execute(insert(transactions).values(
            merchant_id=merchant_id, mode="live", tx_no=tx_no, kind="payment", status="Captured",
            amount_minor=123450, currency="EUR", reference=f"winter-{tx_no}", payment_method="card",
            created_at=created, updated_at=created))
    return tx_no


def _created_text(page: Page) -> str:
    return page.locator("time").first.inner_text()


@pytest.mark.parametrize("screen", WIDTHS)
def test_the_merchants_time_zone_and_a_users_own_zone_and_locale(page: Page, server, merchant, screen):
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    tx_no = _payment_at(server.app, merchant.merchant_id, WINTER_MOMENT)
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.goto(f"{server.url}/transactions/{tx_no}")
    expect(page.locator(f'time[datetime="2026-01-27T09:44:48Z"]').first).to_have_text(
        "27 Jan 2026, 09:44:48 UTC")

    # The admin sets the merchant's zone on the Settings page.
    page.goto(f"{server.url}/settings")
    zone = page.locator("#time-zone").get_by_label("Time zone")
    zone.focus()
    zone.select_option(label="Europe/Berlin")
    page.get_by_role("button", name="Save time zone").click()
    expect(page.locator(".alert")).to_have_text(
        "Times are shown in Europe/Berlin for members who have not chosen their own.")
    page.goto(f"{server.url}/transactions/{tx_no}")
    moment = page.locator('time[datetime="2026-01-27T09:44:48Z"]').first
    expect(moment).to_have_text("27 Jan 2026, 10:44:48 CET")  # 09:44 UTC in a Berlin winter

    # A user's own zone overrides the merchant's; their locale writes dates and amounts.
    page.goto(f"{server.url}/account")
    page.get_by_label("Time zone").select_option(label="America/New York")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".alert")).to_have_text("Dates, times and amounts now follow your choice.")
    page.goto(f"{server.url}/transactions/{tx_no}")
    expect(moment).to_have_text("27 Jan 2026, 04:44:48 EST")

    page.goto(f"{server.url}/account")
    page.get_by_label("Date and number format").select_option("de-DE")
    page.get_by_role("button", name="Save", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.locator("#display-example")).to_contain_text("1.234,56 EUR")
    page.goto(f"{server.url}/transactions/{tx_no}")
    expect(moment).to_have_text("27.01.2026, 04:44:48 EST")
    expect(page.locator(".money").first).to_have_text("1.234,50 EUR")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the payment's page scrolls sideways by {overflow}px on {screen}"


@pytest.mark.parametrize("screen", WIDTHS)
def test_the_csv_export_adds_a_local_time_column_when_ticked(page: Page, server, merchant, screen):
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    tx_no = _payment_at(server.app, merchant.merchant_id, WINTER_MOMENT)
    email = add_user(server.app, merchant.merchant_id, "support")
    with server.app.extensions["paydesk.engine"].begin() as conn:
        conn.execute(update(users).where(users.c.email == email).values(time_zone="Europe/Berlin"))
    sign_in(page, server.url, email)
    search = page.get_by_label("Search", exact=True)
    search.fill(tx_no)
    search.press("Enter")
    expect(page.locator("#results")).to_contain_text("1 transaction")
    page.get_by_label("Add a Europe/Berlin time column").check()
    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert rows[0][0] == "Created (UTC)" and rows[0][-1] == "Created (Europe/Berlin)"
    assert [(r[0], r[1], r[4], r[-1]) for r in rows[1:]] == [
        ("2026-01-27 09:44:48", tx_no, "1234.50", "2026-01-27 10:44:48+01:00")]


# What each locale writes (Babel's medium date, medium time and the zone's abbreviation; the amount
# with the locale's signs and the ISO code), and the typed-day pattern its date fields' hints show.
MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)"
ZONE = r"(?:[A-Z]{3,5}|[+-]\d{2,4})"
LOCALE_FORMATS = {
    "en-GB": {"date": rf"\d{{1,2}} {MONTH} \d{{4}}", "time": r"\d{2}:\d{2}:\d{2}",
              "typed": r"\d{2}/\d{2}/\d{4}", "amount": r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?"},
    "en-US": {"date": rf"{MONTH} \d{{1,2}}, \d{{4}}", "time": r"\d{1,2}:\d{2}:\d{2}\s(?:AM|PM)",
              "typed": r"\d{1,2}/\d{1,2}/\d{4}", "amount": r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?"},
    "de-DE": {"date": r"\d{2}\.\d{2}\.\d{4}", "time": r"\d{2}:\d{2}:\d{2}",
              "typed": r"\d{2}\.\d{2}\.\d{4}", "amount": r"-?\d{1,3}(?:\.\d{3})*(?:,\d+)?"},
}
# Anything that looks like a date or an amount in any of the formats people use.
ANY_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?|\d{1,2}[./]\d{1,2}[./]\d{2,4}"
    rf"|\d{{1,2}}\.? {MONTH}\.? \d{{4}}|{MONTH} \d{{1,2}}, \d{{4}}"
    r"|\d{1,2}\.? (?:Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember) \d{4}")
ANY_TIME = re.compile(r"(?<![\d:.])\d{1,2}:\d{2}(?::\d{2})?(?!\d)(?:\s?(?:AM|PM))?(?: ?[A-Z]{3,5}\b| ?[+-]\d{2,4})?")
ANY_AMOUNT = re.compile(r"(?<![\w.,])(-?\d[\d.,\u00a0\u202f']*\d|\d) (EUR|USD|NGN|GBP|JPY|KWD|KES|GHS|ZAR)\b")
PAGE_TEXT = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const style = document.createElement('style');
  // Left out: raw bodies and headers (the API's UTC, as sent) and error messages quoting what was typed.
  style.textContent = 'pre, code, .mono, .alert-error { display: none !important }';
  document.head.appendChild(style);
  const hints = [...document.querySelectorAll('.hint')].map(e => e.innerText);
  const text = document.body.innerText;
  style.remove();
  return {text, hints};
}"""


def _around(text: str, match: re.Match) -> str:
    """Where the page wrote it, for the failure's message (empty for a short text: the tests' own)."""
    if len(text) < 200:
        return ""
    return " in " + repr(text[max(0, match.start() - 40):match.end() + 40])


def foreign_formats(text: str, hints: list[str], locale: str) -> list[str]:
    """Every date, time or amount in the page's text that is not written the locale's way."""
    formats = LOCALE_FORMATS[locale]
    found = []
    for match in ANY_DATE.finditer(text):
        typed_in_hint = re.fullmatch(formats["typed"], match.group()) and any(match.group() in h for h in hints)
        if not re.fullmatch(formats["date"], match.group()) and not typed_in_hint:
            found.append(f"date {match.group()!r}{_around(text, match)}")
    for match in ANY_TIME.finditer(text):
        clock = match.group()
        if not re.fullmatch(rf"{formats['time']} {ZONE}", clock):
            found.append(f"time {clock!r}{_around(text, match)}")
    for match in ANY_AMOUNT.finditer(text):
        if not re.fullmatch(formats["amount"], match.group(1)):
            found.append(f"amount {match.group()!r}{_around(text, match)}")
    return found


@pytest.mark.parametrize("locale", LOCALE_FORMATS)
def test_every_page_writes_dates_and_amounts_in_the_locales_one_format(browser: Browser, server, shop,  # noqa: F811
                                                                       locale):
    email = add_user(server.app, shop.merchant.merchant_id, "admin")
    with server.app.extensions["paydesk.engine"].begin() as conn:
        conn.execute(update(users).where(users.c.email == email).values(
            locale=locale, time_zone="Europe/Berlin"))
    # bypass_csp: the walk hides raw bodies with a style of its own, which the pages' CSP refuses.
    context = browser.new_context(viewport={"width": 1366, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        sign_in(page, server.url, email)
        problems, dates_seen, amounts_seen = [], 0, 0
        for mode in MODES:
            for visit in visits(shop.samples[mode]):
                if "admin" not in visit.roles:
                    continue
                open_in_mode(page, server.url, visit.path, mode)
                if visit.then:
                    visit.then(page)
                shown = page.evaluate(PAGE_TEXT)
                dates_seen += len(ANY_DATE.findall(shown["text"]))
                amounts_seen += len(ANY_AMOUNT.findall(shown["text"]))
                problems += [f"{mode} {visit.name}: {problem}"
                             for problem in foreign_formats(shown["text"], shown["hints"], locale)]
    finally:
        context.close()
    assert not problems, "\n".join(problems)
    assert dates_seen > 50 and amounts_seen > 50, (dates_seen, amounts_seen)  # the walk saw them


def test_the_format_check_finds_another_locales_formats():
    """The walk's check itself: each locale's text passes its own check and fails the others'."""
    samples = {"en-GB": "27 Jan 2026, 10:44:48 CET · 1,234.50 EUR",
               "en-US": "Jan 27, 2026, 10:44:48\u202fAM CET · 1,234.50 EUR",
               "de-DE": "27.01.2026, 10:44:48 CET · 1.234,50 EUR"}
    for locale, text in samples.items():
        assert foreign_formats(text, [], locale) == []
        for other in set(samples) - {locale}:
            assert foreign_formats(text, [], other), (locale, other)
    assert foreign_formats("2026-11-27 09:44:48 UTC", [], "en-GB") == ["date '2026-11-27 09:44:48'"]
    assert foreign_formats("at 9:44 on 27/01/2026", [], "en-GB") == ["date '27/01/2026'", "time '9:44'"]
