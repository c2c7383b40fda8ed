"""Shared fixtures: one real server per backend for the whole run, fresh warehouses per test."""

from __future__ import annotations

import os
import uuid

import httpx
import pytest

from lakekeeper_testing.server import IDLE_POLLING, CatalogServer, create_file_warehouse


@pytest.fixture(scope="session")
def server(lakekeeper_server) -> CatalogServer:
    """The shared catalog server, once per backend (``lakekeeper_testing``'s ``lakekeeper_server``)."""
    return lakekeeper_server


@pytest.fixture(scope="session")
def sqlite_server(lakekeeper_server_factory) -> CatalogServer:
    """An embedded server only (for tests that do not need both backends)."""
    return lakekeeper_server_factory(IDLE_POLLING)  # none of its tests waits for a task


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


@pytest.fixture
def spark_catalog(spark, server, warehouse):
    """Register the fresh warehouse as a Spark catalog; returns its name (unique per test)."""
    from lakekeeper_host.engines.spark import add_catalog

    name = "c_" + warehouse["name"].replace("-", "_")
    add_catalog(spark, server.catalog_url, warehouse["name"], catalog_name=name)
    # the run's one session may still have a current or default catalog that an earlier test (the
    # example pipeline, the console snippets) pointed at a server that has stopped since. Spark
    # resolves the current one for every CALL, and Iceberg's rewrite actions clone the session, whose
    # current catalog is then spark.sql.defaultCatalog: both become this test's catalog
    spark.conf.set("spark.sql.defaultCatalog", name)
    spark.catalog.setCurrentCatalog(name)
    return name


def pytest_collection_modifyitems(config, items):
    if os.environ.get("LAKEKEEPER_TEST_SKIP_POSTGRES") == "1":
        skip = pytest.mark.skip(reason="LAKEKEEPER_TEST_SKIP_POSTGRES=1")
        for item in items:
            if "[postgres" in item.nodeid:
                item.add_marker(skip)
