"""The test run's network: what its apps may reach, and fixtures that record and steer connections."""
from __future__ import annotations

import socket

import pytest
import urllib3.util.connection

# The test run's receivers, inboxes and fake providers all listen on loopback; the application
# itself allows no address beyond the public Internet, so the suite says what it needs.
LOOPBACK = "127.0.0.0/8,::1/128"
LOOPBACK_ALLOWED = {"WEBHOOK_ALLOWED_NETWORKS": LOOPBACK, "PROVIDER_ALLOWED_NETWORKS": LOOPBACK}


@pytest.fixture
def connections(monkeypatch):
    """Every address a guarded request opens a socket to (the real connect still happens)."""
    opened = []
    real = urllib3.util.connection.create_connection

    def recording(address, *args, **kwargs):
        opened.append(address[0])
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", recording)
    return opened


@pytest.fixture
def fake_dns(monkeypatch):
    """Names that resolve as the test says (an address, or a list of them in order); everything
    else resolves normally."""
    names: dict[str, str | list[str]] = {}
    real = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):
        if host in names:
            addresses = names[host] if isinstance(names[host], list) else [names[host]]
            return [found for address in addresses for found in real(address, port, *args, **kwargs)]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return names
