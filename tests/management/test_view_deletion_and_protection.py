"""Views under soft deletion and protection; the ``namespaceId`` filter of deleted tabulars; a
soft-deleted table that expires without purge; moving a protected namespace."""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.server import create_file_warehouse
from tests.management.helpers import create_view, wait_for

MGMT = "/management/v1"
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


def files_under(location: str) -> list[str]:
    path = location.removeprefix("file://")
    return [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]


def namespace_id(http, prefix_url: str, namespace: str) -> str:
    return http.get(f"{prefix_url}/namespaces/{namespace}", params={"returnUuid": "true"}).json()["namespace-uuid"]


def deleted(http, warehouse_id: str, **params) -> list[dict]:
    response = http.get(f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars", params=params)
    assert response.status_code == 200, response.text
    return response.json()["tabulars"]


def test_protected_view_is_dropped_only_with_force(http, catalog, prefix_url, warehouse):
    catalog.create_namespace("guarded")
    view = create_view(http, prefix_url, "guarded", "v")
    view_id = view["metadata"]["view-uuid"]
    url = f"{MGMT}/warehouse/{warehouse['id']}/view/{view_id}/protection"
    assert http.post(url, json={"protected": True}).json()["protected"] is True

    refused = http.delete(f"{prefix_url}/namespaces/guarded/views/v")
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "ViewProtected"
    assert http.get(f"{prefix_url}/namespaces/guarded/views/v").status_code == 200

    assert http.delete(f"{prefix_url}/namespaces/guarded/views/v", params={"force": "true"}).status_code == 204
    assert http.get(f"{prefix_url}/namespaces/guarded/views/v").status_code == 404


def test_protected_namespace_moves_only_with_force_and_stays_protected(http, catalog, prefix_url, warehouse):
    catalog.create_namespace("vault")
    ns_id = namespace_id(http, prefix_url, "vault")
    protection = f"{MGMT}/warehouse/{warehouse['id']}/namespace/{ns_id}/protection"
    assert http.post(protection, json={"protected": True}).status_code == 200
    move = f"{MGMT}/warehouse/{warehouse['id']}/namespace/{ns_id}/move"

    refused = http.post(move, json={"destination": ["vault2"]})
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "NamespaceProtected"
    assert ("vault",) in catalog.list_namespaces()

    moved = http.post(move, json={"destination": ["vault2"], "force": True})
    assert moved.status_code == 200, moved.text
    assert ("vault2",) in catalog.list_namespaces() and ("vault",) not in catalog.list_namespaces()
    assert http.get(protection).json()["protected"] is True


def test_soft_deleted_view_is_listed_and_undropped_and_a_table_expires_without_purge(server, http, tmp_path_factory):
    name = f"wh-{uuid.uuid4().hex[:10]}"
    soft = {"type": "soft", "expiration-seconds": 3600}
    warehouse_id = create_file_warehouse(server.url, name, str(tmp_path_factory.mktemp(name)), delete_profile=soft)
    catalog = RestCatalog("soft", uri=server.catalog_url, warehouse=name)
    prefix_url = f"{server.catalog_url}/v1/{warehouse_id}"
    catalog.create_namespace("a")
    catalog.create_namespace("b")
    view = create_view(http, prefix_url, "a", "v")
    view_id = view["metadata"]["view-uuid"]
    table = catalog.create_table("b.t", schema=ROWS.schema)
    table.append(ROWS)
    table = catalog.load_table("b.t")

    assert http.delete(f"{prefix_url}/namespaces/a/views/v").status_code == 204
    assert http.get(f"{prefix_url}/namespaces/a/views/v").status_code == 404
    catalog.drop_table("b.t")  # PyIceberg: purgeRequested=false
    assert {(t["typ"], t["name"]) for t in deleted(http, warehouse_id)} == {("view", "v"), ("table", "t")}
    [only_a] = deleted(http, warehouse_id, namespaceId=namespace_id(http, prefix_url, "a"))
    assert (only_a["id"], only_a["typ"], only_a["namespace"]) == (view_id, "view", ["a"])
    assert [t["id"] for t in deleted(http, warehouse_id, namespaceId=namespace_id(http, prefix_url, "b"))] == [
        str(table.metadata.table_uuid)
    ]

    undrop = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars/undrop", json={"targets": [{"type": "view", "id": view_id}]}
    )
    assert undrop.status_code == 204, undrop.text
    restored = http.get(f"{prefix_url}/namespaces/a/views/v")
    assert restored.status_code == 200
    assert restored.json()["metadata-location"] == view["metadata-location"]
    assert restored.json()["metadata"] == view["metadata"]
    assert [t["typ"] for t in deleted(http, warehouse_id)] == ["table"]

    # the table was dropped without purge: when it expires its row goes, its files stay
    [expiration] = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/task/list", json={"queue-name": ["soft_deletion"], "status": ["SCHEDULED"]}
    ).json()["tasks"]
    run_now = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/task/control",
        json={"task-ids": [expiration["task-id"]], "action": {"action-type": "run-now"}},
    )
    assert run_now.status_code == 204
    wait_for(lambda: deleted(http, warehouse_id) == [], what="the soft-deleted table to expire")
    undrop_expired = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars/undrop",
        json={"targets": [{"type": "table", "id": str(table.metadata.table_uuid)}]},
    )
    assert undrop_expired.status_code == 404
    purges = http.post(f"{MGMT}/warehouse/{warehouse_id}/task/list", json={"queue-name": ["tabular_purge"]})
    assert purges.json()["tasks"] == []
    assert files_under(table.metadata.location)
