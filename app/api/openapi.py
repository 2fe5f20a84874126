"""The OpenAPI 3.1 document of /api/v1."""
from __future__ import annotations


def openapi_document(base_url: str) -> dict:
    """The document served at /api/v1/openapi.json."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Paydesk API", "version": "1"},
        "servers": [{"url": base_url}],
        "paths": {},
    }
