"""Dashboard sign-in: users and roles, the live/sandbox switch, throttling of failed sign-ins
(app/auth/throttle.py)."""
from __future__ import annotations

from flask import Blueprint, Flask
from flask.sessions import SecureCookieSessionInterface

from app.web import is_api_path

from .users import login_manager

auth = Blueprint("auth", __name__)


class DashboardSessions(SecureCookieSessionInterface):
    """Signed-cookie sessions for the dashboard; API calls, authenticated by bearer token, get none.

    Opening and saving a session costs an API request a tenth of a millisecond for nothing.
    """

    def open_session(self, app, request):
        if is_api_path(request.path):
            return None  # Flask substitutes a null session, never saved
        return super().open_session(app, request)


def init_auth(app: Flask) -> None:
    """Bind flask-login to the app and register the sign-in pages."""
    app.session_interface = DashboardSessions()
    login_manager.init_app(app)
    app.register_blueprint(auth)


from . import routes  # noqa: E402,F401  (views attach themselves to the blueprint)
