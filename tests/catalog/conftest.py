"""Fixtures of the catalog tests (the shared ``server``/``warehouse``/``catalog`` come from tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.catalog.helpers import Rest


@pytest.fixture
def rest(server, warehouse) -> Rest:
    """Raw HTTP on the fresh warehouse."""
    client = Rest(server.url, warehouse["id"])
    yield client
    client.close()


@pytest.fixture
def new_catalog(server, warehouse):
    """Make more PyIceberg catalogs on the same warehouse (one per simulated client)."""
    from pyiceberg.catalog.rest import RestCatalog

    def make(name: str = "other"):
        return RestCatalog(name, uri=server.catalog_url, warehouse=warehouse["name"])

    return make
