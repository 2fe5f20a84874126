"""Test support: databases, live servers, API clients."""
