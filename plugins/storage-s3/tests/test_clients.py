"""Real Iceberg clients on S3 through the catalog: PyIceberg (vended credentials and remote
signing), DuckDB (vended credentials) and Spark (s3a), on SeaweedFS with SQLite and PostgreSQL."""

from __future__ import annotations

import time
import uuid

import httpx
import pyarrow as pa
import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"], pa.string())})


@pytest.fixture
def s3_warehouse(lakekeeper_server, s3_profile, s3_credential, make_warehouse):
    """``s3_warehouse(**profile_overrides)`` -> (name, id, key prefix) of a fresh S3 warehouse."""

    def make(**overrides):
        profile = s3_profile(**overrides)
        response = make_warehouse(lakekeeper_server, profile, s3_credential)
        assert response.status_code == 201, response.text
        body = response.json()
        return body["name"], body["warehouse-id"], body["storage-profile"]["key-prefix"]

    return make


def rest_catalog(server, warehouse: str, delegation: str | None):
    from pyiceberg.catalog.rest import RestCatalog

    properties = {"uri": server.catalog_url, "warehouse": warehouse}
    if delegation:
        properties["header.X-Iceberg-Access-Delegation"] = delegation
    return RestCatalog("s3-test", **properties)


def error_code(call, **kwargs) -> str | None:
    try:
        call(**kwargs)
    except ClientError as exc:
        return exc.response["Error"]["Code"]
    return None


def key_of(location: str) -> str:
    return location.split("://", 1)[1].split("/", 1)[1]


def create_and_fill(catalog, name: str):
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.{name}", schema=ROWS.schema)
    table.append(ROWS)
    return namespace, table


def test_pyiceberg_with_vended_credentials(lakekeeper_server, seaweed, s3_warehouse):
    name, _, _ = s3_warehouse()
    catalog = rest_catalog(lakekeeper_server, name, "vended-credentials")
    namespace, table = create_and_fill(catalog, "events")
    _, sibling = create_and_fill(catalog, "other")

    loaded = catalog.load_table(f"{namespace}.events")
    assert loaded.scan().to_arrow().sort_by("id").equals(ROWS)
    config = loaded.io.properties
    assert config["s3.access-key-id"] != seaweed.access_key  # temporary, not the warehouse keys
    assert int(config["s3.session-token-expires-at-ms"]) > time.time() * 1000

    vended = seaweed.client(
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
    )
    own = key_of(loaded.location())
    assert vended.list_objects_v2(Bucket=BUCKET, Prefix=f"{own}/")["KeyCount"] > 0
    assert error_code(vended.put_object, Bucket=BUCKET, Key=f"{own}/data/extra.bin", Body=b"x") is None
    assert error_code(vended.get_object, Bucket=BUCKET, Key=f"{own}/data/extra.bin") is None
    other = key_of(sibling.location())
    assert error_code(vended.list_objects_v2, Bucket=BUCKET, Prefix=f"{other}/") == "AccessDenied"
    assert error_code(vended.get_object, Bucket=BUCKET, Key=key_of(sibling.metadata_location)) == "AccessDenied"
    assert error_code(vended.put_object, Bucket=BUCKET, Key=f"{other}/data/x", Body=b"x") == "AccessDenied"
    assert error_code(vended.put_object, Bucket=BUCKET, Key="root-object", Body=b"x") == "AccessDenied"
    assert error_code(vended.list_objects_v2, Bucket=BUCKET) == "AccessDenied"  # the bucket root
    assert error_code(vended.list_objects_v2, Bucket=BUCKET, Prefix=own.rsplit("/", 1)[0] + "/") == "AccessDenied"


