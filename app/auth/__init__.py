"""Dashboard sign-in: users and roles, the live/sandbox switch, rate limits on failed logins."""
from __future__ import annotations

from flask import Blueprint, Flask, request
from flask.sessions import SecureCookieSessionInterface
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from app.web import is_api_path

from .users import login_manager

auth = Blueprint("auth", __name__)
# No default limits: only the login form is limited here; the API is not touched.
limiter = Limiter(key_func=get_remote_address)


@limiter.request_filter
def _outside_the_dashboard() -> bool:
    """API, inbox and checkout requests skip the limiter's per-request bookkeeping altogether."""
    return request.blueprint in ("api", "inbox", "checkout")


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
    limiter.init_app(app)
    app.register_blueprint(auth)


from . import routes  # noqa: E402,F401  (views attach themselves to the blueprint)
