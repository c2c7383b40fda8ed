"""Catalog rules as Lakekeeper has them, through raw HTTP on both backends: /config, namespace
depth and location, table locations, register with overwrite, ``snapshots=refs``, keyset pages."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.catalog.helpers import SCHEMA, error, ns_path

NIL = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def cat(http, prefix_url):
    """Raw HTTP on the fresh warehouse (``cat.post("/namespaces", ...)``)."""

    class Catalog:
        def get(self, path, **kw):
            return http.get(prefix_url + path, **kw)

        def post(self, path, **kw):
            return http.post(prefix_url + path, **kw)

        def head(self, path, **kw):
            return http.head(prefix_url + path, **kw)

        def namespace(self, *parts: str) -> dict:
            response = self.post("/namespaces", json={"namespace": list(parts)})
            assert response.status_code == 200, response.text
            return response.json()

        def table(self, namespace: str, name: str, **extra) -> dict:
            response = self.post(f"/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA, **extra})
            assert response.status_code == 200, response.text
            return response.json()

    return Catalog()


# ---------------------------------------------------------------- GET /config


def test_config_needs_a_known_warehouse(http, warehouse):
    for params in ({}, {"warehouse": ""}):
        missing = http.get("/catalog/v1/config", params=params)
        assert missing.status_code == 400
        assert error(missing)["type"] == "GetConfigNoWarehouseProvided"

    unknown = http.get("/catalog/v1/config", params={"warehouse": f"no-such-{uuid.uuid4().hex[:8]}"})
    assert unknown.status_code == 404
    assert error(unknown)["type"] == "NoSuchWarehouseException"

    project = http.get(f"/management/v1/warehouse/{warehouse['id']}").json()["project-id"]
    config = http.get("/catalog/v1/config", params={"warehouse": f"{project}/{warehouse['name']}"})
    assert config.status_code == 200, config.text
    assert config.json()["defaults"]["prefix"] == warehouse["id"]
    # the same name in another project is another (missing) warehouse
    elsewhere = http.get("/catalog/v1/config", params={"warehouse": f"{uuid.uuid4()}/{warehouse['name']}"})
    assert elsewhere.status_code == 404


def test_config_takes_the_project_from_the_header_and_points_clients_back_at_us(http, server, tmp_path_factory):
    from tests.management.helpers import new_file_warehouse

    project = http.post("/management/v1/project", json={"project-name": "elsewhere"}).json()["project-id"]
    warehouse = new_file_warehouse(server.url, tmp_path_factory, project_id=project)
    by_header = http.get(
        "/catalog/v1/config", params={"warehouse": warehouse["name"]}, headers={"x-project-id": project}
    )
    assert by_header.status_code == 200, by_header.text
    assert by_header.json()["defaults"]["prefix"] == warehouse["id"]
    assert by_header.json()["overrides"]["uri"].rstrip("/") == f"{server.url}/catalog"
    # without the header the name is looked up in the default project, where it does not exist
    assert http.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}).status_code == 404


def test_config_endpoints_name_head_and_view_routes(http, warehouse):
    endpoints = http.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}).json()["endpoints"]
    for endpoint in (
        "HEAD /v1/{prefix}/namespaces/{namespace}",
        "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
        "GET /v1/{prefix}/namespaces/{namespace}/views",
        "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "POST /v1/{prefix}/views/rename",
        "POST /v1/{prefix}/transactions/commit",
    ):
        assert endpoint in endpoints


# ---------------------------------------------------------------- namespaces


def test_namespace_depth_is_at_most_five(cat):
    levels = ["l1", "l2", "l3", "l4", "l5"]
    for depth in range(1, 6):
        cat.namespace(*levels[:depth])
    too_deep = cat.post("/namespaces", json={"namespace": [*levels, "l6"]})
    assert too_deep.status_code == 400
    assert error(too_deep) == {
        "message": "Namespace exceeds maximum depth of 5", "type": "NamespaceDepthExceeded", "code": 400
    }
    # Spark probes `l1...l5.t.branch_x` as a table first and needs a 404 to try it as a branch
    probe = cat.get(f"/namespaces/{ns_path([*levels, 't'])}/tables/branch_x")
    assert probe.status_code == 404


def test_namespace_location_is_immutable(cat):
    location = cat.namespace("fixed")["properties"]["location"]
    moved = cat.post("/namespaces/fixed/properties", json={"updates": {"location": location + "elsewhere/"}})
    assert moved.status_code == 400
    assert error(moved)["type"] == "LocationCannotBeUpdated"
    assert error(moved)["message"] == "Namespace property `location` cannot be updated."
    removed = cat.post("/namespaces/fixed/properties", json={"removals": ["location"]})
    assert removed.status_code == 400
    assert error(removed)["type"] == "LocationCannotBeRemoved"
    assert cat.get("/namespaces/fixed").json()["properties"]["location"] == location


# ---------------------------------------------------------------- tables


def test_create_table_at_a_location_with_files_is_refused(cat):
    base = cat.namespace("loc")["properties"]["location"].rstrip("/")
    taken = f"{base}/custom"
    leftover = Path(unquote(urlsplit(taken).path)) / "data" / "00000-old.parquet"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"old data")

    refused = cat.post("/namespaces/loc/tables", json={"name": "t", "schema": SCHEMA, "location": taken})
    assert refused.status_code == 400
    assert error(refused)["type"] == "InvalidLocation"
    assert "Unexpected files in location, tabular locations have to be empty" in error(refused)["message"]
    assert cat.head("/namespaces/loc/tables/t").status_code == 404
    assert leftover.read_bytes() == b"old data"  # nothing of it was touched
    # an empty client-chosen location is fine
    assert cat.table("loc", "t", location=f"{base}/fresh")["metadata"]["location"] == f"{base}/fresh"


def test_register_with_overwrite_replaces_the_metadata(cat):
    cat.namespace("reg")
    first = cat.table("reg", "t")["metadata-location"]
    changed = cat.post("/namespaces/reg/tables/t", json={
        "updates": [{"action": "set-properties", "updates": {"stage": "two"}}]
    })
    assert changed.status_code == 200, changed.text

    body = {"name": "t", "metadata-location": first}
    conflict = cat.post("/namespaces/reg/register", json=body)
    assert conflict.status_code == 409
    assert error(conflict)["type"] == "AlreadyExistsException"

    replaced = cat.post("/namespaces/reg/register", json={**body, "overwrite": True})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["metadata-location"] == first
    loaded = cat.get("/namespaces/reg/tables/t").json()
    assert loaded["metadata-location"] == first
    assert "stage" not in loaded["metadata"]["properties"]


def test_load_with_snapshots_refs_returns_only_referenced_snapshots(cat):
    cat.namespace("snaps")
    location = cat.table("snaps", "t", properties={"format-version": "2"})["metadata"]["location"]
    now = int(time.time() * 1000)

    def snapshot(snapshot_id: int, parent: int | None, sequence: int) -> dict:
        return {
            "snapshot-id": snapshot_id, "parent-snapshot-id": parent, "sequence-number": sequence,
            "timestamp-ms": now + sequence, "manifest-list": f"{location}/metadata/snap-{snapshot_id}.avro",
            "summary": {"operation": "append"}, "schema-id": 0,
        }  # fmt: skip

    updates = [
        {"action": "add-snapshot", "snapshot": snapshot(101, None, 1)},
        {"action": "add-snapshot", "snapshot": snapshot(102, 101, 2)},
        {"action": "add-snapshot", "snapshot": snapshot(103, 102, 3)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 103},
    ]
    committed = cat.post("/namespaces/snaps/tables/t", json={"updates": updates})
    assert committed.status_code == 200, committed.text

    def snapshot_ids(mode: str) -> list[int]:
        response = cat.get("/namespaces/snaps/tables/t", params={"snapshots": mode})
        assert response.status_code == 200, response.text
        return sorted(s["snapshot-id"] for s in response.json()["metadata"]["snapshots"])

    assert snapshot_ids("all") == [101, 102, 103]
    assert snapshot_ids("refs") == [103]
    tagged = cat.post("/namespaces/snaps/tables/t", json={
        "updates": [{"action": "set-snapshot-ref", "ref-name": "first", "type": "tag", "snapshot-id": 101}]
    })
    assert tagged.status_code == 200, tagged.text
    assert snapshot_ids("refs") == [101, 103]
    assert snapshot_ids("all") == [101, 102, 103]


# ---------------------------------------------------------------- keyset pagination


def _pages(cat, path: str, key: str, between) -> list:
    """Every item of a listing by pages of 2, calling ``between()`` after the first page."""
    items, token, first = [], None, True
    while True:
        params = {"pageSize": 2, **({"pageToken": token} if token else {})}
        page = cat.get(path, params=params)
        assert page.status_code == 200, page.text
        items += page.json()[key]
        token = page.json().get("next-page-token")
        if first:
            between()
            first = False
        if not token:
            return items


def test_table_pages_are_stable_under_concurrent_creates(cat):
    cat.namespace("pages")
    for name in ("b", "d", "f", "h"):
        cat.table("pages", name)

    def create_around_the_cursor():
        cat.table("pages", "a")  # before the cursor ("d"): belongs to a page already read
        cat.table("pages", "c")
        cat.table("pages", "e")  # after it: the next page shows it

    names = [i["name"] for i in _pages(cat, "/namespaces/pages/tables", "identifiers", create_around_the_cursor)]
    assert names == ["b", "d", "e", "f", "h"]


def test_namespace_pages_are_stable_under_concurrent_creates(cat):
    for name in ("b", "d", "f", "h"):
        cat.namespace(name)

    def create_around_the_cursor():
        cat.namespace("a")
        cat.namespace("c")
        cat.namespace("e")

    namespaces = _pages(cat, "/namespaces", "namespaces", create_around_the_cursor)
    assert namespaces == [["b"], ["d"], ["e"], ["f"], ["h"]]


# ---------------------------------------------------------------- metadata files


def _metadata_files(location: str) -> list[str]:
    return sorted(p.name for p in (Path(unquote(urlsplit(location).path)) / "metadata").iterdir())


def _set_properties(cat, namespace: str, name: str, **properties: str):
    return cat.post(
        f"/namespaces/{namespace}/tables/{name}",
        json={"updates": [{"action": "set-properties", "updates": properties}]},
    )


def test_metadata_codec_none_writes_plain_json_and_unknown_codecs_are_refused(cat):
    cat.namespace("codec")
    plain = cat.table("codec", "plain", properties={"write.metadata.compression-codec": "none"})
    assert plain["metadata-location"].endswith(".metadata.json")
    assert not plain["metadata-location"].endswith(".gz.metadata.json")
    Path(unquote(urlsplit(plain["metadata-location"]).path)).read_bytes().decode()  # plain UTF-8 JSON

    zipped = cat.table("codec", "zipped")  # Lakekeeper's default codec is gzip
    assert zipped["metadata-location"].endswith(".gz.metadata.json")

    refused = _set_properties(cat, "codec", "zipped", **{"write.metadata.compression-codec": "zstd"})
    assert refused.status_code == 400
    assert error(refused)["type"] == "UnsupportedCompressionCodec"
    assert "zstd" in error(refused)["message"]
    unchanged = cat.get("/namespaces/codec/tables/zipped").json()
    assert unchanged["metadata-location"] == zipped["metadata-location"]
    assert _metadata_files(zipped["metadata"]["location"]) == [zipped["metadata-location"].rsplit("/", 1)[-1]]


@pytest.mark.parametrize(("delete_after_commit", "kept"), [("false", 4), ("true", 2)])
def test_old_metadata_files_are_deleted_only_when_the_table_says_so(cat, delete_after_commit, kept):
    cat.namespace("history")
    properties = {
        "write.metadata.previous-versions-max": "1",
        "write.metadata.delete-after-commit.enabled": delete_after_commit,
    }
    created = cat.table("history", "t", properties=properties)
    for i in range(3):
        assert _set_properties(cat, "history", "t", step=str(i)).status_code == 200
    loaded = cat.get("/namespaces/history/tables/t").json()
    assert len(loaded["metadata"]["metadata-log"]) == 1  # the log is bounded either way
    files = _metadata_files(created["metadata"]["location"])
    assert len(files) == kept
    assert loaded["metadata-location"].rsplit("/", 1)[-1] in files


# ---------------------------------------------------------------- requirements


def test_sort_order_and_ref_requirements_are_409_with_iceberg_messages(cat):
    cat.namespace("req")
    created = cat.table("req", "t")
    sorted_by_id = {"order-id": 1, "fields": [
        {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}
    ]}
    changed = cat.post("/namespaces/req/tables/t", json={
        "requirements": [{"type": "assert-default-sort-order-id", "default-sort-order-id": 0}],
        "updates": [{"action": "add-sort-order", "sort-order": sorted_by_id},
                    {"action": "set-default-sort-order", "sort-order-id": -1}],
    })
    assert changed.status_code == 200, changed.text

    stale = cat.post("/namespaces/req/tables/t", json={
        "requirements": [{"type": "assert-default-sort-order-id", "default-sort-order-id": 0}],
        "updates": [{"action": "set-properties", "updates": {"x": "1"}}],
    })
    assert stale.status_code == 409
    assert error(stale)["type"] == "CommitFailedException"
    assert error(stale)["message"] == "Requirement failed: default sort order changed: expected id 0 != 1"

    missing_ref = cat.post("/namespaces/req/tables/t", json={
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": 42}],
        "updates": [{"action": "set-properties", "updates": {"x": "1"}}],
    })
    assert missing_ref.status_code == 409
    assert error(missing_ref)["message"] == "Requirement failed: branch or tag audit is missing, expected 42"
    loaded = cat.get("/namespaces/req/tables/t").json()
    assert "x" not in loaded["metadata"]["properties"]
    assert loaded["metadata"]["default-sort-order-id"] == 1
    assert loaded["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