def test_load_table_hands_out_storage_credentials_and_a_working_refresh_endpoint(
    lakekeeper_server, seaweed, s3_warehouse
):
    name, warehouse_id, _ = s3_warehouse()
    namespace, table = create_and_fill(rest_catalog(lakekeeper_server, name, "vended-credentials"), "refreshed")
    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    url = f"{lakekeeper_server.url}/catalog/v1/{warehouse_id}/namespaces/{namespace}/tables/refreshed"
    loaded = httpx.get(url, headers=delegation, timeout=30)
    assert loaded.status_code == 200, loaded.text
    body = loaded.json()
    [credential] = body["storage-credentials"]
    assert credential["prefix"] == table.location()
    assert credential["config"]["s3.access-key-id"] == body["config"]["s3.access-key-id"]
    refresh = body["config"]["client.refresh-credentials-endpoint"]
    assert refresh == f"{url}/credentials"

    refreshed = httpx.get(refresh, headers=delegation, timeout=30)
    assert refreshed.status_code == 200, refreshed.text
    [fresh] = refreshed.json()["storage-credentials"]
    assert fresh["prefix"] == table.location()
    vended = seaweed.client(
        aws_access_key_id=fresh["config"]["s3.access-key-id"],
        aws_secret_access_key=fresh["config"]["s3.secret-access-key"],
        aws_session_token=fresh["config"]["s3.session-token"],
    )
    assert vended.get_object(Bucket=BUCKET, Key=key_of(table.metadata_location))["Body"].read()


def test_pyiceberg_with_remote_signing(lakekeeper_server, seaweed, s3_warehouse):
    name, warehouse_id, prefix = s3_warehouse(**{"sts-enabled": False})
    catalog = rest_catalog(lakekeeper_server, name, "remote-signing")
    namespace, table = create_and_fill(catalog, "signed")
    loaded = catalog.load_table(f"{namespace}.signed")
    assert loaded.io.properties["s3.signer"] == "S3V4RestSigner"
    assert "s3.access-key-id" not in loaded.io.properties
    assert loaded.scan().to_arrow().sort_by("id").equals(ROWS)

    # the table's own signer endpoint refuses objects outside the table
    properties = loaded.io.properties
    endpoint = f"{properties['s3.signer.uri'].rstrip('/')}/{properties['s3.signer.endpoint']}"
    outside = {
        "region": seaweed.region,
        "method": "GET",
        "uri": f"{seaweed.endpoint}/{BUCKET}/{prefix}/somewhere-else/secret.parquet",
        "headers": {},
    }
    response = httpx.post(endpoint, json=outside, timeout=30)
    assert response.status_code == 403, response.text
    inside = {**outside, "uri": f"{seaweed.endpoint}/{BUCKET}/{key_of(loaded.metadata_location)}"}
    assert httpx.post(endpoint, json=inside, timeout=30).status_code == 200


def test_stc_cache_hits_show_in_metrics(lakekeeper_server, s3_warehouse):
    name, _, _ = s3_warehouse()
    catalog = rest_catalog(lakekeeper_server, name, "vended-credentials")
    namespace, _ = create_and_fill(catalog, "cached")

    def counter(result: str) -> float:
        text = httpx.get(f"http://127.0.0.1:{lakekeeper_server.metrics_port}/metrics", timeout=10).text
        for line in text.splitlines():
            if (
                line.startswith("lakekeeper_cache_requests_total")
                and 'cache="stc"' in line
                and f'result="{result}"' in line
            ):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = counter("hit")
    first = catalog.load_table(f"{namespace}.cached").io.properties["s3.access-key-id"]
    second = catalog.load_table(f"{namespace}.cached").io.properties["s3.access-key-id"]
    assert first == second
    assert counter("hit") >= before + 2
    assert counter("miss") >= 1


