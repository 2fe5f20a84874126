"""The /api/v1 JSON blueprint: parse, call the services, shape responses and errors."""
from flask import Blueprint

api = Blueprint("api", __name__, url_prefix="/api/v1")


def is_api_path(path: str) -> bool:
    """The path is under /api/v1 (known before, or without, a matching route)."""
    return f"{path}/".startswith(f"{api.url_prefix}/")


from . import routes  # noqa: E402,F401  (registers the views on the blueprint)
from . import webhooks  # noqa: E402,F401
