"""Fixtures: a store holding one merchant (and another one), a scripted provider, a still clock."""
from __future__ import annotations

import pytest

from .fakes import CALLER, OTHER_MERCHANT, Clock, FakeProvider, FakeStore, make_deps


@pytest.fixture
def store() -> FakeStore:
    store = FakeStore()
    store.add_merchant(CALLER)
    store.add_merchant(OTHER_MERCHANT)
    return store


@pytest.fixture
def provider(store, clock) -> FakeProvider:
    return FakeProvider(store, clock)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def deps(store, provider, clock):
    return make_deps(store, provider, clock)
