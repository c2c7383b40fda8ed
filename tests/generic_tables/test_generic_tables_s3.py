"""Generic tables on S3 (a real SeaweedFS with STS, whose role may do anything in the bucket, so only
the session policy the server asks for narrows vended credentials), on SQLite and PostgreSQL:

* Lance writes a dataset with embeddings through ``pylakekeeper``'s vended credentials and reads it
  back; the credentials reach the generic table's base location and nothing else;
* DuckDB reads a Parquet generic table through the credentials endpoint's credentials;
* remote signing (no STS) signs requests inside the generic table's location only, and the signed
  requests work against S3;
* with the test-only ``data-grants`` authorizer and OIDC tokens: a reader gets read-only credentials
  and signatures, a user without ``read_data`` gets neither (403, as for Iceberg tables; a user
  who may not even see the generic table gets 404: the OpenFGA plugin's test of generic tables).
"""

from __future__ import annotations

import urllib.parse
import uuid

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakekeeper_testing.pytest_plugin import STS_ROLE
from lakekeeper_testing.services import SeaweedS3, seaweed_role_arn
from tests.catalog import test_vended_permissions as vended
from tests.catalog.helpers import error
from tests.generic_tables.test_pylakekeeper import DIM, embeddings_table

BUCKET, denied = vended.BUCKET, vended.denied
# the fixtures of the vended-credential tests, reused: a server with the test-only data-grants
# authorizer on SQLite and PostgreSQL (SeaweedFS with STS and the OIDC issuer are lakekeeper_testing's)
plugin_path, grants_server, as_user = vended.plugin_path, vended.grants_server, vended.as_user
pytestmark = pytest.mark.s3
pylakekeeper = pytest.importorskip("pylakekeeper")
lance = pytest.importorskip("lance")
VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SIGNING = {"X-Iceberg-Access-Delegation": "remote-signing"}


def s3_warehouse(http: httpx.Client, seaweed_sts: SeaweedS3, *, sts: bool = True) -> str:
    """A fresh S3 warehouse (its own key prefix) with STS vending, or with remote signing only."""
    created = http.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:10]}",
        "storage-profile": {
            "type": "s3", "bucket": BUCKET, "key-prefix": f"gt-{uuid.uuid4().hex[:12]}",
            "endpoint": seaweed_sts.endpoint, "region": seaweed_sts.region, "path-style-access": True,
            "flavor": "s3-compat", "sts-enabled": sts, "sts-role-arn": seaweed_role_arn(STS_ROLE),
            "remote-signing-enabled": True,
        },
        "storage-credential": {
            "type": "s3", "credential-type": "access-key",
            "aws-access-key-id": seaweed_sts.access_key, "aws-secret-access-key": seaweed_sts.secret_key,
        },
    })  # fmt: skip
    assert created.status_code == 201, created.text
    warehouse_id = created.json()["warehouse-id"]
    assert http.post(f"/catalog/v1/{warehouse_id}/namespaces", json={"namespace": ["lake"]}).status_code == 200
    return warehouse_id


def key_of(location: str) -> str:
    assert location.startswith(f"s3://{BUCKET}/"), location
    return location[len(f"s3://{BUCKET}/"):]


def s3_client(seaweed_sts: SeaweedS3, config: dict[str, str]):
    return seaweed_sts.client(aws_access_key_id=config["s3.access-key-id"],
                          aws_secret_access_key=config["s3.secret-access-key"],
                          aws_session_token=config["s3.session-token"])


def sign(http: httpx.Client, config: dict[str, str], seaweed_sts: SeaweedS3, key: str, method: str) -> httpx.Response:
    """Ask the signer endpoint the load's config names to sign ``method`` on ``key`` of the bucket."""
    route = config["s3.signer.uri"].rstrip("/") + "/" + config["s3.signer.endpoint"]
    return http.post(route, json={
        "region": seaweed_sts.region, "method": method, "headers": {"User-Agent": ["pytest"]},
        "uri": f"{seaweed_sts.endpoint}/{BUCKET}/{urllib.parse.quote(key)}",
    })


@pytest.fixture
def http(server) -> httpx.Client:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        yield client


