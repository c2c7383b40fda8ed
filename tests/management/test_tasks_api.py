"""Task management endpoints: queue config, listing with filters, details, control actions."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.management.helpers import new_file_warehouse, wait_for

MGMT = "/management/v1"


def iso(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).isoformat().replace("+00:00", "Z")


@pytest.fixture
def client(plugin_server):
    with httpx.Client(base_url=plugin_server.url, timeout=30) as c:
        yield c


def schedule(client, wid, payload, scheduled_for=None):
    body = {"entity": {"type": "warehouse", "warehouse-id": wid}, "payload": payload}
    if scheduled_for:
        body["scheduled-for"] = scheduled_for
    return client.post(f"{MGMT}/warehouse/{wid}/task-queue/test_slow/schedule", json=body)


def listing(client, wid, **filters) -> list[dict]:
    response = client.post(f"{MGMT}/warehouse/{wid}/task/list", json=filters)
    assert response.status_code == 200, response.text
    return response.json()["tasks"]


def control(client, wid, task_ids, action):
    return client.post(f"{MGMT}/warehouse/{wid}/task/control", json={"task-ids": task_ids, "action": action})


def status(client, wid, task_id) -> str:
    return client.get(f"{MGMT}/warehouse/{wid}/task/by-id/{task_id}").json()["status"]


def test_schedule_list_and_details(client, plugin_server, tmp_path, tmp_path_factory):
    wid = new_file_warehouse(plugin_server.url, tmp_path_factory)["id"]
    log_file = str(tmp_path / "log.jsonl")
    first = schedule(client, wid, {"log-file": log_file}, scheduled_for=iso(timedelta(days=1)))
    assert first.status_code == 200
    task_id = first.json()["task-id"]
    duplicate = schedule(client, wid, {"log-file": log_file})
    assert duplicate.status_code == 409
    assert duplicate.json()["error"]["type"] == "TaskAlreadyActive"

    [task] = listing(client, wid)
    assert task["task-id"] == task_id
    assert task["queue-name"] == "test_slow"
    assert task["status"] == "SCHEDULED"
    assert task["entity"]["type"] == "warehouse"
    assert task["warehouse-id"] == wid
    assert listing(client, wid, status=["RUNNING"]) == []
    assert listing(client, wid, **{"queue-name": ["tabular_purge"]}) == []
    assert [t["task-id"] for t in listing(client, wid, **{"queue-name": ["test_slow"]})] == [task_id]
    assert listing(client, wid, **{"created-after": iso(timedelta(hours=1))}) == []
    entity = {"type": "warehouse", "warehouse-id": wid}
    assert [t["task-id"] for t in listing(client, wid, entities=[entity])] == [task_id]

    details = client.get(f"{MGMT}/warehouse/{wid}/task/by-id/{task_id}").json()
    assert details["task-data"] == {"log-file": log_file}
    assert details["attempts"] == []
    assert client.get(f"{MGMT}/warehouse/{wid}/task/by-id/{task_id.replace('7', '8', 1)}").status_code == 404

    # run-now makes it due; it runs and is listed as finished
    assert control(client, wid, [task_id], {"action-type": "run-now"}).status_code == 204
    wait_for(lambda: status(client, wid, task_id) == "SUCCESS", what="task to run")
    [done] = listing(client, wid, status=["SUCCESS"])
    assert done["task-id"] == task_id and done["attempt"] == 1


def test_cancel_run_at_and_stop(client, plugin_server, tmp_path, tmp_path_factory):
    wid = new_file_warehouse(plugin_server.url, tmp_path_factory)["id"]
    log_file = str(tmp_path / "log.jsonl")
    later = schedule(client, wid, {"log-file": log_file}, scheduled_for=iso(timedelta(days=1))).json()["task-id"]
    when = iso(timedelta(days=2))
    assert control(client, wid, [later], {"action-type": "run-at", "scheduled-for": when}).status_code == 204
    assert listing(client, wid)[0]["scheduled-for"][:16] == when[:16]
    assert control(client, wid, [later], {"action-type": "cancel"}).status_code == 204
    assert status(client, wid, later) == "CANCELLED"
    assert listing(client, wid, status=["CANCELLED"])[0]["task-id"] == later
    assert not os.path.exists(log_file)  # it never ran

    # a running task asked to stop ends its attempt; the task is retried and then succeeds
    # (a short heartbeat timeout makes the worker look for the stop request often)
    client.post(
        f"{MGMT}/warehouse/{wid}/task-queue/test_slow/config",
        json={"queue-config": {}, "max-seconds-since-last-heartbeat": 2},
    )
    running = schedule(client, wid, {"log-file": log_file, "sleep-first-attempt": 600}).json()["task-id"]
    wait_for(lambda: status(client, wid, running) == "RUNNING", what="task to start")
    assert control(client, wid, [running], {"action-type": "stop"}).status_code == 204
    wait_for(lambda: status(client, wid, running) == "SUCCESS", what="stopped task to be retried")
    details = client.get(f"{MGMT}/warehouse/{wid}/task/by-id/{running}").json()
    assert [(a["attempt"], a["status"], a["message"]) for a in details["attempts"]] == [
        (1, "FAILED", "Stopped on request")
    ]
    events = [json.loads(line)["event"] for line in open(log_file)]
    assert events == ["start", "start", "end"]


def test_warehouse_delete_is_refused_while_tasks_are_unfinished(client, plugin_server, tmp_path, tmp_path_factory):
    wid = new_file_warehouse(plugin_server.url, tmp_path_factory)["id"]
    task_id = schedule(client, wid, {"log-file": str(tmp_path / "l")}, scheduled_for=iso(timedelta(days=1))).json()[
        "task-id"
    ]
    refused = client.delete(f"{MGMT}/warehouse/{wid}")
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "WarehouseHasUnfinishedTasks"
    control(client, wid, [task_id], {"action-type": "cancel"})
    assert client.delete(f"{MGMT}/warehouse/{wid}").status_code == 204


def test_queue_config_validation(client, plugin_server, tmp_path_factory):
    wid = new_file_warehouse(plugin_server.url, tmp_path_factory)["id"]
    unknown = client.get(f"{MGMT}/warehouse/{wid}/task-queue/nope/config")
    assert unknown.status_code == 400 and unknown.json()["error"]["type"] == "QueueNotFound"
    missing = client.post(f"{MGMT}/warehouse/{wid}/task-queue/soft_deletion/config", json={})
    assert missing.status_code == 400 and "queue-config" in missing.json()["error"]["message"]
    negative = client.post(
        f"{MGMT}/warehouse/{wid}/task-queue/soft_deletion/config",
        json={"queue-config": {}, "max-seconds-since-last-heartbeat": -1},
    )
    assert negative.status_code == 400 and "max-seconds-since-last-heartbeat" in negative.json()["error"]["message"]
    ok = client.post(
        f"{MGMT}/warehouse/{wid}/task-queue/tabular_purge/config",
        json={"queue-config": {}, "max-seconds-since-last-heartbeat": 600},
    )
    assert ok.status_code == 204
    assert client.get(f"{MGMT}/warehouse/{wid}/task-queue/tabular_purge/config").json() == {
        "queue-config": {"queue-name": "tabular_purge"},
        "max-seconds-since-last-heartbeat": 600,
    }
    # the project-level queue is not configured per warehouse
    project_queue = client.get(f"{MGMT}/warehouse/{wid}/task-queue/task_log_cleanup/config")
    assert project_queue.status_code == 400
