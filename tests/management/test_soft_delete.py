"""Dropping tables with PyIceberg: soft delete, undrop, expiry and purge, protection, warehouse delete."""

from __future__ import annotations

import os
import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

from lakekeeper_testing.server import create_file_warehouse
from tests.management.helpers import wait_for

MGMT = "/management/v1"
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})


def files_under(location: str) -> list[str]:
    path = location.removeprefix("file://")
    return [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]


def new_warehouse(server, tmp_path_factory, delete_profile=None) -> tuple[str, RestCatalog]:
    name = f"wh-{uuid.uuid4().hex[:10]}"
    root = str(tmp_path_factory.mktemp(name))
    warehouse_id = create_file_warehouse(server.url, name, root, delete_profile=delete_profile)
    return warehouse_id, RestCatalog("test", uri=server.catalog_url, warehouse=name)


def make_table(catalog: RestCatalog, ident: str):
    namespace = ident.rsplit(".", 1)[0]
    if not catalog.namespace_exists(namespace):
        catalog.create_namespace(namespace)
    table = catalog.create_table(ident, schema=ROWS.schema)
    table.append(ROWS)
    return catalog.load_table(ident)


def deleted(http: httpx.Client, warehouse_id: str) -> list[dict]:
    response = http.get(f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars")
    assert response.status_code == 200, response.text
    return response.json()["tabulars"]


def tasks_of(http: httpx.Client, warehouse_id: str, queue: str, entity_id: str) -> list[dict]:
    response = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/task/list",
        json={"queue-name": [queue], "entities": [{"type": "table", "table-id": entity_id}]},
    )
    assert response.status_code == 200, response.text
    return response.json()["tasks"]


def test_soft_delete_undrop_and_purge_after_expiry(server, http, tmp_path_factory):
    warehouse_id, catalog = new_warehouse(
        server, tmp_path_factory, {"type": "soft", "expiration-seconds": 3600}
    )
    table = make_table(catalog, "sales.orders")
    table_id = str(table.metadata.table_uuid)
    location = table.metadata.location

    catalog.drop_table("sales.orders")  # PyIceberg sends purgeRequested=False
    with pytest.raises(NoSuchTableError):
        catalog.load_table("sales.orders")
    [entry] = deleted(http, warehouse_id)
    assert entry["id"] == table_id and entry["name"] == "orders" and entry["namespace"] == ["sales"]
    assert entry["typ"] == "table" and entry["warehouse-id"] == warehouse_id
    assert entry["expiration-date"] > entry["deleted-at"]
    assert files_under(location)  # soft-deleted data stays

    undrop = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars/undrop",
        json={"targets": [{"type": "table", "id": table_id}]},
    )
    assert undrop.status_code == 204, undrop.text
    assert deleted(http, warehouse_id) == []
    assert tasks_of(http, warehouse_id, "soft_deletion", table_id)[0]["status"] == "CANCELLED"
    restored = catalog.load_table("sales.orders")
    assert restored.scan().to_arrow().sort_by("id").equals(ROWS)

    # drop again, this time with purge, under a short expiration: the table really expires
    profile = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/delete-profile",
        json={"delete-profile": {"type": "soft", "expiration-seconds": 2}},
    )
    assert profile.status_code == 200, profile.text
    catalog.purge_table("sales.orders")
    assert [t["id"] for t in deleted(http, warehouse_id)] == [table_id]
    wait_for(lambda: not files_under(location), what="the expired table's files to be purged")
    assert deleted(http, warehouse_id) == []
    # the files go first, then the attempt is recorded
    wait_for(
        lambda: [p["status"] for p in tasks_of(http, warehouse_id, "tabular_purge", table_id)] == ["SUCCESS"],
        what="the purge task to be recorded as successful",
    )


def test_name_of_soft_deleted_table_is_reusable_and_blocks_undrop(server, http, tmp_path_factory):
    warehouse_id, catalog = new_warehouse(
        server, tmp_path_factory, {"type": "soft", "expiration-seconds": 3600}
    )
    old = make_table(catalog, "ns.t")
    catalog.drop_table("ns.t")
    make_table(catalog, "ns.t")
    conflict = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars/undrop",
        json={"targets": [{"type": "table", "id": str(old.metadata.table_uuid)}]},
    )
    assert conflict.status_code == 409
    unknown = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars/undrop",
        json={"targets": [{"type": "table", "id": str(uuid.uuid4())}]},
    )
    assert unknown.status_code == 404


def test_protected_table_needs_force(server, http, prefix_url, catalog, warehouse):
    table = make_table(catalog, "prot.t")
    table_id = str(table.metadata.table_uuid)
    url = f"{MGMT}/warehouse/{warehouse['id']}/table/{table_id}/protection"
    assert http.get(url).json()["protected"] is False
    set_ = http.post(url, json={"protected": True})
    assert set_.status_code == 200 and set_.json()["protected"] is True
    assert "updated_at" in set_.json()  # Lakekeeper's ProtectionResponse spells it so (no kebab-case)

    refused = http.delete(f"{prefix_url}/namespaces/prot/tables/t")
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "TableProtected"
    assert catalog.load_table("prot.t")

    forced = http.delete(f"{prefix_url}/namespaces/prot/tables/t", params={"force": "true"})
    assert forced.status_code == 204
    with pytest.raises(NoSuchTableError):
        catalog.load_table("prot.t")
    wait_for(lambda: not files_under(table.metadata.location), what="purge (purgeRequested defaults to true)")


