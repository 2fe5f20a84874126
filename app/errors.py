"""What a request answers when something fails, and the request id that ties the answer to the log.

- Every response carries X-Request-Id: the caller's own when it is a sane token (1 to 64
  of A-Z a-z 0-9 . _ -, as load balancers and API clients send), otherwise a new random
  one. Every log line about a failed request names it.
- A request that lost its database connection (the server restarted, or dropped it)
  before it sent any COMMIT is run once more from the start, on a fresh connection:
  all it did in the database was rolled back, so nothing can happen twice. One that
  may have committed is never run again.
- While the database cannot be reached: 503 with Retry-After: 1.
- Anything else unexpected: 500, logged with its traceback.

Under /api/v1 (and for the health check) these answers are JSON, elsewhere HTML pages.
"""
from __future__ import annotations

import re
import secrets

from flask import Flask, Request, Response, current_app, request
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException, InternalServerError

from app.payments.provider import UNREACHABLE, ProviderUnavailable
from app.store.db import commit_sent, database_unreachable, forget_commits
from app.web import is_api_path, json_response

REQUEST_ID_HEADER = "X-Request-Id"
# Where request_id() keeps the id it settled on, in the request's WSGI environ.
REQUEST_ID_KEY = "paydesk.request_id"
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
HEALTH_CHECK_PATH = "/healthz"
UNAVAILABLE = {"error": "Service temporarily unavailable"}
PROVIDER_UNAVAILABLE = {"error": UNREACHABLE}
RETRY_AFTER_SECONDS = 1


class PaydeskFlask(Flask):
    """Flask, plus one more run of a request whose database connection was lost before any COMMIT,
    503 while the database is unreachable, and the request id in the log line of every 500."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._made_sync: dict = {}

    def ensure_sync(self, func):
        """Flask's, remembered per function: Flask inspects each hook and view again on
        every request otherwise."""
        made = self._made_sync.get(func)
        if made is None:
            made = self._made_sync[func] = super().ensure_sync(func)
        return made

    def full_dispatch_request(self) -> Response:
        """Flask's dispatch, with the request's COMMITs watched from its start."""
        forget_commits()
        return super().full_dispatch_request()

    def handle_user_exception(self, e: Exception):
        """Run the request once more if it lost its connection before any COMMIT; else answer."""
        if not _lost_connection_before_commit(e):
            return self._answer_failure(e)
        self.logger.warning("request %s lost its database connection before committing anything; "
                            "running it again", request_id())
        try:
            answer = self.preprocess_request()
            return self.dispatch_request() if answer is None else answer
        except Exception as again:  # noqa: BLE001 - answered as a first failure would be, never rerun
            return self._answer_failure(again)

    def _answer_failure(self, e: Exception):
        """503 while the database is unreachable; otherwise the registered handlers, or a 500."""
        if database_unreachable(e):
            return _database_unavailable(e)
        return super().handle_user_exception(e)

    def log_exception(self, exc_info) -> None:
        """Flask's log line of an unhandled exception, with the request id the 500 answer shows."""
        self.logger.error("Exception on %s [%s], request id %s", request.path, request.method,
                          request_id(), exc_info=exc_info)


def _lost_connection_before_commit(error: Exception) -> bool:
    """SQLAlchemy saw the connection die, and this request has sent no COMMIT."""
    return isinstance(error, DBAPIError) and error.connection_invalidated and not commit_sent()


def request_id(asked: Request | None = None) -> str:
    """This request's id: the caller's X-Request-Id when it is sane, otherwise a new random one.
    `asked` is the request object itself, for a caller that holds it (read without Flask's
    context-local proxy); otherwise the current request."""
    asked = request if asked is None else asked
    environ = asked.environ
    known = environ.get(REQUEST_ID_KEY)
    if known is None:
        offered = asked.headers.get(REQUEST_ID_HEADER, "")
        known = offered if _SANE_REQUEST_ID.fullmatch(offered) else secrets.token_hex(16)
        environ[REQUEST_ID_KEY] = known
    return known


def init_errors(app: Flask) -> None:
    """Register the request id header and the 500 and other HTTP error answers."""
    app.after_request(_name_the_response)
    app.register_error_handler(InternalServerError, _server_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(ProviderUnavailable, _provider_unavailable)


def _name_the_response(response: Response) -> Response:
    response.headers[REQUEST_ID_HEADER] = request_id()
    return response


def _answers_in_json() -> bool:
    """API calls and the load balancer's health check are machines; everyone else reads pages."""
    return is_api_path(request.path) or request.path == HEALTH_CHECK_PATH


def _database_unavailable(error: Exception) -> Response:
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    current_app.logger.warning("database unreachable, answered 503 (request id %s): %s",
                               request_id(), first_line)
    if _answers_in_json():
        response = json_response(UNAVAILABLE, 503)
    else:
        response = _page(503, "Paydesk is briefly unavailable",
                         "We cannot reach our database right now. Nothing you sent was lost "
                         "half-way: try again in a moment.")
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _provider_unavailable(error: ProviderUnavailable) -> Response:
    """A provider Paydesk had to ask before changing anything did not answer: nothing changed."""
    current_app.logger.warning("provider unavailable, answered 502 (request id %s): %s",
                               request_id(), error)
    if _answers_in_json():
        return json_response(PROVIDER_UNAVAILABLE, 502)
    return _page(502, "The payment provider did not answer",
                 "Nothing was changed. Try again in a moment.")


def _server_error(_error: InternalServerError) -> Response:
    """Already logged with its traceback (log_exception); the answer names the request."""
    if _answers_in_json():
        return json_response({"error": "Internal Server Error", "requestId": request_id()}, 500)
    return _page(500, "Something went wrong",
                 "This is our fault, not yours. If it happens again, tell support this reference.")


# The titles of the pages that answer an HTTP error outside the API (the dashboard's own views
# answer theirs with dashboard/error.html; these reach the app: an unknown address, a form's
# address opened in the browser, ...). Any other code is titled with its standard phrase.
_PAGE_TITLES = {404: "Page not found", 405: "This address takes no visits"}
_PAGE_WORDS = {405: "This address only takes what a Paydesk form sends. Go back to the form, "
                    "or to the page you came from, and send it from there."}


def _http_error(error: HTTPException):
    """Under /api/v1 every error is JSON; elsewhere a standalone page (no dashboard chrome: a
    payer on a checkout address may read it too) with werkzeug's status and headers."""
    if error.code is None or error.code < 400:
        return error
    kept = {name: value for name, value in error.get_headers() if name != "Content-Type"}  # Allow...
    if not is_api_path(request.path):
        response = _page(error.code, _PAGE_TITLES.get(error.code, error.name),
                         _PAGE_WORDS.get(error.code, error.description or ""))
        response.headers.extend(kept)
        return response
    return json_response({"error": error.name}, error.code, kept)


def _page(status: int, title: str, message: str) -> Response:
    """A standalone HTML page. Rendered without context processors: the dashboard's need the
    signed-in user, read from the database that may be the very thing failing."""
    template = current_app.jinja_env.get_template("server_error.html")
    html = template.render(title=title, message=message, request_id=request_id())
    return Response(html, status=status, mimetype="text/html")
