"""Real clients against an authenticated server: PyIceberg with OAuth2 client credentials
(the token comes from the test issuer's token endpoint), Spark and DuckDB with a bearer token.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import shutil
import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import OAuthError

from lakekeeper_testing.server import CatalogServer


def create_warehouse(server: CatalogServer, token: str, root: str) -> str:
    name = f"wh-{uuid.uuid4().hex[:8]}"
    response = httpx.post(
        server.url + "/management/v1/warehouse",
        json={"warehouse-name": name, "storage-profile": {"type": "file", "root": root}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return name


def test_pyiceberg_client_credentials(auth_server, idp_one, tmp_path):
    warehouse = create_warehouse(auth_server, idp_one.mint("root"), str(tmp_path))
    catalog = RestCatalog(
        "authenticated",
        uri=auth_server.catalog_url,
        warehouse=warehouse,
        credential="etl:etl-secret",
        **{"oauth2-server-uri": idp_one.token_endpoint, "scope": "lakekeeper"},
    )
    catalog.create_namespace("sales")
    table = catalog.create_table(("sales", "orders"), schema=pa.schema([("id", pa.int64()), ("item", pa.string())]))
    table.append(pa.table({"id": [1, 2], "item": ["tea", "cake"]}))

    reread = catalog.load_table(("sales", "orders")).scan().to_arrow().sort_by("id")
    assert reread.to_pylist() == [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}]

    # the client-credentials identity was registered by the config call
    whoami = httpx.get(
        auth_server.url + "/management/v1/whoami",
        headers={"Authorization": f"Bearer {idp_one.mint('service-account-etl')}"},
    ).json()
    assert whoami["id"] == "oidc~service-account-etl"
    assert whoami["user-type"] == "application"

    # the same server without a token, and with a wrong client secret
    response = httpx.get(auth_server.catalog_url + "/v1/config", params={"warehouse": warehouse})
    assert response.status_code == 401
    with pytest.raises(Exception):  # noqa: B017 - pyiceberg raises its own 401 error type
        RestCatalog("anonymous", uri=auth_server.catalog_url, warehouse=warehouse).list_namespaces()
    with pytest.raises(OAuthError):
        RestCatalog(
            "wrong-secret",
            uri=auth_server.catalog_url,
            warehouse=warehouse,
            credential="etl:not-the-secret",
            **{"oauth2-server-uri": idp_one.token_endpoint},
        )


# ---------------------------------------------------------------- Spark (a fresh JVM per module)


def _spark_create_and_read(catalog_uri: str, warehouse: str, token: str) -> list[tuple[int, str]]:
    from lakekeeper_host.engines.spark import C1_ONLY_CONF, build_spark_session

    spark = build_spark_session(catalog_uri, warehouse, token=token, extra_conf=C1_ONLY_CONF)  # a few tiny queries
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lakekeeper.spark_ns")
        spark.sql("CREATE TABLE lakekeeper.spark_ns.events (id bigint, name string) USING iceberg")
        spark.sql("INSERT INTO lakekeeper.spark_ns.events VALUES (1, 'a'), (2, 'b')")
        rows = spark.sql("SELECT id, name FROM lakekeeper.spark_ns.events ORDER BY id").collect()
        return [(row.id, row.name) for row in rows]
    finally:
        spark.stop()


@pytest.mark.spark
@pytest.mark.slow
def test_spark_with_a_token(auth_env, idp_one, idp_two, tmp_path, lakekeeper_server_factory):
    if shutil.which("java") is None:
        pytest.skip("java (17) is not installed: apt-get install openjdk-17-jre-headless")
    with lakekeeper_server_factory(auth_env) as srv:
        warehouse = create_warehouse(srv, idp_one.mint("root"), str(tmp_path))
        token = idp_two.mint("spark-job", expires_in=3600)
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            rows = pool.submit(_spark_create_and_read, srv.catalog_url, warehouse, token).result(timeout=300)
        assert rows == [(1, "a"), (2, "b")]
        # the table Spark wrote is there for an authenticated PyIceberg reader too
        catalog = RestCatalog("check", uri=srv.catalog_url, warehouse=warehouse, token=idp_one.mint("reader"))
        assert catalog.load_table(("spark_ns", "events")).scan().to_arrow().num_rows == 2
        assert httpx.get(srv.catalog_url + "/v1/config", params={"warehouse": warehouse}).status_code == 401


# ---------------------------------------------------------------- DuckDB


@pytest.mark.duckdb
def test_duckdb_with_a_token(auth_server, idp_one, tmp_path):
    from lakekeeper_host.engines.duckdb_util import attach_catalog, connect_duckdb

    warehouse = create_warehouse(auth_server, idp_one.mint("root"), str(tmp_path))
    catalog = RestCatalog("writer", uri=auth_server.catalog_url, warehouse=warehouse, token=idp_one.mint("writer"))
    catalog.create_namespace("ducks")
    table = catalog.create_table(("ducks", "quacks"), schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3]}))

    con = connect_duckdb()
    attach_catalog(con, "lk", auth_server.catalog_url, warehouse, token=idp_one.mint("duck", expires_in=600))
    assert con.execute("SELECT count(*) FROM lk.ducks.quacks").fetchone() == (3,)

    anonymous = connect_duckdb()
    with pytest.raises(Exception, match="401|[Uu]nauthori"):
        attach_catalog(anonymous, "lk", auth_server.catalog_url, warehouse)
        anonymous.execute("SELECT count(*) FROM lk.ducks.quacks").fetchone()
