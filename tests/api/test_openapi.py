"""The OpenAPI document: valid OpenAPI 3.1, in step with the api blueprint, and true to the live server."""
from __future__ import annotations

import re

import jsonschema_rs
import pytest
import requests
import schemathesis

from app.api.openapi import openapi_document

# Per operation and generation mode; with the examples and coverage phases this keeps a
# backend's run well under two minutes.
EXAMPLES_PER_OPERATION = 40
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance")
ROUTE_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def fuzz_config(token: str) -> schemathesis.Config:
    """Deterministic runs of the chosen checks, valid and invalid data, authenticated with the token."""
    return schemathesis.Config.from_dict({
        "seed": 1,
        "generation": {"mode": "all", "max-examples": EXAMPLES_PER_OPERATION, "deterministic": True,
                       "database": "none"},
        "phases": {"stateful": {"enabled": False}},
        "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        "headers": {"Authorization": f"Bearer {token}"},
    })


@pytest.fixture
def live_schema(server, merchant):
    """The document as the live server serves it, read and fuzzed with a sandbox token."""
    return schemathesis.openapi.from_url(
        f"{server.url}/api/v1/openapi.json",
        headers={"Authorization": f"Bearer {merchant.sandbox_token}"},
        config=fuzz_config(merchant.sandbox_token),
    )


schema = schemathesis.pytest.from_fixture("live_schema")


@schema.parametrize()
def test_every_answer_matches_the_document(case):
    case.call_and_validate()


def _schema_objects(node, where="#"):
    """Every JSON Schema in the document, with its location."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}/{key}"
            if key == "schema":
                yield here, value
            elif key == "schemas":
                yield from ((f"{here}/{name}", s) for name, s in value.items())
            else:
                yield from _schema_objects(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _schema_objects(value, f"{where}/{index}")


def test_document_is_valid_openapi_3_1():
    document = openapi_document("http://paydesk.test")
    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()  # the OpenAPI 3.1 meta-schema
    found = list(_schema_objects(document))
    assert len(found) > 20
    for where, schema_object in found:
        # The 3.1 meta-schema leaves Schema Objects loose; check them against their dialect.
        try:
            jsonschema_rs.meta.validate({"$schema": JSON_SCHEMA_DIALECT, **schema_object})
        except jsonschema_rs.ValidationError as error:
            pytest.fail(f"{where}: {error}")


def _blueprint_routes(app) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/v1"):
            path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", lambda m: "{" + _camel(m.group(1)) + "}", rule.rule)
            routes.update((method, path) for method in rule.methods & ROUTE_METHODS)
    return routes


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def test_document_and_routes_name_the_same_operations(app):
    document = openapi_document("http://paydesk.test")
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert documented == _blueprint_routes(app)


def test_served_document_is_the_module_document_with_this_server(server, sandbox):
    response = sandbox.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == openapi_document(server.app.config["BASE_URL"])


def test_document_needs_a_token(server):
    response = requests.get(f"{server.url}/api/v1/openapi.json", timeout=10)
    assert response.status_code == 401
    assert response.json() == {"error": "Authentication Error", "message": "Invalid client credentials"}
