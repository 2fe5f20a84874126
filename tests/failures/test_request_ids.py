"""Every response names its request: X-Request-Id, the caller's own when it is a sane token."""
from __future__ import annotations

import re

import pytest

from .conftest import bearer

GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.mark.parametrize("path", [
    "/healthz", "/login", "/static/css/app.css", "/api/v1/openapi.json", "/api/v1/no-such-endpoint",
    "/transactions",  # redirect to the login page
])
def test_every_response_carries_a_request_id(client, sandbox_token, path):
    with client.get(path, headers=bearer(sandbox_token)) as response:  # a file answer is streamed
        assert GENERATED.fullmatch(response.headers["X-Request-Id"]), response.headers


def test_each_request_gets_its_own_id(client):
    ids = {client.get("/healthz").headers["X-Request-Id"] for _ in range(5)}
    assert len(ids) == 5


@pytest.mark.parametrize("offered", ["lb-7f3a.9_Z", "a" * 64, "0"])
def test_a_sane_incoming_request_id_is_kept(client, offered):
    assert client.get("/healthz", headers={"X-Request-Id": offered}).headers["X-Request-Id"] == offered


@pytest.mark.parametrize("offered", [
    "", "a" * 65, "two words", "quote\"", "caf\u00e9", "id;drop", "../x/y", "tab\tbed",
])
def test_any_other_incoming_request_id_is_replaced(client, offered):
    answered = client.get("/healthz", headers={"X-Request-Id": offered}).headers["X-Request-Id"]
    assert GENERATED.fullmatch(answered)
