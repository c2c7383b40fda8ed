"""Namespaces: recursive drop (force, purge, protection) and move/rename."""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pytest
from pyiceberg.exceptions import NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError

from lakekeeper_testing.server import create_file_warehouse
from tests.management.helpers import wait_for

# the catalog table endpoints are built in parallel; these tests run as soon as they exist
pytest.importorskip("lakekeeper_host.server.tables", reason="catalog table endpoints not available yet")

MGMT = "/management/v1"
ROWS = pa.table({"id": pa.array([1, 2], pa.int64())})


def files_under(location: str) -> list[str]:
    path = location.removeprefix("file://")
    return [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]


def table_in(catalog, ident: str):
    table = catalog.create_table(ident, schema=ROWS.schema)
    table.append(ROWS)
    return catalog.load_table(ident)


def namespace_id(http, prefix_url: str, namespace: str) -> str:
    response = http.get(f"{prefix_url}/namespaces/{namespace}", params={"returnUuid": "true"})
    assert response.status_code == 200, response.text
    return response.json()["namespace-uuid"]


def test_recursive_drop_with_purge(http, catalog, prefix_url):
    catalog.create_namespace("top")
    catalog.create_namespace("top.child")
    kept = table_in(catalog, "top.a")
    nested = table_in(catalog, "top.child.b")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("top")

    response = http.delete(f"{prefix_url}/namespaces/top", params={"recursive": "true", "purge": "true"})
    assert response.status_code == 204, response.text
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("top.child")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("top.a")
    wait_for(lambda: not files_under(kept.metadata.location) and not files_under(nested.metadata.location),
             what="purge of both tables")


def test_recursive_drop_respects_protection_and_keeps_files_without_purge(http, catalog, prefix_url, warehouse):
    catalog.create_namespace("guarded")
    table = table_in(catalog, "guarded.t")
    table_id = str(table.metadata.table_uuid)
    http.post(f"{MGMT}/warehouse/{warehouse['id']}/table/{table_id}/protection", json={"protected": True})
    refused = http.delete(f"{prefix_url}/namespaces/guarded", params={"recursive": "true"})
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "ChildTabularProtected"

    ns_id = namespace_id(http, prefix_url, "guarded")
    protect = http.post(f"{MGMT}/warehouse/{warehouse['id']}/namespace/{ns_id}/protection", json={"protected": True})
    assert protect.status_code == 200 and protect.json()["protected"] is True
    assert http.get(f"{MGMT}/warehouse/{warehouse['id']}/namespace/{ns_id}/protection").json()["protected"] is True
    refused = http.delete(f"{prefix_url}/namespaces/guarded", params={"recursive": "true"})
    assert refused.json()["error"]["type"] == "NamespaceProtected"

    forced = http.delete(f"{prefix_url}/namespaces/guarded", params={"recursive": "true", "force": "true"})
    assert forced.status_code == 204
    assert files_under(table.metadata.location)  # purge was not requested


def test_recursive_drop_in_soft_delete_warehouse_needs_force(http, server, tmp_path_factory):
    from pyiceberg.catalog.rest import RestCatalog

    name = f"wh-{uuid.uuid4().hex[:10]}"
    warehouse_id = create_file_warehouse(
        server.url, name, str(tmp_path_factory.mktemp(name)), delete_profile={"type": "soft", "expiration-seconds": 60}
    )
    catalog = RestCatalog("soft", uri=server.catalog_url, warehouse=name)
    catalog.create_namespace("ns")
    table_in(catalog, "ns.t")
    prefix = f"{server.url}/catalog/v1/{warehouse_id}"
    refused = http.delete(f"{prefix}/namespaces/ns", params={"recursive": "true"})
    assert refused.status_code == 400
    assert refused.json()["error"]["type"] == "NamespaceDeleteNotAllowed"
    # a soft-deleted table still blocks a plain drop
    catalog.drop_table("ns.t")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("ns")
    assert http.delete(f"{prefix}/namespaces/ns", params={"recursive": "true", "force": "true"}).status_code == 204
    assert http.get(f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars").json()["tabulars"] == []


def test_move_and_rename_namespace(http, catalog, prefix_url, warehouse):
    catalog.create_namespace("src")
    catalog.create_namespace("dst")
    table = table_in(catalog, "src.t")
    ns_id = namespace_id(http, prefix_url, "src")
    move_url = f"{MGMT}/warehouse/{warehouse['id']}/namespace/{ns_id}/move"

    renamed = http.post(move_url, json={"destination": ["renamed"]})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json() == {"namespace": ["renamed"], "namespace-id": ns_id, "parent-namespace-id": None}
    assert http.post(move_url, json={"destination": ["renamed"]}).status_code == 200  # retry is a no-op

    dst_id = namespace_id(http, prefix_url, "dst")
    moved = http.post(move_url, json={"destination": ["dst", "inner"]})
    assert moved.status_code == 200
    assert moved.json()["parent-namespace-id"] == dst_id
    loaded = catalog.load_table("dst.inner.t")
    assert str(loaded.metadata.table_uuid) == str(table.metadata.table_uuid)
    assert loaded.metadata.location == table.metadata.location
    assert loaded.scan().to_arrow().num_rows == 2

    dst_move = f"{MGMT}/warehouse/{warehouse['id']}/namespace/{dst_id}/move"
    has_children = http.post(dst_move, json={"destination": ["elsewhere"]})
    assert has_children.status_code == 409 and has_children.json()["error"]["type"] == "NamespaceHasChildren"
    catalog.create_namespace("taken")
    exists = http.post(move_url, json={"destination": ["taken"]})
    assert exists.status_code == 409
    missing_parent = http.post(move_url, json={"destination": ["nowhere", "x"]})
    assert missing_parent.status_code == 404
    empty = http.post(move_url, json={"destination": []})
    assert empty.status_code == 400
    reserved = http.post(move_url, json={"destination": ["system"]})
    assert reserved.status_code == 400
