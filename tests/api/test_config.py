"""Settings that change how the app reads its requests."""
from __future__ import annotations

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
