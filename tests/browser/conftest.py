"""Browser tests: Debian's Chromium driven by pytest-playwright against a live Paydesk.

They run on SQLite only, on a database of their own: SQLite is what `make run` gives a new
user, the storage rules are tested on both databases elsewhere, and a database of their own
lets the webhook test deliver every due event without touching other tests' events.
"""
from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from app.cli import upgrade_database
from app.dashboard.modes import PREFIXES
from app.payments.model import Mode
from tests.conftest import make_app
from tests.dashboard.conftest import PASSWORD, SANDBOX
from tests.support.servers import ThreadedServer, free_port

CHROMIUM = "/usr/bin/chromium"
LANDING_TITLES = re.compile(r"^(Overview|Transactions) · Paydesk$")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Playwright cannot download its own browser here: use Debian's Chromium."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True,
            "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def base_url():
    """Pages are opened with full URLs; this also replaces pytest-playwright's fallback fixture,
    a method fixture that newer pytest warns about (and warnings are errors here)."""
    return None


# BROWSER_LATENCY_MS=500 delays every request of the tests' pages by that much, uncached: the
# stylesheet and htmx then arrive well after the page's HTML, as they may on a loaded machine, so
# a test that acts before the page has loaded fails every time instead of now and then (how the
# waits for the load event in the helpers below were found; docs/testing.md).
LATENCY_MS = int(os.environ.get("BROWSER_LATENCY_MS", "0"))


def slow_down(page: Page) -> None:
    """Give the page BROWSER_LATENCY_MS of latency on every request (nothing when unset)."""
    if LATENCY_MS:
        network = page.context.new_cdp_session(page)
        network.send("Network.enable")
        network.send("Network.setCacheDisabled", {"cacheDisabled": True})
        network.send("Network.emulateNetworkConditions", {"offline": False, "latency": LATENCY_MS,
                                                          "downloadThroughput": -1, "uploadThroughput": -1})


@pytest.fixture(autouse=True)
def slow_network(request):
    """Each test's `page` slowed down as BROWSER_LATENCY_MS says (pages of contexts a test makes
    itself: `context.on("page", slow_down)`)."""
    if LATENCY_MS and "page" in request.fixturenames:
        slow_down(request.getfixturevalue("page"))


@pytest.fixture(scope="package")
def server(tmp_path_factory):
    """Paydesk over HTTP on a SQLite database only the browser tests use."""
    url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'paydesk.db'}"
    upgrade_database(url)
    port = free_port()
    app = make_app(url, port)
    with ThreadedServer(app, port) as running:
        running.app = app
        yield running
    if "paydesk.webhooks" in app.extensions:
        app.extensions["paydesk.webhooks"].close()
    app.extensions["paydesk.engine"].dispose()


def sign_in(page: Page, base_url: str, email: str) -> None:
    """Sign in through the form and wait for the landing page: the Overview (finance, admin) or
    the transactions list (support, payouts), loaded: htmx binds its handlers on the load event."""
    page.goto(f"{base_url}/login")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_title(LANDING_TITLES)
    page.wait_for_load_state("load")


def open_new_payout(page: Page) -> None:
    """Follow the New payout link and wait for the page's load event: htmx (a deferred script)
    binds the form's change handlers only then, and a method chosen earlier would not be sent."""
    page.get_by_role("link", name="New payout").first.click()
    expect(page).to_have_title("New payout · Paydesk")
    page.wait_for_load_state("load")


def to_sandbox(page: Page) -> None:
    """Follow the live/sandbox switch's Sandbox link: the same page, at its sandbox URL (/test/...)."""
    page.get_by_role("navigation", name="Data shown").get_by_role("link", name="Sandbox").click()
    expect(page.get_by_role("note")).to_contain_text("Sandbox: test data only")
    assert page.url.split("/", 3)[3].startswith(SANDBOX.lstrip("/") + "/"), page.url
    page.wait_for_load_state("load")


def to_transactions(page: Page) -> None:
    """Open the transactions list from the main navigation (finance and admin land on the Overview),
    loaded: each row links its transaction twice, one link for wide screens and one for narrow,
    and which is visible is known only once the stylesheet applies. Judged before that, both
    are, and a click stays on the narrow one the stylesheet then hides (seen under load)."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Transactions").click()
    expect(page).to_have_title(re.compile(r"^Transactions.* · Paydesk$"))
    page.wait_for_load_state("load")


def to_webhooks(page: Page) -> None:
    """Open the webhook deliveries from the main navigation, loaded: a Resend clicked before htmx
    has bound it would post the form the plain way (seen under load)."""
    page.get_by_role("link", name="Webhooks").click()
    expect(page).to_have_title("Webhook deliveries · Paydesk")
    page.wait_for_load_state("load")


def htmx_settled(page: Page) -> None:
    """Wait until htmx has finished its swaps: content it swapped in gets its hx- behaviour only
    when it settles (about 20 ms later), and a change made before that would be missed."""
    expect(page.locator(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added")).to_have_count(0)


def open_in_mode(page: Page, base_url: str, path: str, mode: str) -> None:
    """Open a dashboard path ("/audit") in that mode ("live" or "sandbox"), at the URL the mode
    gives it (sandbox pages start /test/, app/dashboard/modes.py)."""
    page.goto(base_url + PREFIXES[Mode(mode)] + path)