def test_lance_writes_and_reads_on_s3_with_vended_sts_credentials(server, http, seaweed_sts):
    warehouse_id = s3_warehouse(http, seaweed_sts)
    with pylakekeeper.Client(base_url=server.url, warehouse=warehouse_id,
                             auth=pylakekeeper.StaticToken("no-idp")) as lk:
        lk.generic_tables.create("lake", "frames", format="lance", properties={"embedding-dim": str(DIM)})
        lk.generic_tables.create("lake", "other", format="lance")
        writer = lk.generic_tables.load("lake", "frames", vended=True)
        other = lk.generic_tables.load("lake", "other").location

        assert writer.location.startswith(f"s3://{BUCKET}/")
        [credential] = writer.storage_credentials
        assert credential.prefix == writer.location
        assert credential.config["client.refresh-credentials-endpoint"].endswith(
            f"/lakekeeper/v1/{warehouse_id}/namespaces/lake/generic-tables/frames/credentials")
        options = writer.lance_storage_options
        assert options["aws_endpoint"].rstrip("/") == seaweed_sts.endpoint and options["allow_http"] == "true"
        assert options["aws_session_token"] and writer.expires_at is not None and not writer.is_expired

        data = embeddings_table(100)
        lance.write_dataset(data, writer.location, storage_options=options)
        reader = lk.generic_tables.load("lake", "frames", vended=True)
        dataset = lance.dataset(reader.location, storage_options=reader.lance_storage_options)
        assert dataset.count_rows() == 100
        assert dataset.to_table(columns=["id"])["id"].to_pylist() == list(range(100))
        query = np.asarray(data["embedding"][42].as_py(), dtype=np.float32)
        nearest = dataset.to_table(nearest={"column": "embedding", "q": query, "k": 1}, columns=["caption"])
        assert nearest["caption"].to_pylist() == ["image 42"]

        # the vended keys reach this generic table's location only
        s3 = s3_client(seaweed_sts, credential.config)
        assert s3.list_objects_v2(Bucket=BUCKET, Prefix=key_of(writer.location) + "/")["KeyCount"] > 0
        assert denied(s3.put_object, Bucket=BUCKET, Key=key_of(other) + "/data/x.lance", Body=b"x")
        assert denied(s3.put_object, Bucket=BUCKET, Key=key_of(writer.location) + "-sibling/x", Body=b"x")
        assert denied(s3.list_objects_v2, Bucket=BUCKET, Prefix=key_of(other) + "/")

        # dropping purges the dataset, and nothing else
        lance.write_dataset(embeddings_table(3), other, storage_options=lk.generic_tables.load(
            "lake", "other", vended=True).lance_storage_options)
        lk.generic_tables.drop("lake", "frames")
        admin = seaweed_sts.client()
        from tests.catalog.helpers import wait_for

        wait_for(lambda: admin.list_objects_v2(Bucket=BUCKET, Prefix=key_of(writer.location) + "/")["KeyCount"] == 0,
                 what="the dropped Lance dataset to be purged from S3")
        assert admin.list_objects_v2(Bucket=BUCKET, Prefix=key_of(other) + "/")["KeyCount"] > 0


def test_duckdb_reads_a_parquet_generic_table_through_vended_credentials(server, http, seaweed_sts):
    from lakekeeper_host.engines.duckdb_util import connect_duckdb

    warehouse_id = s3_warehouse(http, seaweed_sts)
    gt = f"/lakekeeper/v1/{warehouse_id}/namespaces/lake/generic-tables"
    assert http.post(gt, json={"name": "events", "format": "parquet"}).status_code == 200
    loaded = http.get(f"{gt}/events", headers=VENDED).json()
    location = loaded["table"]["base-location"]
    [writer] = loaded["storage-credentials"]
    s3 = s3_client(seaweed_sts, writer["config"])
    for part, rows in enumerate(([1, 2, 3], [4, 5])):
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"id": rows, "even": [r % 2 == 0 for r in rows]}), sink)
        s3.put_object(Bucket=BUCKET, Key=f"{key_of(location)}/part-{part}.parquet", Body=sink.getvalue().to_pybytes())

    refreshed = http.get(f"{gt}/events/credentials")
    assert refreshed.status_code == 200, refreshed.text
    [credential] = refreshed.json()["storage-credentials"]
    config = credential["config"]
    assert credential["prefix"] == location
    con = connect_duckdb()
    try:
        con.execute(
            "CREATE SECRET gt (TYPE s3, KEY_ID ?, SECRET ?, SESSION_TOKEN ?, REGION ?, ENDPOINT ?, "
            "URL_STYLE 'path', USE_SSL false)",
            [config["s3.access-key-id"], config["s3.secret-access-key"], config["s3.session-token"],
             config["s3.region"], seaweed_sts.endpoint.removeprefix("http://")],
        )
        rows = con.execute(f"SELECT even, count(*), sum(id) FROM read_parquet('{location}/*.parquet') "
                           "GROUP BY even ORDER BY even").fetchall()
    finally:
        con.close()
    assert rows == [(False, 3, 9), (True, 2, 6)]


