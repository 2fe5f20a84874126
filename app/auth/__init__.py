"""Dashboard sign-in: users and roles, the live/sandbox switch, rate limits on failed logins
(sign-in's own in app/auth/throttle.py; Flask-Limiter for the dashboard's password change)."""
from __future__ import annotations

from flask import Blueprint, Flask
from flask.sessions import SecureCookieSessionInterface
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from app.web import is_api_path

from .users import login_manager

auth = Blueprint("auth", __name__)
# No default limits: only views decorated with @limiter.limit are limited (the dashboard's
# password change), and they check their limits themselves.
limiter = Limiter(key_func=get_remote_address)
# The blueprints whose views are limited: the only requests the limiter's hooks run for.
LIMITED_BLUEPRINTS = ("dashboard",)


class DashboardSessions(SecureCookieSessionInterface):
    """Signed-cookie sessions for the dashboard; API calls, authenticated by bearer token, get none.

    Opening and saving a session costs an API request a tenth of a millisecond for nothing.
    """

    def open_session(self, app, request):
        if is_api_path(request.path):
            return None  # Flask substitutes a null session, never saved
        return super().open_session(app, request)


def init_auth(app: Flask) -> None:
    """Bind flask-login and the rate limiter to the app and register the sign-in pages."""
    app.session_interface = DashboardSessions()
    login_manager.init_app(app)
    _hooks_for_limited_blueprints_only(app, limiter.init_app)
    app.register_blueprint(auth)


def _hooks_for_limited_blueprints_only(app: Flask, init_app) -> None:
    """Run init_app, and move the request hooks it registers for every request to the
    LIMITED_BLUEPRINTS' requests. Flask-Limiter hooks itself into every request (its
    bookkeeping costs an API request a tenth of a millisecond); elsewhere there is nothing
    for it to limit."""
    registries = (app.before_request_funcs, app.after_request_funcs, app.teardown_request_funcs)
    before = [list(registry.get(None, ())) for registry in registries]
    init_app(app)
    for registry, earlier in zip(registries, before):
        added = [hook for hook in registry.get(None, ()) if not any(hook is old for old in earlier)]
        registry[None] = earlier
        for name in LIMITED_BLUEPRINTS:
            registry.setdefault(name, []).extend(added)


from . import routes  # noqa: E402,F401  (views attach themselves to the blueprint)
