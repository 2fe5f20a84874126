"""PASSWORD_HASH_PROFILE: production hashes with the library's current Argon2id parameters; only
the test suite names the cheap ones; a misspelt profile stops the app from starting."""
from __future__ import annotations

import pytest
from argon2 import extract_parameters, profiles

from app.config import Config
from app.web import password_hasher
from tests.conftest import make_app


def test_the_default_profile_hashes_with_the_librarys_current_parameters(sqlite_url, monkeypatch):
    monkeypatch.delenv("PASSWORD_HASH_PROFILE", raising=False)
    assert Config().PASSWORD_HASH_PROFILE == "standard"
    app = make_app(sqlite_url, PASSWORD_HASH_PROFILE=Config().PASSWORD_HASH_PROFILE)
    stored = password_hasher(app).hash("correct horse battery staple")
    assert extract_parameters(stored) == profiles.get_default_parameters()
    app.extensions["paydesk.engine"].dispose()


def test_the_fast_profile_is_the_librarys_cheapest(sqlite_url):
    app = make_app(sqlite_url, PASSWORD_HASH_PROFILE="fast")
    stored = password_hasher(app).hash("correct horse battery staple")
    assert extract_parameters(stored) == profiles.CHEAPEST
    app.extensions["paydesk.engine"].dispose()


def test_an_unknown_profile_stops_the_app(sqlite_url):
    with pytest.raises(ValueError, match="PASSWORD_HASH_PROFILE must be one of standard, fast, not 'quick'"):
        make_app(sqlite_url, PASSWORD_HASH_PROFILE="quick")
