"""Every mutation the catalog emits an event for reaches a real NATS subscriber, in order, with its
type, ids, names and actor: tables (create, register, update, rename, drop), views (create,
update, rename, drop), undrop of a view, namespaces (create, properties, move, drop) and
warehouses (create, rename, delete)."""

from __future__ import annotations

import json
import uuid

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from tests.events.support import NatsCollector

MGMT = "/management/v1"


def view_version() -> ViewVersion:
    return ViewVersion(
        version_id=1, schema_id=0, timestamp_ms=1_700_000_000_000, summary={"engine-name": "test"},
        representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id", dialect="spark")],
        default_namespace=["ops"],
    )


def test_every_mutation_emits_its_event_in_order(events_server, idp, tmp_path):
    server = events_server
    token = idp.mint("carol")
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    with NatsCollector(server.nats_url, server.nats_topic) as nats:
        created = http.post(f"{MGMT}/warehouse", json={
            "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}",
            "storage-profile": {"type": "file", "root": str(tmp_path / "main")},
            "delete-profile": {"type": "soft", "expiration-seconds": 3600},
        })
        assert created.status_code == 201, created.text
        wid, wname = created.json()["warehouse-id"], created.json()["name"]
        prefix = f"/catalog/v1/{wid}"
        catalog = RestCatalog("events", uri=server.catalog_url, warehouse=wname, token=token)

        catalog.create_namespace("ops")
        catalog.update_namespace_properties("ops", updates={"owner": "carol"}, removals={"nothing"})
        # a table that is dropped without purge and registered again from its metadata
        source = catalog.create_table("ops.source", schema=pa.schema([("id", pa.int64())]))
        source.append(pa.table({"id": [1, 2]}))
        source_id = str(source.metadata.table_uuid)
        forced = http.delete(
            f"{prefix}/namespaces/ops/tables/source", params={"force": "true", "purgeRequested": "false"}
        )
        assert forced.status_code == 204, forced.text
        registered = catalog.register_table("ops.registered", source.metadata_location)
        registered_id = str(registered.metadata.table_uuid)
        registered.transaction().set_properties({"reviewed": "yes"}).commit_transaction()
        catalog.rename_table("ops.registered", "ops.renamed")
        catalog.drop_table("ops.renamed")

        view = catalog.create_view("ops.v1", Schema(NestedField(1, "id", LongType())), view_version())
        view_id = str(view.metadata.view_uuid)
        replaced = http.post(f"{prefix}/namespaces/ops/views/v1", json={
            "requirements": [{"type": "assert-view-uuid", "uuid": view_id}],
            "updates": [{"action": "set-properties", "updates": {"comment": "events"}}],
        })
        assert replaced.status_code == 200, replaced.text
        renamed = http.post(f"{prefix}/views/rename", json={
            "source": {"namespace": ["ops"], "name": "v1"}, "destination": {"namespace": ["ops"], "name": "v2"},
        })
        assert renamed.status_code == 204, renamed.text
        catalog.drop_view("ops.v2")
        undrop = http.post(f"{MGMT}/warehouse/{wid}/deleted-tabulars/undrop",
                           json={"targets": [{"type": "view", "id": view_id}]})
        assert undrop.status_code == 204, undrop.text
        assert catalog.view_exists("ops.v2")

        catalog.create_namespace("scratch")
        scratch_id = catalog.load_namespace_properties("scratch")["namespace_id"]
        moved = http.post(f"{MGMT}/warehouse/{wid}/namespace/{scratch_id}/move", json={"destination": ["attic"]})
        assert moved.status_code == 200, moved.text
        catalog.drop_namespace("attic")

        other = http.post(f"{MGMT}/warehouse", json={
            "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}",
            "storage-profile": {"type": "file", "root": str(tmp_path / "other")},
        }).json()
        renamed = http.post(f"{MGMT}/warehouse/{other['warehouse-id']}/rename", json={"new-name": other["name"] + "-x"})
        assert renamed.status_code == 200
        assert http.delete(f"{MGMT}/warehouse/{other['warehouse-id']}").status_code == 204

        ours = {wid, other["warehouse-id"]}
        expected = [
            ("createWarehouse", wid, None, wname),
            ("createNamespace", wid, None, "ops"),
            ("updateNamespaceProperties", wid, None, "ops"),
            ("createTable", wid, "table", "source"),
            ("updateTable", wid, "table", "source"),
            ("dropTable", wid, "table", "source"),
            ("registerTable", wid, "table", "registered"),
            ("updateTable", wid, "table", "registered"),
            ("renameTable", wid, "table", "registered"),
            ("dropTable", wid, "table", "renamed"),
            ("createView", wid, "view", "v1"),
            ("updateView", wid, "view", "v1"),
            ("renameView", wid, "view", "v1"),
            ("dropView", wid, "view", "v2"),
            ("undropTabulars", wid, "view", "v2"),
            ("createNamespace", wid, None, "scratch"),
            ("moveNamespace", wid, None, "scratch"),
            ("dropNamespace", wid, None, "attic"),
            ("createWarehouse", other["warehouse-id"], None, other["name"]),
            ("renameWarehouse", other["warehouse-id"], None, other["name"] + "-x"),
            ("deleteWarehouse", other["warehouse-id"], None, other["name"] + "-x"),
        ]
        received = nats.wait_for(lambda ev: len([e for e in ev if e.get("warehouse-id") in ours]) >= len(expected))

    events = [e for e in received if e.get("warehouse-id") in ours]
    assert [(e["type"], e["warehouse-id"], e.get("tabular-type"), e.get("name")) for e in events] == expected
    carol = json.dumps({"type": "principal", "principal": "oidc~carol"}, separators=(",", ":"))
    assert {e["actor"] for e in events} == {carol}
    assert len({e["id"] for e in events}) == len(events)
    by_name = {(e["type"], e.get("name")): e for e in events}
    # registering keeps the table uuid of the metadata: one tabular id across both lives
    assert registered_id == source_id
    table_events = [e["type"] for e in events if e.get("tabular-id") == source_id]
    assert table_events == [
        "createTable", "updateTable", "dropTable", "registerTable", "updateTable", "renameTable", "dropTable"
    ]
    assert by_name[("registerTable", "registered")]["data"]["metadata-location"] == source.metadata_location
    assert by_name[("renameTable", "registered")]["data"]["destination"] == {"namespace": ["ops"], "name": "renamed"}
    view_events = [e for e in events if e.get("tabular-id") == view_id]
    assert [e["type"] for e in view_events] == ["createView", "updateView", "renameView", "dropView", "undropTabulars"]
    assert by_name[("updateView", "v1")]["data"]["updates"][0]["updates"] == {"comment": "events"}
    assert by_name[("updateNamespaceProperties", "ops")]["data"]["updates"] == {"owner": "carol"}
    moved_event = by_name[("moveNamespace", "scratch")]
    assert moved_event["data"] == {"source": ["scratch"], "destination": ["attic"]}
    assert moved_event["namespace-id"] == scratch_id == by_name[("dropNamespace", "attic")]["namespace-id"]
