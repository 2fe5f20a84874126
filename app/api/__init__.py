"""The /api/v1 JSON blueprint: parse, call the services, shape responses and errors."""
from flask import Blueprint

from app.web import API_PREFIX

api = Blueprint("api", __name__, url_prefix=API_PREFIX)


from . import routes  # noqa: E402,F401  (registers the views on the blueprint)
from . import webhooks  # noqa: E402,F401
from . import settlements  # noqa: E402,F401
from . import disputes  # noqa: E402,F401
from . import listing  # noqa: E402,F401
from . import batches  # noqa: E402,F401


from . import events  # noqa: E402,F401
from . import webhook_endpoints  # noqa: E402,F401
