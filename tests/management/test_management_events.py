"""Warehouse lifecycle changes publish CloudEvents (seen through the built-in ``log`` sink)."""

from __future__ import annotations

import json

import httpx

from tests.management.helpers import wait_for

MGMT = "/management/v1"


def cloudevents(server) -> list[dict]:
    events = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message", "")
        if message.startswith("cloudevent "):
            events.append(json.loads(message.removeprefix("cloudevent ")))
    return events


def test_warehouse_create_rename_delete_publish_events(make_server, tmp_path):
    server = make_server({"LAKEKEEPER__LOG_CLOUDEVENTS": "true"})
    client = httpx.Client(base_url=server.url, timeout=30)
    created = client.post(
        f"{MGMT}/warehouse",
        # not tmp_path itself: the test's SQLite database lies there, which a warehouse may not contain
        json={"warehouse-name": "evented", "storage-profile": {"type": "file", "root": str(tmp_path / "wh")}},
    )
    wid = created.json()["warehouse-id"]
    client.post(f"{MGMT}/warehouse/{wid}/rename", json={"new-name": "evented-2"})
    assert client.delete(f"{MGMT}/warehouse/{wid}").status_code == 204

    def mine():
        found = [e for e in cloudevents(server) if e.get("warehouse-id") == wid]
        return found if len(found) == 3 else None

    events = wait_for(mine, what="three warehouse events")
    assert [e["type"] for e in events] == ["createWarehouse", "renameWarehouse", "deleteWarehouse"]
    assert events[1]["data"] == {"old-name": "evented", "new-name": "evented-2"}
    assert all(e["project-id"] == "00000000-0000-0000-0000-000000000000" for e in events)
