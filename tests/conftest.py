"""Shared fixtures: one real server per backend for the whole run, fresh warehouses per test."""

from __future__ import annotations

import os
import uuid

import httpx
import pytest

from lakekeeper_testing.server import IDLE_POLLING, CatalogServer, create_file_warehouse, start_server

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def pg_url():
    """A fresh PostgreSQL database: LAKEKEEPER_TEST_PG_URL's server, or a throwaway cluster."""
    from lakekeeper_testing.services import postgres_for_tests

    with postgres_for_tests() as url:
        yield url


@pytest.fixture(scope="session")
def pg_url_factory():
    """Make more fresh databases on the same PostgreSQL (each test that needs isolation)."""
    from lakekeeper_testing.services import postgres_for_tests

    stack = []

    def make() -> str:
        cm = postgres_for_tests()
        stack.append(cm)
        return cm.__enter__()

    yield make
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session", params=BACKENDS)
def server(request) -> CatalogServer:
    """The shared catalog server, once per backend."""
    backend = request.param
    srv = start_server(pg_url=request.getfixturevalue("pg_url") if backend == "postgres" else None)
    srv.backend = backend
    yield srv
    srv.close()


@pytest.fixture(scope="session")
def sqlite_server(request) -> CatalogServer:
    """An embedded server only (for tests that do not need both backends)."""
    srv = CatalogServer(IDLE_POLLING).start()  # none of its tests waits for a task
    srv.backend = "sqlite"
    yield srv
    srv.close()


@pytest.fixture
def http(server) -> httpx.Client:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


@pytest.fixture
def warehouse(server, tmp_path_factory) -> dict:
    """A fresh ``file`` warehouse on the shared server: {name, id, root, server}."""
    name = f"wh-{uuid.uuid4().hex[:10]}"
    root = str(tmp_path_factory.mktemp(name))
    warehouse_id = create_file_warehouse(server.url, name, root)
    return {"name": name, "id": warehouse_id, "root": root, "server": server}


@pytest.fixture
def catalog(server, warehouse):
    """A PyIceberg RestCatalog bound to the fresh warehouse."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("test", uri=server.catalog_url, warehouse=warehouse["name"])


@pytest.fixture
def prefix_url(server, warehouse) -> str:
    return f"{server.url}/catalog/v1/{warehouse['id']}"


@pytest.fixture(scope="session")
def spark():
    """THE SparkSession of the test run (one JVM); register catalogs with ``spark_catalog``."""
    from lakekeeper_host.engines.spark import shared_session

    session = shared_session()
    yield session
    session.stop()


@pytest.fixture
def spark_catalog(spark, server, warehouse):
    """Register the fresh warehouse as a Spark catalog; returns its name (unique per test)."""
    from lakekeeper_host.engines.spark import add_catalog

    name = "c_" + warehouse["name"].replace("-", "_")
    return add_catalog(spark, server.catalog_url, warehouse["name"], catalog_name=name)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("LAKEKEEPER_TEST_SKIP_POSTGRES") == "1":
        skip = pytest.mark.skip(reason="LAKEKEEPER_TEST_SKIP_POSTGRES=1")
        for item in items:
            if "[postgres" in item.nodeid:
                item.add_marker(skip)
