"""Projects: create with or without an explicit id, list, get/rename/delete the current project."""

from __future__ import annotations

import uuid

from tests.management.helpers import new_file_warehouse

MGMT = "/management/v1"
NIL = "00000000-0000-0000-0000-000000000000"


def test_create_list_get_rename_delete(http):
    created = http.post(f"{MGMT}/project", json={"project-name": "analytics"})
    assert created.status_code == 201
    project_id = created.json()["project-id"]
    uuid.UUID(project_id)

    listed = http.get(f"{MGMT}/project-list").json()["projects"]
    assert {"project-id": project_id, "project-name": "analytics"} in listed

    headers = {"x-project-id": project_id}
    assert http.get(f"{MGMT}/project", headers=headers).json() == {
        "project-id": project_id,
        "project-name": "analytics",
    }
    renamed = http.post(f"{MGMT}/project/rename", json={"new-name": "analytics-2"}, headers=headers)
    assert renamed.status_code == 200
    assert http.get(f"{MGMT}/project", headers=headers).json()["project-name"] == "analytics-2"

    assert http.delete(f"{MGMT}/project", headers=headers).status_code == 204
    missing = http.get(f"{MGMT}/project", headers=headers)
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "ProjectNotFound"


def test_explicit_project_id_and_duplicates(http):
    project_id = str(uuid.uuid4())
    first = http.post(f"{MGMT}/project", json={"project-name": "p", "project-id": project_id})
    assert first.status_code == 201 and first.json() == {"project-id": project_id}
    again = http.post(f"{MGMT}/project", json={"project-name": "p", "project-id": project_id})
    assert again.status_code == 409
    assert again.json()["error"]["type"] == "ProjectIdAlreadyExists"
    bad = http.post(f"{MGMT}/project", json={"project-name": "p", "project-id": "not-a-uuid"})
    assert bad.status_code == 400


def test_default_project_is_used_without_header(http):
    response = http.get(f"{MGMT}/project")
    assert response.status_code == 200
    assert response.json()["project-id"] == NIL
    # the deprecated alias answers the same
    assert http.get(f"{MGMT}/default-project").json()["project-id"] == NIL


def test_project_with_warehouses_cannot_be_deleted(http, server, tmp_path_factory):
    project_id = http.post(f"{MGMT}/project", json={"project-name": "busy"}).json()["project-id"]
    warehouse = new_file_warehouse(server.url, tmp_path_factory, project_id=project_id)
    headers = {"x-project-id": project_id}
    refused = http.delete(f"{MGMT}/project", headers=headers)
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "ProjectNotEmpty"
    assert http.delete(f"{MGMT}/warehouse/{warehouse['id']}").status_code == 204
    assert http.delete(f"{MGMT}/project", headers=headers).status_code == 204


def test_new_project_gets_its_task_log_cleanup(http):
    project_id = http.post(f"{MGMT}/project", json={"project-name": "tasks"}).json()["project-id"]
    headers = {"x-project-id": project_id}
    tasks = http.post(f"{MGMT}/project/task/list", json={"queue-name": ["task_log_cleanup"]}, headers=headers)
    assert tasks.status_code == 200
    [task] = tasks.json()["tasks"]
    assert task["entity"] == {"type": "project", "project-id": project_id}
    config = http.get(f"{MGMT}/project/task-queue/task_log_cleanup/config", headers=headers).json()
    assert config == {"queue-config": {"queue-name": "task_log_cleanup"}, "max-seconds-since-last-heartbeat": None}
    bad = http.post(
        f"{MGMT}/project/task-queue/task_log_cleanup/config",
        json={"queue-config": {"retention-period": "PT1H"}},
        headers=headers,
    )
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "InvalidQueueConfig"
    assert "retention-period" in bad.json()["error"]["message"]
    ok = http.post(
        f"{MGMT}/project/task-queue/task_log_cleanup/config",
        json={"queue-config": {"retention-period": "P30D"}},
        headers=headers,
    )
    assert ok.status_code == 204
