"""ETag / If-None-Match on loadTable and the Idempotency-Key header, through a real server."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_host.server.idempotency import request_fingerprint
from lakekeeper_host.store import Store
from lakekeeper_host.store import idempotency as idempotency_store
from lakekeeper_host.store.idempotency import IdempotencyClaim
from lakekeeper_testing.server import create_file_warehouse

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False))
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def key() -> str:
    return str(uuid.uuid4())


async def _with_store(server, work):
    store = Store(server.store_url())
    await store.connect()
    try:
        return await work(store)
    finally:
        await store.disconnect()


def with_store(server, work):
    return asyncio.run(_with_store(server, work))


# ---------------------------------------------------------------- ETag


def test_load_table_etag_and_304(catalog, http, prefix_url):
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", SCHEMA)
    url = f"{prefix_url}/namespaces/ns/tables/t"

    first = http.get(url)
    etag = first.headers["etag"]
    assert first.status_code == 200 and etag.startswith('W/"lk2.')
    assert first.headers["cache-control"] == "private"
    assert "x-iceberg-access-delegation" in first.headers["vary"]

    again = http.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    # a list of tags, one of them current; the wildcard; a foreign tag
    assert http.get(url, headers={"If-None-Match": f'W/"lk2.0000", {etag}'}).status_code == 304
    assert http.get(url, headers={"If-None-Match": "*"}).status_code == 304
    assert http.get(url, headers={"If-None-Match": '"something-else"'}).status_code == 200
    # another response shape has another tag
    refs = http.get(url, params={"snapshots": "refs"})
    assert refs.headers["etag"] != etag
    assert http.get(url, params={"snapshots": "refs"}, headers={"If-None-Match": etag}).status_code == 200
    delegated = http.get(url, headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert delegated.headers["etag"] != etag

    # after a commit the old tag is stale: 200 with a new tag
    table.append(pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}))
    changed = http.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert changed.json()["metadata-location"] != first.json()["metadata-location"]
    assert http.get(url, headers={"If-None-Match": changed.headers["etag"]}).status_code == 304


# ---------------------------------------------------------------- Idempotency-Key


def test_config_advertises_the_key_lifetime(http, server, warehouse):
    config = http.get(f"{server.url}/catalog/v1/config", params={"warehouse": warehouse["name"]}).json()
    assert config["idempotency-key-lifetime"] == "PT30M"


def test_replayed_create_table_creates_nothing_new(catalog, http, prefix_url, warehouse):
    catalog.create_namespace("ns")
    headers = {"Idempotency-Key": key()}
    body = {"name": "t", "schema": SCHEMA_JSON}
    first = http.post(f"{prefix_url}/namespaces/ns/tables", json=body, headers=headers)
    assert first.status_code == 200
    replay = http.post(f"{prefix_url}/namespaces/ns/tables", json=body, headers=headers)
    assert replay.status_code == 200
    assert replay.headers.get("idempotency-replayed") == "true"
    assert replay.json()["metadata-location"] == first.json()["metadata-location"]
    assert replay.json()["metadata"]["table-uuid"] == first.json()["metadata"]["table-uuid"]
    assert replay.headers["etag"] == first.headers["etag"]
    assert catalog.list_tables("ns") == [("ns", "t")]
    metadata_files = list(Path(warehouse["root"]).rglob("*.metadata.json"))
    assert len(metadata_files) == 1
    # without the key the same request is a conflict
    assert http.post(f"{prefix_url}/namespaces/ns/tables", json=body).status_code == 409


def test_a_replayed_conflict_stays_a_conflict(catalog, http, prefix_url):
    http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns"]}).raise_for_status()
    headers = {"Idempotency-Key": key()}
    conflict = http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns"]}, headers=headers)
    assert conflict.status_code == 409
    catalog.drop_namespace("ns")
    # the replay answers the recorded outcome instead of creating the namespace now
    replay = http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns"]}, headers=headers)
    assert replay.status_code == 409 and replay.json() == conflict.json()
    assert catalog.list_namespaces() == []


def test_replayed_commit_and_drop(catalog, http, prefix_url):
    catalog.create_namespace("ns")
    catalog.create_table("ns.t", SCHEMA)
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v1"}}]}
    headers = {"Idempotency-Key": key()}
    first = http.post(f"{prefix_url}/namespaces/ns/tables/t", json=commit, headers=headers)
    assert first.status_code == 200
    http.post(
        f"{prefix_url}/namespaces/ns/tables/t", json={"updates": [{"action": "set-properties", "updates": {"k": "v2"}}]}
    )
    replay = http.post(f"{prefix_url}/namespaces/ns/tables/t", json=commit, headers=headers)
    assert replay.json()["metadata-location"] == first.json()["metadata-location"]
    assert catalog.load_table("ns.t").properties["k"] == "v2"  # the replay did not commit again

    drop = {"Idempotency-Key": key()}
    assert http.delete(f"{prefix_url}/namespaces/ns/tables/t", headers=drop).status_code == 204
    assert http.delete(f"{prefix_url}/namespaces/ns/tables/t", headers=drop).status_code == 204
    assert http.delete(f"{prefix_url}/namespaces/ns/tables/t").status_code == 404


def test_a_key_reused_for_another_operation_is_400(catalog, http, prefix_url):
    reused = {"Idempotency-Key": key()}
    assert http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns"]}, headers=reused).status_code == 200
    response = http.delete(f"{prefix_url}/namespaces/ns", headers=reused)
    assert response.status_code == 400 and response.json()["error"]["type"] == "IdempotencyKeyReused"
    assert catalog.list_namespaces() == [("ns",)]  # nothing was dropped


def test_a_malformed_key_is_400(http, prefix_url):
    response = http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns"]}, headers={"Idempotency-Key": "nope"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "InvalidIdempotencyKey"


def test_a_request_in_flight_is_409(http, server, prefix_url, warehouse):
    in_flight = key()
    body = b'{"namespace":["ns"]}'
    held = IdempotencyClaim(warehouse["id"], "anonymous", in_flight, "createNamespace",
                            f"POST /catalog/v1/{warehouse['id']}/namespaces", request_fingerprint(b"", body))

    async def claim(store):
        async with store.transaction() as tx:
            assert await idempotency_store.try_insert(tx, held)

    with_store(server, claim)  # what a concurrent request holding the key looks like
    response = http.post(f"{prefix_url}/namespaces", content=body, headers={"Idempotency-Key": in_flight})
    assert response.status_code == 409 and response.json()["error"]["type"] == "RequestInProgress"
    assert http.get(f"{prefix_url}/namespaces").json()["namespaces"] == []


def test_views_take_keys_too(catalog, http, prefix_url):
    catalog.create_namespace("ns")
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["ns"],
               "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}
    body = {"name": "v", "schema": SCHEMA_JSON, "view-version": version}
    headers = {"Idempotency-Key": key()}
    first = http.post(f"{prefix_url}/namespaces/ns/views", json=body, headers=headers)
    replay = http.post(f"{prefix_url}/namespaces/ns/views", json=body, headers=headers)
    assert first.status_code == replay.status_code == 200
    assert replay.json()["metadata-location"] == first.json()["metadata-location"]


# ---------------------------------------------------------------- expiry


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def short_lived(request, lakekeeper_server_factory):
    env = {"LAKEKEEPER__IDEMPOTENCY__LIFETIME": "500ms", "LAKEKEEPER__IDEMPOTENCY__GRACE_PERIOD": "500ms"}
    server = lakekeeper_server_factory(env, backend=request.param)
    yield server
    server.close()


def test_keys_expire_after_their_lifetime(short_lived, tmp_path):
    server = short_lived
    warehouse_id = create_file_warehouse(server.url, f"wh-{uuid.uuid4().hex[:8]}", str(tmp_path))
    base = f"{server.url}/catalog/v1/{warehouse_id}"
    expiring = {"Idempotency-Key": key()}
    assert httpx.post(f"{base}/namespaces", json={"namespace": ["ns"]}, headers=expiring).status_code == 200
    assert httpx.delete(f"{base}/namespaces/ns").status_code == 204
    time.sleep(0.7)  # past the lifetime: the key is fresh again and the request runs
    again = httpx.post(f"{base}/namespaces", json={"namespace": ["ns"]}, headers=expiring)
    assert again.status_code == 200 and "idempotency-replayed" not in again.headers
    assert httpx.get(f"{base}/namespaces").json()["namespaces"] == [["ns"]]

    def count():
        return server.fetch_val("SELECT COUNT(*) FROM idempotency_record WHERE warehouse_id = :w", {"w": warehouse_id})

    # and the cleanup loop removes it after lifetime + grace period
    deadline = time.monotonic() + 30
    while count() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert count() == 0


def test_the_etag_of_a_commit_is_the_etag_of_the_next_load(catalog, http, prefix_url):
    catalog.create_namespace("ns")
    created = http.post(f"{prefix_url}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA_JSON})
    url = f"{prefix_url}/namespaces/ns/tables/t"
    # the create response's tag already validates a load
    assert http.get(url, headers={"If-None-Match": created.headers["etag"]}).status_code == 304
    committed = http.post(url, json={"updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert committed.status_code == 200 and committed.headers["etag"] != created.headers["etag"]
    assert http.get(url, headers={"If-None-Match": created.headers["etag"]}).status_code == 200
    assert http.get(url, headers={"If-None-Match": committed.headers["etag"]}).status_code == 304


def test_every_other_mutation_replays_without_running_again(catalog, http, prefix_url, warehouse):
    """The routes not covered above: each replay answers the first outcome and changes nothing more."""
    catalog.create_namespace("ns")
    catalog.create_namespace("gone")
    catalog.create_table("ns.t", SCHEMA)

    def twice(method: str, path: str, body: dict | None = None) -> tuple[httpx.Response, httpx.Response]:
        headers = {"Idempotency-Key": key()}
        first = http.request(method, f"{prefix_url}{path}", json=body, headers=headers)
        replay = http.request(method, f"{prefix_url}{path}", json=body, headers=headers)
        assert replay.status_code == first.status_code and replay.headers.get("idempotency-replayed") == "true", path
        assert replay.content == first.content, path
        return first, replay

    # updateProperties: the replay reports the first outcome, not "already set"
    first, _ = twice("POST", "/namespaces/ns/properties", {"updates": {"owner": "me"}, "removals": ["nope"]})
    assert first.json() == {"updated": ["owner"], "removed": [], "missing": ["nope"]}
    # dropNamespace: 204 both times (a second drop would be 404)
    assert twice("DELETE", "/namespaces/gone")[0].status_code == 204
    # renameTable: 204 both times (a second rename would be 404: the source is gone)
    rename = {"source": {"namespace": ["ns"], "name": "t"}, "destination": {"namespace": ["ns"], "name": "t2"}}
    assert twice("POST", "/tables/rename", rename)[0].status_code == 204
    assert catalog.list_tables("ns") == [("ns", "t2")]
    # commitTransaction: one commit, one new metadata file
    before = catalog.load_table("ns.t2").metadata_location
    change = {"identifier": {"namespace": ["ns"], "name": "t2"}, "requirements": [],
              "updates": [{"action": "set-properties", "updates": {"tx": "once"}}]}
    assert twice("POST", "/transactions/commit", {"table-changes": [change]})[0].status_code == 204
    log = catalog.load_table("ns.t2").metadata.metadata_log
    assert [e.metadata_file for e in log][-1] == before  # exactly one commit after `before`
    # registerTable (of the dropped, unpurged table's metadata): one table
    location = catalog.load_table("ns.t2").metadata_location
    assert http.delete(f"{prefix_url}/namespaces/ns/tables/t2", params={"purgeRequested": "false"}).status_code == 204
    first, _ = twice("POST", "/namespaces/ns/register", {"name": "again", "metadata-location": location})
    assert first.status_code == 200 and catalog.list_tables("ns") == [("ns", "again")]

    # views: replace (one new version), rename, register, drop
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["ns"],
               "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}
    created = http.post(
        f"{prefix_url}/namespaces/ns/views", json={"name": "v", "schema": SCHEMA_JSON, "view-version": version}
    )
    view_uuid = created.json()["metadata"]["view-uuid"]
    replace = {
        "requirements": [{"type": "assert-view-uuid", "uuid": view_uuid}],
        "updates": [
            {"action": "add-view-version", "view-version": {**version, "version-id": 2, "representations": [
                {"type": "sql", "sql": "select 2", "dialect": "spark"}]}},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    first, _ = twice("POST", "/namespaces/ns/views/v", replace)
    assert first.status_code == 200
    versions = http.get(f"{prefix_url}/namespaces/ns/views/v").json()["metadata"]["versions"]
    assert [v["version-id"] for v in versions] == [1, 2]
    view_rename = {"source": {"namespace": ["ns"], "name": "v"}, "destination": {"namespace": ["ns"], "name": "w"}}
    assert twice("POST", "/views/rename", view_rename)[0].status_code == 204
    view_location = http.get(f"{prefix_url}/namespaces/ns/views/w").json()["metadata-location"]
    # dropView (204 both times; a second drop would be 404), then registerView of its metadata
    assert twice("DELETE", "/namespaces/ns/views/w?purgeRequested=false")[0].status_code == 204
    registered, _ = twice("POST", "/namespaces/ns/register-view", {"name": "v2", "metadata-location": view_location})
    assert registered.status_code == 200
    assert [i["name"] for i in http.get(f"{prefix_url}/namespaces/ns/views").json()["identifiers"]] == ["v2"]
