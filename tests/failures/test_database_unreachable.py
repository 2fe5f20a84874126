"""While the database cannot be reached: 503 with Retry-After, JSON for the API and /healthz, a page elsewhere."""
from __future__ import annotations

import logging

from app.auth.sessions import SESSION_KEY

from .conftest import bearer


def test_the_api_answers_503_json_with_retry_after(unreachable_app, caplog):
    client = unreachable_app.test_client()
    for method, path in [("GET", "/api/v1/transactions/PAY-1/status"),
                         ("POST", "/api/v1/transactions/refund"),
                         ("POST", "/api/v1/transactions")]:
        response = client.open(path, method=method, headers=bearer("pd_test_x"), json={})
        assert response.status_code == 503, (path, response.get_data(as_text=True))
        assert response.get_json() == {"error": "Service temporarily unavailable"}
        assert response.headers["Retry-After"] == "1"
        assert response.headers["X-Request-Id"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3 and all("unreachable" in r.getMessage() for r in warnings)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # not a bug: no traceback


def test_the_health_check_answers_503_json(unreachable_app):
    response = unreachable_app.test_client().get("/healthz")
    assert response.status_code == 503
    assert response.get_json() == {"error": "Service temporarily unavailable"}


def test_the_dashboard_answers_a_friendly_503_page(unreachable_app):
    client = unreachable_app.test_client()
    with client.session_transaction() as session:
        session["_user_id"] = "1"  # signed in: the page needs the user and its session row
        session[SESSION_KEY] = "a-session-key"  # from the database
    response = client.get("/transactions")
    assert response.status_code == 503
    assert response.mimetype == "text/html"
    assert response.headers["Retry-After"] == "1"
    page = response.get_data(as_text=True)
    assert "briefly unavailable" in page
    assert response.headers["X-Request-Id"] in page
