"""What every blueprint shares about a request: the app's services, JSON answers, and which URLs are the API's."""
from __future__ import annotations

from argon2 import PasswordHasher
from flask import Flask, Response, current_app

from app.payments.deps import Deps
from app.util import dumps

API_PREFIX = "/api/v1"
_DEPS_KEY = "paydesk"
_HASHER_KEY = "paydesk.argon2"


def install_deps(app: Flask, deps: Deps) -> None:
    """Give the app its services' dependencies (units of work, providers, clock)."""
    app.extensions[_DEPS_KEY] = deps


def deps(app: Flask | None = None) -> Deps:
    """The services' dependencies of this app (the current one inside a request or command)."""
    return (app or current_app).extensions[_DEPS_KEY]


def install_password_hasher(app: Flask, hasher: PasswordHasher) -> None:
    """Give the app the hasher of its dashboard passwords."""
    app.extensions[_HASHER_KEY] = hasher


def password_hasher(app: Flask | None = None) -> PasswordHasher:
    """The hasher of dashboard passwords of this app (the current one inside a request or command)."""
    return (app or current_app).extensions[_HASHER_KEY]


def json_response(body, status: int = 200, headers: dict | None = None) -> Response:
    """A JSON response written with exact amounts."""
    response = Response(dumps(body), status=status, mimetype="application/json")
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def is_api_path(path: str) -> bool:
    """The path is under /api/v1 (known before, or without, a matching route)."""
    return f"{path}/".startswith(f"{API_PREFIX}/")
