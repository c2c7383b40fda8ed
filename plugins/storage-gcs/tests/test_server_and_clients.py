"""GCS warehouses through a real ``lakekeeper serve``, and PyIceberg writing and reading through it.

The catalog server stores objects in a real fake-gcs-server and gets every token from the local
STS test double (see sts_double.py). fake-gcs-server checks no tokens, so a recording proxy in front
of it (recording_proxy.py) shows which token each request carried: the tests check that PyIceberg
sent the vended, downscoped token, and only for objects its access boundary allows.
"""

from __future__ import annotations

import re
import time
import uuid

import httpx
import pyarrow as pa
import pytest

from .conftest import BUCKET, create_warehouse

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"], pa.string())})


@pytest.fixture
def gcs_warehouse(gcs_server, gcs_profile, gcs_credential):
    """``gcs_warehouse(**profile_overrides)`` -> the created warehouse JSON."""

    def make(**overrides):
        response = create_warehouse(gcs_server, gcs_profile(**overrides), gcs_credential)
        assert response.status_code == 201, response.text
        return response.json()

    return make


def rest_catalog(server, warehouse: str):
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog(
        "gcs-test",
        uri=server.catalog_url,
        warehouse=warehouse,
        **{"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    )


def object_key(location: str) -> str:
    return location.split("://", 1)[1].split("/", 1)[1]


def test_create_warehouse_with_lakekeepers_json(gcs_server, fake_gcs, gcs_profile, gcs_credential, key_prefix):
    response = create_warehouse(gcs_server, gcs_profile(), gcs_credential)
    assert response.status_code == 201, response.text
    warehouse = response.json()
    profile = {key: value for key, value in warehouse["storage-profile"].items() if value is not None}
    assert profile == {"type": "gcs", "bucket": BUCKET, "key-prefix": key_prefix, "sts-enabled": True}
    assert "PRIVATE KEY" not in response.text  # the key never comes back
    assert fake_gcs.object_names(BUCKET, f"{key_prefix}/") == []  # the probe cleaned up

    fetched = httpx.get(f"{gcs_server.url}/management/v1/warehouse/{warehouse['warehouse-id']}", timeout=30)
    assert fetched.status_code == 200 and "PRIVATE KEY" not in fetched.text
    access = httpx.post(
        f"{gcs_server.url}/management/v1/warehouse/{warehouse['warehouse-id']}/storage/validate-access", timeout=60
    )
    assert access.status_code == 200, access.text
    statuses = {check["name"]: check["status"] for check in access.json()["checks"]}
    assert access.json()["valid"] and statuses["vended-credentials-read-write"] == "passed", statuses
    assert statuses["vended-credentials-scope-enforced"] == "skipped"  # fake-gcs-server checks no tokens
    plugins = httpx.get(f"{gcs_server.url}/management/v1/plugins", timeout=30).json()["plugins"]
    assert any("storage:gcs" in str(plugin) and "0.1.0" in str(plugin) for plugin in plugins), plugins


@pytest.mark.parametrize(
    ("profile", "credential", "field"),
    [
        ({"bucket": "Not_A_Bucket!"}, None, "storage-profile.bucket"),
        ({"bucket": "my-google-bucket"}, None, "storage-profile.bucket"),
        ({"key-prefix": "a/../b"}, None, "storage-profile.key-prefix"),
        ({}, {"private_key": None}, "storage-credential.key.private_key"),
        (
            {},
            {"private_key": "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"},
            "storage-credential.key.private_key",
        ),  # fmt: skip
        ({}, {"type": "authorized_user"}, "storage-credential.key.type"),
        ({}, {"client_email": ""}, "storage-credential.key.client_email"),
    ],
)
def test_malformed_profiles_and_keys_are_a_400_naming_the_field(
    gcs_server, gcs_profile, gcs_credential, profile, credential, field
):
    key = {k: v for k, v in {**gcs_credential["key"], **(credential or {})}.items() if v is not None}
    response = create_warehouse(gcs_server, gcs_profile(**profile), {**gcs_credential, "key": key})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == 400 and field in error["message"], error


def test_credential_shape_errors_name_the_field(gcs_server, gcs_profile):
    missing_key = create_warehouse(gcs_server, gcs_profile(), {"type": "gcs", "credential-type": "service-account-key"})
    assert missing_key.status_code == 400 and "storage-credential.key" in missing_key.json()["error"]["message"]
    unknown = create_warehouse(gcs_server, gcs_profile(), {"type": "gcs", "credential-type": "hmac-key"})
    assert unknown.status_code == 400 and "storage-credential.credential-type" in unknown.json()["error"]["message"]
    none = create_warehouse(gcs_server, gcs_profile(), None)
    assert none.status_code == 400 and "storage-credential" in none.json()["error"]["message"]
    system = create_warehouse(gcs_server, gcs_profile(), {"type": "gcs", "credential-type": "gcp-system-identity"})
    assert system.status_code == 400
    assert "LAKEKEEPER__ENABLE_GCP_SYSTEM_CREDENTIALS" in system.json()["error"]["message"]


def test_a_key_google_would_reject_fails_creation_naming_the_credential(gcs_server, gcs_profile, stranger_key):
    response = create_warehouse(
        gcs_server, gcs_profile(), {"type": "gcs", "credential-type": "service-account-key", "key": stranger_key}
    )
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "storage-credential.key was not accepted" in message and "invalid_grant" in message
    assert "Invalid JWT Signature" not in message  # the token endpoint's own words stay out (issue 37)


def test_bucket_and_key_prefix_are_immutable(gcs_server, gcs_warehouse, gcs_profile, gcs_credential):
    warehouse = gcs_warehouse()
    url = f"{gcs_server.url}/management/v1/warehouse/{warehouse['warehouse-id']}/storage"
    # as in Lakekeeper, a replacement without storage-credential would drop the credential
    for change in ({"bucket": "another-bucket"}, {"key-prefix": "elsewhere"}):
        body = {"storage-profile": gcs_profile(**change), "storage-credential": gcs_credential}
        response = httpx.post(url, json=body, timeout=60)
        assert response.status_code == 400, response.text
        assert next(iter(change)) in response.json()["error"]["message"]
    body = {"storage-profile": gcs_profile(**{"sts-enabled": False}), "storage-credential": gcs_credential}
    allowed = httpx.post(url, json=body, timeout=60)
    assert allowed.status_code == 200, allowed.text


def boundary_prefix(exchange) -> str:
    """The object-name prefix a downscoped token's access boundary allows (from its CEL condition)."""
    [rule] = exchange.boundary["accessBoundary"]["accessBoundaryRules"]
    match = re.search(r"/objects/(.*?)'\)", rule["availabilityCondition"]["expression"])
    assert match, rule
    return match.group(1)


def test_pyiceberg_writes_and_reads_with_a_vended_token(
    gcs_server, fake_gcs, gcs_proxy, sts, gcs_warehouse, key_prefix
):
    warehouse = gcs_warehouse()
    seen_before = len(gcs_proxy.requests)
    catalog = rest_catalog(gcs_server, warehouse["name"])
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.events", schema=ROWS.schema)
    table.append(ROWS)

    loaded = catalog.load_table(f"{namespace}.events")
    assert loaded.scan().to_arrow().sort_by("id").equals(ROWS)
    location = loaded.location()
    assert location.startswith(f"gs://{BUCKET}/{key_prefix}/")
    stored = fake_gcs.object_names(BUCKET, object_key(location) + "/")
    assert any(name.endswith(".parquet") for name in stored)
    assert any(name.endswith(".metadata.json") for name in stored)

    properties = loaded.io.properties
    assert properties["gcs.service.host"] == gcs_proxy.url  # the storage endpoint the catalog was given
    assert properties["gcs.project-id"] == "test-project"
    assert int(properties["gcs.oauth2.token-expires-at"]) > time.time() * 1000
    exchange = sts.exchange_for(properties["gcs.oauth2.token"])
    assert exchange is not None, "PyIceberg was not handed a downscoped token"
    assert boundary_prefix(exchange) == object_key(location) + "/"

    # What PyIceberg (PyArrow's GCS client) really sent, as the recording proxy saw it: every request
    # carries a downscoped token, and only for objects inside that token's access boundary.
    pyarrow_requests = [r for r in gcs_proxy.requests[seen_before:] if "gl-cpp" in r.user_agent]
    assert any(r.method == "PUT" for r in pyarrow_requests) and any(r.method == "GET" for r in pyarrow_requests)
    for request in pyarrow_requests:
        exchange = sts.exchange_for(request.token or "")
        assert exchange is not None, f"{request.method} {request.path} without a vended token"
        if request.object_name is not None:
            assert request.object_name.startswith(boundary_prefix(exchange)), request
    # Lakekeeper's own requests (the table metadata) use the service account's token
    lakekeeper_requests = [r for r in gcs_proxy.requests[seen_before:] if "gcloud-python" in r.user_agent]
    assert lakekeeper_requests and all(r.token and r.token.startswith("sa-") for r in lakekeeper_requests)


def test_refresh_endpoint_hands_out_a_token_for_the_table(gcs_server, sts, gcs_warehouse):
    warehouse = gcs_warehouse()
    catalog = rest_catalog(gcs_server, warehouse["name"])
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.refreshed", schema=ROWS.schema)
    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    url = f"{gcs_server.url}/catalog/v1/{warehouse['warehouse-id']}/namespaces/{namespace}/tables/refreshed"
    body = httpx.get(url, headers=delegation, timeout=30).json()
    [credential] = body["storage-credentials"]
    assert credential["prefix"] == table.location()
    refresh = body["config"]["gcs.oauth2.refresh-credentials-endpoint"]
    assert refresh == f"{url}/credentials"
    refreshed = httpx.get(refresh, headers=delegation, timeout=30)
    assert refreshed.status_code == 200, refreshed.text
    [fresh] = refreshed.json()["storage-credentials"]
    assert fresh["prefix"] == table.location()
    assert sts.exchange_for(fresh["config"]["gcs.oauth2.token"]) is not None


def test_dropping_with_purge_removes_the_objects(gcs_server, fake_gcs, gcs_warehouse):
    warehouse = gcs_warehouse()
    catalog = rest_catalog(gcs_server, warehouse["name"])
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.purged", schema=ROWS.schema)
    table.append(ROWS)
    prefix = object_key(table.location()) + "/"
    assert fake_gcs.object_names(BUCKET, prefix)
    catalog.purge_table(f"{namespace}.purged")
    deadline = time.monotonic() + 30
    while fake_gcs.object_names(BUCKET, prefix) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fake_gcs.object_names(BUCKET, prefix) == []


@pytest.mark.duckdb
@pytest.mark.skip(
    reason="DuckDB's iceberg extension (1.5.5) turns the vended gcs.oauth2.token into a table-scoped GCS secret "
    "but ignores gcs.service.host, so it reads from https://storage.googleapis.com, which is out of reach "
    "here; a GCS secret with an ENDPOINT of its own loses to that table-scoped secret (tried: the read "
    "still goes to storage.googleapis.com). Against real GCS the vended token is all DuckDB needs."
)
def test_duckdb_reads_through_the_vended_token():
    """Kept as the place for the DuckDB check once its iceberg extension honours a custom GCS endpoint."""


def test_a_generic_table_gets_a_token_downscoped_to_its_base_location(gcs_server, sts, gcs_warehouse):
    """Generic tables (``/lakekeeper/v1``): the vended token's access boundary is the generic
    table's base location, on load and on its credentials endpoint."""
    warehouse = gcs_warehouse()
    catalog_url = f"{gcs_server.url}/catalog/v1/{warehouse['warehouse-id']}"
    assert httpx.post(f"{catalog_url}/namespaces", json={"namespace": ["raw"]}, timeout=30).status_code == 200
    base = f"{gcs_server.url}/lakekeeper/v1/{warehouse['warehouse-id']}/namespaces/raw/generic-tables"
    created = httpx.post(base, json={"name": "frames", "format": "lance"}, timeout=30)
    assert created.status_code == 200, created.text
    location = created.json()["table"]["base-location"]
    assert location.startswith(f"gs://{BUCKET}/")

    loaded = httpx.get(f"{base}/frames", headers={"X-Iceberg-Access-Delegation": "vended-credentials"}, timeout=30)
    assert loaded.status_code == 200, loaded.text
    [credential] = loaded.json()["storage-credentials"]
    assert credential["prefix"] == location
    assert loaded.json()["config"]["gcs.oauth2.refresh-credentials-endpoint"] == f"{base}/frames/credentials"
    exchange = sts.exchange_for(credential["config"]["gcs.oauth2.token"])
    assert exchange is not None and boundary_prefix(exchange) == object_key(location) + "/"
    refreshed = httpx.get(f"{base}/frames/credentials", timeout=30)
    assert refreshed.status_code == 200, refreshed.text
    [fresh] = refreshed.json()["storage-credentials"]
    assert boundary_prefix(sts.exchange_for(fresh["config"]["gcs.oauth2.token"])) == object_key(location) + "/"
