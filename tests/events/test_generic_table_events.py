"""Every generic-table mutation reaches a real NATS subscriber as Lakekeeper's CloudEvent, in order:
``createGenericTable``, ``renameGenericTable``, ``dropGenericTable`` and ``undropTabulars``, with
``tabular-type`` ``generic-table``, the generic table's id, its name and namespace, and the actor."""

from __future__ import annotations

import json
import uuid

import httpx

from tests.events.support import NatsCollector

MGMT = "/management/v1"


def test_generic_table_mutations_emit_their_events(events_server, idp, tmp_path):
    server = events_server
    token = idp.mint("carol")
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    with NatsCollector(server.nats_url, server.nats_topic) as nats:
        created = http.post(f"{MGMT}/warehouse", json={
            "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}",
            "storage-profile": {"type": "file", "root": str(tmp_path)},
            "delete-profile": {"type": "soft", "expiration-seconds": 3600},
        })
        assert created.status_code == 201, created.text
        wid = created.json()["warehouse-id"]
        assert http.post(f"/catalog/v1/{wid}/namespaces", json={"namespace": ["ai"]}).status_code == 200
        gt = f"/lakekeeper/v1/{wid}"
        body = {"name": "frames", "format": "lance", "properties": {"embedding-dim": "8"}}
        assert http.post(f"{gt}/namespaces/ai/generic-tables", json=body).status_code == 200
        [ident] = http.get(f"{gt}/namespaces/ai/generic-tables").json()["identifiers"]
        rename = {"source": {"namespace": ["ai"], "name": "frames"},
                  "destination": {"namespace": ["ai"], "name": "clips"}}
        assert http.post(f"{gt}/generic-tables/rename", json=rename).status_code == 204
        assert http.delete(f"{gt}/namespaces/ai/generic-tables/clips").status_code == 204
        undrop = http.post(f"{MGMT}/warehouse/{wid}/deleted-tabulars/undrop",
                           json={"targets": [{"type": "generic-table", "id": ident["id"]}]})
        assert undrop.status_code == 204, undrop.text
        received = nats.wait_for(lambda ev: len([e for e in ev if e.get("tabular-id") == ident["id"]]) >= 4)

    events = [e for e in received if e.get("tabular-id") == ident["id"]]
    assert [(e["type"], e["tabular-type"], e["name"], e["namespace"]) for e in events] == [
        ("createGenericTable", "generic-table", "frames", "ai"),
        ("renameGenericTable", "generic-table", "frames", "ai"),
        ("dropGenericTable", "generic-table", "clips", "ai"),
        ("undropTabulars", "generic-table", "clips", "ai"),
    ]
    assert {e["warehouse-id"] for e in events} == {wid}
    carol = json.dumps({"type": "principal", "principal": "oidc~carol"}, separators=(",", ":"))
    assert {e["actor"] for e in events} == {carol}
    assert events[0]["data"] == body
    assert events[1]["data"] == rename
    assert events[2]["data"] is None
