"""Dashboard sign-in: users and roles, the live/sandbox switch, rate limits on failed logins."""
from __future__ import annotations

from flask import Blueprint, Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from .users import login_manager

auth = Blueprint("auth", __name__)
# No default limits: only the login form is limited here; the API is not touched.
limiter = Limiter(key_func=get_remote_address)


def init_auth(app: Flask) -> None:
    """Bind flask-login and the rate limiter to the app and register the sign-in pages."""
    login_manager.init_app(app)
    limiter.init_app(app)
    app.register_blueprint(auth)


from . import routes  # noqa: E402,F401  (views attach themselves to the blueprint)
