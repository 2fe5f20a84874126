"""Settings that change how the app reads its requests and which addresses it may call."""
from __future__ import annotations

import ipaddress

from cryptography.fernet import Fernet

from app import create_app
from app.config import Config
from app.webhooks.guard import AddressGuard
from app.webhooks.settings import DeliverySettings
from tests.conftest import make_app


def test_behind_a_trusted_proxy_the_client_address_comes_from_x_forwarded_for(sqlite_url):
    app = make_app(sqlite_url, PROXY_FIX_HOPS=1)

    @app.get("/_test/address")
    def address():
        from flask import request

        return request.remote_addr

    client = app.test_client()
    assert client.get("/_test/address", headers={"X-Forwarded-For": "203.0.113.9"}).text == "203.0.113.9"
    direct = make_app(sqlite_url)
    direct.add_url_rule("/_test/address", view_func=address)
    assert direct.test_client().get("/_test/address",
                                    headers={"X-Forwarded-For": "203.0.113.9"}).text == "127.0.0.1"
    app.extensions["paydesk.engine"].dispose()
    direct.extensions["paydesk.engine"].dispose()


def test_no_network_beyond_the_public_internet_is_allowed_by_default(sqlite_url, monkeypatch):
    for name in ("WEBHOOK_ALLOWED_NETWORKS", "PROVIDER_ALLOWED_NETWORKS"):
        monkeypatch.delenv(name, raising=False)
    config = Config(DATABASE_URL=sqlite_url, SECRET_KEY="test-secret",
                    PAYDESK_ENCRYPTION_KEY=Fernet.generate_key().decode())
    app = create_app(config)
    assert (config.WEBHOOK_ALLOWED_NETWORKS, config.PROVIDER_ALLOWED_NETWORKS) == ("", "")
    assert DeliverySettings.from_config(app.config).guard == AddressGuard("WEBHOOK_ALLOWED_NETWORKS", ())
    assert app.extensions["paydesk"].providers.guard == AddressGuard("PROVIDER_ALLOWED_NETWORKS", ())
    app.extensions["paydesk.engine"].dispose()


def test_the_allowed_networks_come_from_the_environment(sqlite_url, monkeypatch):
    monkeypatch.setenv("WEBHOOK_ALLOWED_NETWORKS", "127.0.0.0/8")
    monkeypatch.setenv("PROVIDER_ALLOWED_NETWORKS", "10.20.0.0/16, ::1/128")
    app = create_app(Config(DATABASE_URL=sqlite_url, SECRET_KEY="test-secret",
                            PAYDESK_ENCRYPTION_KEY=Fernet.generate_key().decode()))
    assert DeliverySettings.from_config(app.config).guard.allowed_networks == (
        ipaddress.ip_network("127.0.0.0/8"),)
    assert app.extensions["paydesk"].providers.guard.allowed_networks == (
        ipaddress.ip_network("10.20.0.0/16"), ipaddress.ip_network("::1/128"))
    app.extensions["paydesk.engine"].dispose()
