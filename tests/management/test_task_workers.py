"""Task workers across real server processes: crash recovery, retries, exclusive claiming."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.management.helpers import new_file_warehouse, wait_for

pytestmark = pytest.mark.slow  # waits out heartbeat and retry timeouts

MGMT = "/management/v1"


def read_log(path) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def schedule(client: httpx.Client, warehouse_id: str, payload: dict, scheduled_for: str | None = None) -> str:
    body = {"entity": {"type": "warehouse", "warehouse-id": warehouse_id}, "payload": payload}
    if scheduled_for:
        body["scheduled-for"] = scheduled_for
    response = client.post(f"{MGMT}/warehouse/{warehouse_id}/task-queue/test_slow/schedule", json=body)
    assert response.status_code == 200, response.text
    return response.json()["task-id"]


def task_details(client: httpx.Client, warehouse_id: str, task_id: str) -> dict:
    response = client.get(f"{MGMT}/warehouse/{warehouse_id}/task/by-id/{task_id}")
    assert response.status_code == 200, response.text
    return response.json()


def test_task_of_a_killed_worker_is_picked_up_after_the_heartbeat_timeout(make_server, tmp_path, tmp_path_factory):
    first = make_server()
    client = httpx.Client(base_url=first.url, timeout=30)
    warehouse = new_file_warehouse(first.url, tmp_path_factory)
    wid = warehouse["id"]
    response = client.post(
        f"{MGMT}/warehouse/{wid}/task-queue/test_slow/config",
        json={"queue-config": {}, "max-seconds-since-last-heartbeat": 2},
    )
    assert response.status_code == 204, response.text
    log_file = str(tmp_path / "runs.jsonl")
    task_id = schedule(client, wid, {"log-file": log_file, "sleep-first-attempt": 600, "sleep": 0})

    # the first server picks the task up and is killed while it runs
    wait_for(lambda: any(e["event"] == "start" for e in read_log(log_file)), what="first attempt to start")
    assert task_details(client, wid, task_id)["status"] == "RUNNING"
    os.killpg(first.process.pid, signal.SIGKILL)
    first.process.wait(10)

    second = make_server()
    client = httpx.Client(base_url=second.url, timeout=30)
    done = wait_for(
        lambda: (d := task_details(client, wid, task_id))["status"] == "SUCCESS" and d, what="task to succeed"
    )

    events = read_log(log_file)
    assert [(e["event"], e["attempt"]) for e in events] == [("start", 1), ("start", 2), ("end", 2)]
    assert events[0]["pid"] != events[1]["pid"]
    assert done["attempt"] == 2
    assert [(a["attempt"], a["status"], a["message"]) for a in done["attempts"]] == [
        (1, "FAILED", "Attempt timed out.")
    ]


def test_failed_attempts_are_retried_and_every_attempt_is_logged(make_server, tmp_path, tmp_path_factory):
    server = make_server({"LAKEKEEPER__TASK_MAX_RETRIES": "3"})
    client = httpx.Client(base_url=server.url, timeout=30)
    wid = new_file_warehouse(server.url, tmp_path_factory)["id"]
    log_file = str(tmp_path / "runs.jsonl")

    retried = schedule(client, wid, {"log-file": log_file, "fail-attempts": 2})
    details = wait_for(lambda: (d := task_details(client, wid, retried))["status"] == "SUCCESS" and d, what="retry")
    assert details["attempt"] == 3
    assert [(a["attempt"], a["status"]) for a in details["attempts"]] == [(2, "FAILED"), (1, "FAILED")]
    assert "planned failure of attempt 1" in details["attempts"][1]["message"]

    other = new_file_warehouse(server.url, tmp_path_factory)["id"]
    hopeless = schedule(client, other, {"log-file": log_file, "fail-attempts": 99})
    details = wait_for(lambda: (d := task_details(client, other, hopeless))["status"] == "FAILED" and d, what="give up")
    assert details["attempt"] == 3  # LAKEKEEPER__TASK_MAX_RETRIES
    starts = [e for e in read_log(log_file) if e["task"] == hopeless and e["event"] == "start"]
    assert len(starts) == 3


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_two_server_processes_never_run_the_same_task(make_server, tmp_path, tmp_path_factory):
    workers = {"LAKEKEEPER__TASK_TEST_SLOW_WORKERS": "4"}
    servers = [make_server(workers), make_server(workers)]
    client = httpx.Client(base_url=servers[0].url, timeout=30)
    log_file = str(tmp_path / "runs.jsonl")
    # due a moment from now, so that both servers compete for all of them; each run takes 0.3 s, so
    # one server's 4 workers cannot take all 16 before the other polls
    due = (datetime.now(UTC) + timedelta(seconds=3)).isoformat().replace("+00:00", "Z")
    task_ids = []
    for _ in range(16):
        wid = new_file_warehouse(servers[0].url, tmp_path_factory)["id"]
        task_ids.append(
            (wid, schedule(client, wid, {"log-file": log_file, "sleep-first-attempt": 0.3}, scheduled_for=due))
        )

    wait_for(
        lambda: all(task_details(client, wid, tid)["status"] == "SUCCESS" for wid, tid in task_ids),
        timeout=60,
        what="all tasks to finish",
    )
    events = read_log(log_file)
    for _, task_id in task_ids:
        runs = [(e["event"], e["attempt"]) for e in events if e["task"] == task_id]
        assert runs == [("start", 1), ("end", 1)], f"task {task_id} ran {runs}"
    assert len({e["pid"] for e in events}) == 2, "both server processes should have claimed tasks"