def test_drop_without_purge_keeps_files_on_a_hard_delete_warehouse(server, http, catalog, prefix_url):
    table = make_table(catalog, "keep.t")
    response = http.delete(f"{prefix_url}/namespaces/keep/tables/t", params={"purgeRequested": "false"})
    assert response.status_code == 204
    with pytest.raises(NoSuchTableError):
        catalog.load_table("keep.t")
    assert files_under(table.metadata.location)


@pytest.mark.slow  # own server processes or waits out timeouts
def test_warehouse_delete_is_refused_while_purges_are_pending(make_server, tmp_path_factory):
    # a server without purge workers: the purge task stays pending
    idle = make_server({"LAKEKEEPER__TASK_TABULAR_PURGE_WORKERS": "0"})
    http = httpx.Client(base_url=idle.url, timeout=30)
    warehouse_id, catalog = new_warehouse(idle, tmp_path_factory)
    table = make_table(catalog, "ns.t")
    catalog.purge_table("ns.t")
    catalog.drop_namespace("ns")
    refused = http.delete(f"{MGMT}/warehouse/{warehouse_id}")
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "WarehouseHasUnfinishedTasks"
    assert files_under(table.metadata.location)

    # a server that does purge finishes the task; then the warehouse can go
    worker = make_server()
    wait_for(lambda: not files_under(table.metadata.location), what="the purge")
    wait_for(lambda: http.delete(f"{MGMT}/warehouse/{warehouse_id}").status_code == 204, what="warehouse delete")
    worker.stop()


def test_deactivated_warehouse_disappears_from_the_catalog(server, http, catalog, warehouse):
    catalog.create_namespace("visible")
    assert http.post(f"{MGMT}/warehouse/{warehouse['id']}/deactivate").status_code == 200
    config = http.get(f"{server.catalog_url}/v1/config", params={"warehouse": warehouse["name"]})
    assert config.status_code == 404
    listing = http.get(f"{server.catalog_url}/v1/{warehouse['id']}/namespaces")
    assert listing.status_code == 404
    assert http.post(f"{MGMT}/warehouse/{warehouse['id']}/activate").status_code == 200
    assert ("visible",) in catalog.list_namespaces()


def test_deleted_tabulars_are_paginated_and_cancelling_an_expiration_restores(server, http, tmp_path_factory):
    warehouse_id, catalog = new_warehouse(
        server, tmp_path_factory, {"type": "soft", "expiration-seconds": 3600}
    )
    ids = []
    for name in ("a", "b", "c"):
        ids.append(str(make_table(catalog, f"page.{name}").metadata.table_uuid))
        catalog.drop_table(f"page.{name}")
    first = http.get(f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars", params={"pageSize": 2}).json()
    assert len(first["tabulars"]) == 2 and first["next-page-token"]
    second = http.get(
        f"{MGMT}/warehouse/{warehouse_id}/deleted-tabulars",
        params={"pageSize": 2, "pageToken": first["next-page-token"]},
    ).json()
    assert len(second["tabulars"]) == 1 and second["next-page-token"] is None
    assert sorted(t["id"] for t in first["tabulars"] + second["tabulars"]) == sorted(ids)

    # cancelling the expiration task of a soft-deleted table brings it back (as Lakekeeper does)
    [expiration] = tasks_of(http, warehouse_id, "soft_deletion", ids[0])
    cancel = http.post(
        f"{MGMT}/warehouse/{warehouse_id}/task/control",
        json={"task-ids": [expiration["task-id"]], "action": {"action-type": "cancel"}},
    )
    assert cancel.status_code == 204
    assert catalog.load_table("page.a").scan().to_arrow().num_rows == 3
    assert len(deleted(http, warehouse_id)) == 2


def test_search_tabular_finds_tables_by_name_namespace_or_id(http, catalog, warehouse):
    orders = make_table(catalog, "shop.orders")
    make_table(catalog, "shop.customers")
    url = f"{MGMT}/warehouse/{warehouse['id']}/search-tabular"
    found = http.post(url, json={"search": "ORDER"}).json()["tabulars"]
    assert [(t["namespace-name"], t["tabular-name"]) for t in found] == [(["shop"], "orders")]
    assert found[0]["tabular-id"] == {"type": "table", "id": str(orders.metadata.table_uuid)}
    assert {t["tabular-name"] for t in http.post(url, json={"search": "shop"}).json()["tabulars"]} == {
        "orders", "customers"
    }
    by_id = http.post(url, json={"search": str(orders.metadata.table_uuid)}).json()["tabulars"]
    assert by_id[0]["tabular-name"] == "orders" and by_id[0]["distance"] == 0
    assert http.post(url, json={"search": 5}).status_code == 400
