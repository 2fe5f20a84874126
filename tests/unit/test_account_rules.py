"""Account rules without the web or a database: TOTP steps and their window, recovery codes,
passwords, how the sessions list names a browser."""
from __future__ import annotations

from datetime import UTC, datetime

import pyotp
import pytest

from app.auth.passwords import password_problem
from app.auth.two_factor import (
    hash_recovery_code,
    looks_like_recovery_code,
    matching_step,
    new_recovery_codes,
    new_secret,
)
from app.dashboard.account import browser_name

NOW = 1_800_000_015.0  # 15 s into a 30-second step


def test_a_code_matches_its_own_step_and_the_steps_beside_it_only():
    secret = new_secret()
    totp = pyotp.TOTP(secret)
    step = totp.timecode(datetime.fromtimestamp(NOW, UTC))
    for offset in (-1, 0, 1):
        assert matching_step(secret, totp.generate_otp(step + offset), NOW) == step + offset
    for offset in (-2, 2):
        assert matching_step(secret, totp.generate_otp(step + offset), NOW) is None


@pytest.mark.parametrize("code", ["", "12345", "1234567", "abcdef", "12 34 5x"])
def test_what_is_not_six_digits_is_no_code(code):
    assert matching_step(new_secret(), code, NOW) is None


def test_recovery_codes_are_ten_different_codes_hashed_whatever_their_spelling():
    codes = new_recovery_codes()
    assert len(set(codes)) == 10
    assert all(looks_like_recovery_code(code) for code in codes)
    assert hash_recovery_code("abcd-efgh-jkmn") == hash_recovery_code(" ABCD EFGH JKMN ")
    assert hash_recovery_code("abcd-efgh-jkmn") != hash_recovery_code("abcd-efgh-jkmp")
    assert not looks_like_recovery_code("123456")


@pytest.mark.parametrize("password, problem", [
    ("eleven char", "Use 12 to 1024 characters"),
    ("x" * 1025, "Use 12 to 1024 characters"),
    ("password1234", "This is a very common password. Choose a longer phrase of uncommon words."),
    ("qwertyuiop12", "This is similar to a commonly used password. Choose a longer phrase of uncommon words."),
    ("correct horse battery staple", None),
    # Longer than the 72 characters zxcvbn reads (it raised on them once: a 500 on the form).
    ("correct horse battery staple " * 4, None),
    ("correct horse battery staple " + "x" * 995, None),  # 1024, the longest allowed
    ("a" * 73, "Repeats like \"aaa\" are easy to guess. Choose a longer phrase of uncommon words."),
])
def test_passwords_must_be_long_and_uncommon(password, problem):
    assert password_problem(password) == problem


def test_a_password_made_of_the_own_e_mail_is_refused():
    email = "zebulon.quagga@example.test"
    known = (email, "zebulon", "quagga", "example")
    for password in (email, "quaggazebulon"):
        assert password_problem(password, known=known) == (
            "This password is easy to guess. Choose a longer phrase of uncommon words.")
    assert password_problem("quaggazebulon") is None  # not guessable for another account


@pytest.mark.parametrize("agent, name", [
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
     "Chrome on Linux"),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36 Edg/124.0",
     "Edge on Windows"),
    ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Version/17.4 "
     "Mobile/15E148 Safari/604.1", "Safari on iPhone"),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14.4; rv:125.0) Gecko/20100101 Firefox/125.0",
     "Firefox on macOS"),
    ("curl/8.5.0", "curl/8.5.0"),
    (None, "Unknown browser"),
])
def test_the_sessions_list_names_well_known_browsers(agent, name):
    assert browser_name(agent) == name
