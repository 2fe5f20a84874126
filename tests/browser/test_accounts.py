"""Accounts in a browser: a session ended in one browser signs the other out, two-factor
enrolment and sign-in, an invitation followed to the first sign-in, a password change."""
from __future__ import annotations

import logging
import re
import uuid

import pyotp
from playwright.sync_api import Browser, Page, expect

from tests.dashboard.conftest import PASSWORD, add_user

from .conftest import sign_in

NEW_PASSWORD = "a fresh passphrase today"


def test_a_session_ended_in_one_browser_is_signed_out_in_the_other(browser: Browser, server, merchant):
    email = add_user(server.app, merchant.merchant_id, "finance")
    office, laptop = browser.new_context(), browser.new_context(user_agent="Laptop browser 1.0")
    try:
        here, there = office.new_page(), laptop.new_page()
        sign_in(here, server.url, email)
        sign_in(there, server.url, email)
        here.get_by_role("link", name=email).click()
        expect(here).to_have_title("Your account · Paydesk")
        here.get_by_role("link", name="Your sessions").click()
        row = here.get_by_role("row", name=re.compile("Laptop browser 1.0"))
        expect(here.get_by_role("row", name=re.compile("this session"))).to_have_count(1)
        row.get_by_role("button", name=re.compile("^End")).click()
        expect(here.locator(".alert")).to_have_text(
            "The session is ended: it is signed out on its next request.")
        expect(here.get_by_role("row", name=re.compile("Laptop browser 1.0"))).to_have_count(0)

        there.reload()
        expect(there).to_have_title("Sign in · Paydesk")
        here.reload()
        expect(here).to_have_title("Your sessions · Paydesk")  # the one that ended it stays
    finally:
        office.close()
        laptop.close()


def test_enrol_in_two_factor_then_sign_in_with_a_code(page: Page, server, merchant):
    email = add_user(server.app, merchant.merchant_id, "support")
    sign_in(page, server.url, email)
    page.goto(f"{server.url}/account")
    page.get_by_role("link", name="Set up two-factor sign-in").click()
    qr = page.get_by_role("img", name="QR code for your authenticator app")
    expect(qr).to_be_visible()
    assert qr.evaluate("img => img.complete && img.naturalWidth > 0")  # the CSP lets the data: URI load
    totp = pyotp.TOTP(page.locator("#totp-secret").inner_text())
    page.get_by_label("Your password").fill("not my password")
    page.get_by_label("Code", exact=True).fill(totp.now())
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_text("Your current password is not correct.")).to_be_visible()
    page.get_by_label("Your password").fill(PASSWORD)
    page.get_by_label("Code", exact=True).fill("000000" if totp.now() != "000000" else "111111")
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_role("alert")).to_contain_text("That code is not right.")
    page.get_by_label("Your password").fill(PASSWORD)  # a password field is never shown again
    page.get_by_label("Code", exact=True).fill(totp.now())
    page.get_by_role("button", name="Turn on").click()
    expect(page).to_have_title("Recovery codes · Paydesk")
    codes = page.get_by_role("list", name="Recovery codes").get_by_role("listitem")
    expect(codes).to_have_count(10)
    recovery = codes.first.inner_text()

    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_title("Two-factor sign-in · Paydesk")
    page.get_by_label("Code", exact=True).fill(recovery)
    page.get_by_role("button", name="Verify").click()
    expect(page).to_have_title("Transactions · Paydesk")
    page.goto(f"{server.url}/account")
    expect(page.get_by_text("9 of 10 recovery codes unused.")).to_be_visible()


def test_an_invited_user_chooses_a_password_and_signs_in(browser: Browser, page: Page, server, merchant,
                                                         caplog):
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    page.get_by_role("link", name="Settings").click()
    expect(page).to_have_title("Settings · Paydesk")
    page.wait_for_load_state("load")
    email = f"newcomer-{uuid.uuid4().hex[:8]}@shop.test"
    page.get_by_label("E-mail", exact=True).fill(email)
    page.get_by_label("Role", exact=True).select_option("finance")
    with caplog.at_level(logging.INFO, logger="paydesk.mail"):
        page.get_by_role("button", name="Invite user").click()
        expect(page.get_by_text(f"Invitation sent to {email}.")).to_be_visible()
    # Without SMTP the invitation goes to the server log (the answer shows no link: it must not
    # differ from the one an address of another merchant's user gets).
    [logged] = [r.getMessage() for r in caplog.records if email in r.getMessage()]
    link = re.search(r"(https?://\S+/password/\S+)", logged).group(1)

    newcomer = browser.new_context()
    try:
        theirs = newcomer.new_page()
        theirs.goto(link)
        expect(theirs.get_by_role("heading", name="Choose your password")).to_be_visible()
        theirs.get_by_label("New password", exact=True).fill("password1234")
        theirs.get_by_label("New password again").fill("password1234")
        theirs.get_by_role("button", name="Set password").click()
        expect(theirs.get_by_text("This is a very common password.")).to_be_visible()
        theirs.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
        theirs.get_by_label("New password again").fill(NEW_PASSWORD)
        theirs.get_by_role("button", name="Set password").click()
        expect(theirs.locator(".alert")).to_have_text("Your password is set. Sign in with it.")
        theirs.get_by_label("E-mail").fill(email)
        theirs.get_by_label("Password").fill(NEW_PASSWORD)
        theirs.get_by_role("button", name="Sign in").click()
        expect(theirs).to_have_title("Overview · Paydesk")
        theirs.goto(link)
        expect(theirs.get_by_role("alert")).to_have_text(
            "This link has expired or was already used. Ask your admin for a new one.")
    finally:
        newcomer.close()


def test_change_the_own_password(page: Page, server, merchant):
    email = add_user(server.app, merchant.merchant_id, "payouts")
    sign_in(page, server.url, email)
    page.get_by_role("link", name=email).click()
    page.get_by_label("Current password").fill("not my password")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Your current password is not correct.")).to_be_visible()
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.locator(".alert")).to_have_text(
        "Your password is changed. Your other sessions are signed out.")