def test_remote_signing_signs_inside_the_generic_table_only(server, http, seaweed_sts):
    warehouse_id = s3_warehouse(http, seaweed_sts, sts=False)
    gt = f"/lakekeeper/v1/{warehouse_id}/namespaces/lake/generic-tables"
    assert http.post(gt, json={"name": "blobs", "format": "dataset"}).status_code == 200
    loaded = http.get(f"{gt}/blobs", headers=SIGNING).json()
    config, location = loaded["config"], loaded["table"]["base-location"]
    assert "storage-credentials" not in loaded and "s3.access-key-id" not in config
    [ident] = http.get(gt).json()["identifiers"]
    assert config["s3.remote-signing-enabled"] == "true"
    assert config["s3.signer.endpoint"] == f"v1/signer/{warehouse_id}/tabular-id/{ident['id']}/v1/aws/s3/sign"

    key = key_of(location) + "/images/cat.png"
    put = sign(http, config, seaweed_sts, key, "PUT")
    assert put.status_code == 200, put.text
    headers = {k: ", ".join(v) for k, v in put.json()["headers"].items()}
    assert httpx.put(put.json()["uri"], headers=headers, content=b"\x89PNG...").status_code == 200
    get = sign(http, config, seaweed_sts, key, "GET").json()
    fetched = httpx.get(get["uri"], headers={k: ", ".join(v) for k, v in get["headers"].items()})
    assert fetched.status_code == 200 and fetched.content == b"\x89PNG..."

    outside = sign(http, config, seaweed_sts, key_of(location) + "-sibling/cat.png", "PUT")
    assert outside.status_code == 403 and error(outside)["type"] == "RequestUriMismatch"
    # the warehouse-scoped route finds the generic table by the object's location
    by_location = http.post(f"/catalog/v1/{warehouse_id}/v1/aws/s3/sign", json={
        "region": seaweed_sts.region, "method": "GET", "headers": {},
        "uri": f"{seaweed_sts.endpoint}/{BUCKET}/{urllib.parse.quote(key)}",
    })
    assert by_location.status_code == 200, by_location.text


# ---------------------------------------------------------------- who may read the data


@pytest.fixture
def grants_generic_table(as_user, seaweed_sts):
    """A generic table created by ``writer`` on a fresh S3 warehouse with STS and remote signing:
    (its URL under /lakekeeper/v1, its location)."""
    writer = as_user("writer")
    warehouse_id = s3_warehouse(writer, seaweed_sts)
    url = f"/lakekeeper/v1/{warehouse_id}/namespaces/lake/generic-tables/frames"
    created = writer.post(f"/lakekeeper/v1/{warehouse_id}/namespaces/lake/generic-tables",
                          json={"name": "frames", "format": "lance"})
    assert created.status_code == 200, created.text
    return url, created.json()["table"]["base-location"]


def test_readers_get_read_only_credentials_and_signatures(as_user, seaweed_sts, grants_generic_table):
    url, location = grants_generic_table
    data_key = key_of(location) + "/data/0.lance"
    writer = as_user("writer")
    [written] = writer.get(url, headers=VENDED).json()["storage-credentials"]
    assert not denied(s3_client(seaweed_sts, written["config"]).put_object, Bucket=BUCKET, Key=data_key, Body=b"x")

    reader = as_user("reader")
    loaded = reader.get(url, headers=VENDED)
    assert loaded.status_code == 200, loaded.text
    [read_only] = loaded.json()["storage-credentials"]
    s3 = s3_client(seaweed_sts, read_only["config"])
    assert s3.get_object(Bucket=BUCKET, Key=data_key)["Body"].read() == b"x"
    assert denied(s3.put_object, Bucket=BUCKET, Key=data_key, Body=b"y")
    assert denied(s3.delete_object, Bucket=BUCKET, Key=data_key)
    [refreshed] = reader.get(url + "/credentials").json()["storage-credentials"]
    assert denied(s3_client(seaweed_sts, refreshed["config"]).put_object, Bucket=BUCKET, Key=data_key, Body=b"y")

    config = reader.get(url, headers=SIGNING).json()["config"]
    assert sign(reader, config, seaweed_sts, data_key, "GET").status_code == 200
    refused = sign(reader, config, seaweed_sts, data_key, "PUT")
    assert refused.status_code == 403 and error(refused)["type"] == "GenericTableActionForbidden"
    assert sign(writer, config, seaweed_sts, data_key, "PUT").status_code == 200


def test_without_read_data_no_credentials_and_no_signatures(as_user, seaweed_sts, grants_generic_table):
    url, location = grants_generic_table
    blind = as_user("blind")
    loaded = blind.get(url, headers=VENDED)
    assert loaded.status_code == 200, loaded.text  # it may see the table ...
    assert set(loaded.json()) == {"table"} and loaded.json()["table"]["base-location"] == location
    refused = blind.get(url + "/credentials")  # ... but not read its data
    assert refused.status_code == 403 and error(refused)["type"] == "GenericTableActionForbidden"
    config = as_user("writer").get(url, headers=SIGNING).json()["config"]
    for method in ("GET", "PUT"):
        signature = sign(blind, config, seaweed_sts, key_of(location) + "/data/0.lance", method)
        assert signature.status_code == 403 and error(signature)["type"] == "GenericTableActionForbidden", method
