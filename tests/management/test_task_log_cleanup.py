"""The project-scoped ``task_log_cleanup`` queue: old attempt logs go, recent ones stay, the task
comes back one cleanup period later."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from lakekeeper_host.store import Store
from tests.management.helpers import wait_for

MGMT = "/management/v1"
DAY_MS = 24 * 3600 * 1000


def plant_task_log(server, project_id: str, age: timedelta) -> str:
    """A finished ``tabular_purge`` attempt of ``project_id`` that ended ``age`` ago (written
    straight into the server's database: no API back-dates history)."""
    task_id = str(uuid.uuid4())
    finished = int((datetime.now(UTC) - age).timestamp() * 1000)

    async def insert():
        store = Store(server.store_url())
        await store.connect()
        try:
            await store.execute(
                "INSERT INTO task_log (task_id, attempt, project_id, warehouse_id, queue_name, entity_type, "
                "entity_id, status, message, payload, progress, started_at, finished_at, created_at) VALUES "
                "(:id, 1, :p, NULL, 'tabular_purge', 'project', :p, 'success', 'planted', '{}', 1, :t, :t, :t)",
                {"id": task_id, "p": project_id, "t": finished},
            )
        finally:
            await store.disconnect()

    asyncio.run(insert())
    return task_id


def cleanup_task(http, headers) -> dict:
    listing = http.post(f"{MGMT}/project/task/list", json={"queue-name": ["task_log_cleanup"]}, headers=headers)
    assert listing.status_code == 200, listing.text
    [task] = [t for t in listing.json()["tasks"] if t["status"] in ("SCHEDULED", "RUNNING")]
    return http.get(f"{MGMT}/project/task/by-id/{task['task-id']}", headers=headers).json()


def exists(http, headers, task_id: str) -> bool:
    response = http.get(f"{MGMT}/project/task/by-id/{task_id}", headers=headers)
    assert response.status_code in (200, 404), response.text
    return response.status_code == 200


def test_task_log_cleanup_removes_old_logs_of_its_project_and_reschedules(server, http):
    project = http.post(f"{MGMT}/project", json={"project-name": "cleanup"}).json()["project-id"]
    other = http.post(f"{MGMT}/project", json={"project-name": "cleanup-other"}).json()["project-id"]
    headers, other_headers = {"x-project-id": project}, {"x-project-id": other}
    configured = http.post(
        f"{MGMT}/project/task-queue/task_log_cleanup/config",
        json={"queue-config": {"retention-period": "P30D"}},
        headers=headers,
    )
    assert configured.status_code == 204, configured.text
    # a new project's cleanup runs at once (nothing to do yet) and then waits a cleanup period
    for h in (headers, other_headers):
        wait_for(lambda h=h: len(cleanup_task(http, h)["attempts"]) == 1, what="the first cleanup run")

    old = plant_task_log(server, project, timedelta(days=40))
    recent = plant_task_log(server, project, timedelta(days=10))
    old_elsewhere = plant_task_log(server, other, timedelta(days=400))
    assert exists(http, headers, old) and exists(http, headers, recent)

    task = cleanup_task(http, headers)
    run_now = http.post(
        f"{MGMT}/project/task/control",
        json={"task-ids": [task["task-id"]], "action": {"action-type": "run-now"}},
        headers=headers,
    )
    assert run_now.status_code == 204, run_now.text
    wait_for(lambda: not exists(http, headers, old), what="the cleanup to remove the 40-day-old log")

    assert exists(http, headers, recent)  # younger than the 30-day retention
    assert exists(http, other_headers, old_elsewhere)  # another project's logs are its own cleanup's
    again = wait_for(
        lambda: (t := cleanup_task(http, headers))["status"] == "SCHEDULED" and len(t["attempts"]) == 2 and t,
        what="the cleanup to reschedule itself",
    )
    assert again["task-id"] == task["task-id"]
    assert again["attempts"][0]["status"] == "SUCCESS"
    assert again["attempts"][0]["message"] == "Removed 1 task log entries"
    next_run = datetime.fromisoformat(again["scheduled-for"].replace("Z", "+00:00"))
    assert next_run > datetime.now(UTC) + timedelta(hours=23)  # cleanup-period P1D

    for h in (headers, other_headers):
        assert http.delete(f"{MGMT}/project", headers=h).status_code == 204