def test_drop_with_purge_removes_the_objects(lakekeeper_server, seaweed, s3_warehouse):
    name, _, _ = s3_warehouse()
    catalog = rest_catalog(lakekeeper_server, name, "vended-credentials")
    namespace, table = create_and_fill(catalog, "doomed")
    prefix = key_of(table.location()) + "/"
    admin = seaweed.client()
    assert admin.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["KeyCount"] > 0
    catalog.purge_table(f"{namespace}.doomed")
    deadline = time.monotonic() + 60
    while admin.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["KeyCount"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert admin.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["KeyCount"] == 0


@pytest.mark.duckdb
def test_duckdb_reads_through_vended_credentials(lakekeeper_server, s3_warehouse):
    from lakekeeper_host.engines.duckdb_util import attach_catalog, connect_duckdb

    name, _, _ = s3_warehouse()
    catalog = rest_catalog(lakekeeper_server, name, "vended-credentials")
    namespace, _ = create_and_fill(catalog, "for_duck")
    con = connect_duckdb()
    try:
        attach_catalog(con, "lk", lakekeeper_server.catalog_url, name)
        rows = con.execute(f"SELECT id, name FROM lk.{namespace}.for_duck ORDER BY id").fetchall()
    finally:
        con.close()
    assert rows == [(1, "a"), (2, "b"), (3, "c")]


@pytest.mark.spark
@pytest.mark.slow
def test_spark_writes_and_reads_an_s3a_table_through_the_catalog(lakekeeper_server, seaweed, s3_warehouse, spark):
    """Spark's Iceberg REST client on our catalog; its data files go to SeaweedFS through Hadoop's
    s3a (HadoopFileIO: Iceberg's S3FileIO needs the AWS SDK v2, which cannot be installed here)."""
    from lakekeeper_host.engines.spark import add_catalog

    name, _, prefix = s3_warehouse(**{"sts-enabled": False})
    catalog_name = "s3_" + name.replace("-", "_")
    s3 = {"endpoint": seaweed.endpoint, "access_key": seaweed.access_key, "secret_key": seaweed.secret_key,
          "region": seaweed.region}
    add_catalog(spark, lakekeeper_server.catalog_url, name, catalog_name=catalog_name, s3=s3)
    spark.sql(f"CREATE NAMESPACE {catalog_name}.spark_ns")
    spark.sql(f"CREATE TABLE {catalog_name}.spark_ns.events (id bigint, name string) USING iceberg")
    spark.sql(f"INSERT INTO {catalog_name}.spark_ns.events VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    rows = spark.sql(f"SELECT id, name FROM {catalog_name}.spark_ns.events ORDER BY id").collect()
    assert [(r.id, r.name) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]

    # the catalog knows the table; its location is in the bucket, where Spark's data files are
    table = rest_catalog(lakekeeper_server, name, "vended-credentials").load_table("spark_ns.events")
    assert table.location().startswith(f"s3://{BUCKET}/{prefix}/")
    keys = [o["Key"] for o in seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=key_of(table.location()) + "/")
            .get("Contents", [])]
    assert any(k.endswith(".parquet") for k in keys) and any(k.endswith(".metadata.json") for k in keys)
    # and another client reads what Spark wrote, through vended credentials
    assert table.scan().to_arrow().sort_by("id").equals(ROWS)


def test_spark_refuses_an_s3_warehouse_without_s3a_settings(lakekeeper_server, s3_warehouse, tmp_path):
    """Spark here has no AWS SDK v2, so Iceberg's default S3FileIO would fail at the first read with a
    NoClassDefFoundError: the session helpers say what to pass instead, before any JVM starts. A file
    warehouse on the same server, or an S3 one with s3a settings, is not refused."""
    from lakekeeper_host.engines import spark as spark_setup

    name, _, _ = s3_warehouse(**{"sts-enabled": False})
    with pytest.raises(spark_setup.S3WarehouseNeedsS3a, match=rf"warehouse '{name}' stores its tables on S3.*s3="):
        spark_setup.build_spark_session(lakekeeper_server.catalog_url, name)
    with pytest.raises(spark_setup.S3WarehouseNeedsS3a):
        spark_setup.add_catalog(None, lakekeeper_server.catalog_url, name, catalog_name="s3")  # type: ignore[arg-type]
    assert spark_setup.warehouse_storage_type(lakekeeper_server.catalog_url, name) == "s3"

    from lakekeeper_testing.server import create_file_warehouse

    create_file_warehouse(lakekeeper_server.url, "local-files", str(tmp_path / "files"))
    assert spark_setup.warehouse_storage_type(lakekeeper_server.catalog_url, "local-files") == "file"
    spark_setup.refuse_s3_without_s3a(lakekeeper_server.catalog_url, "local-files")  # no error
    # a caller who brings their own FileIO is trusted
    spark_setup.refuse_s3_without_s3a(
        lakekeeper_server.catalog_url, name, extra_conf={"spark.sql.catalog.lakekeeper.io-impl": "org.example.IO"}
    )
