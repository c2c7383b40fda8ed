"""Every mutating management endpoint answers a malformed body with a 400 that names the field.

The table-maintenance endpoints' bodies are covered in tests/maintenance/test_policy_api.py.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

MGMT = "/management/v1"
SOME_ID = str(uuid.uuid4())
NIL = "00000000-0000-0000-0000-000000000000"

# (path template, body, the field the error must name)
CASES = [
    ("/bootstrap", {"accept-terms-of-use": "yes"}, "accept-terms-of-use"),
    ("/project", {"project-name": 5}, "project-name"),
    ("/project", {}, "project-name"),
    ("/project/rename", {"new-name": 1}, "new-name"),
    ("/default-project/rename", {"new-name": True}, "new-name"),
    (f"/project/{NIL}/rename", {"new-name": 1}, "new-name"),
    ("/warehouse", {"warehouse-name": 3, "storage-profile": {"type": "file", "root": "/tmp"}}, "warehouse-name"),
    ("/warehouse", {"warehouse-name": "w", "storage-profile": "file"}, "storage-profile"),
    ("/warehouse", {"warehouse-name": "w", "storage-profile": {"type": "file", "root": 7}}, "root"),
    ("/warehouse", {"warehouse-name": "w", "storage-profile": {"type": "file", "root": "/t"}, "delete-profile": 1},
     "delete-profile"),
    ("/warehouse-creation-validation", {"warehouse-name": "w"}, "storage-profile"),
    ("/warehouse/{wh}/rename", {"new-name": []}, "new-name"),
    ("/warehouse/{wh}/delete-profile", {"delete-profile": "soft"}, "delete-profile"),
    ("/warehouse/{wh}/delete-profile", {"delete-profile": {"type": "soft", "expiration-seconds": "1"}},
     "expiration-seconds"),
    ("/warehouse/{wh}/format-version-policy", {"allowed-format-versions": "2"}, "allowed-format-versions"),
    ("/warehouse/{wh}/protection", {"protected": "yes"}, "protected"),
    ("/warehouse/{wh}/storage", {"storage-profile": 1}, "storage-profile"),
    ("/warehouse/{wh}/storage-credential", {"new-storage-credential": 1}, "new-storage-credential"),
    ("/warehouse/{wh}/storage/validate-profile", {}, "storage-profile"),
    ("/warehouse/{wh}/storage/validate-credential", {"new-storage-credential": "x"}, "new-storage-credential"),
    ("/warehouse/{wh}/deleted-tabulars/undrop", {"targets": "all"}, "targets"),
    ("/warehouse/{wh}/deleted-tabulars/undrop", {"targets": [{"type": "table"}]}, "id"),
    ("/warehouse/{wh}/deleted-tabulars/undrop", {"targets": [{"type": "table", "id": "notuuid"}]}, "targets[0].id"),
    ("/warehouse/{wh}/namespace/{id}/protection", {"protected": 1}, "protected"),
    ("/warehouse/{wh}/table/{id}/protection", {}, "protected"),
    ("/warehouse/{wh}/view/{id}/protection", {"protected": None}, "protected"),
    ("/warehouse/{wh}/namespace/{id}/move", {"destination": "a.b"}, "destination"),
    ("/warehouse/{wh}/search-tabular", {"search": ["x"]}, "search"),
    ("/warehouse/{wh}/search-namespace", {"search": 5}, "search"),
    ("/warehouse/{wh}/task-queue/soft_deletion/config", {"queue-config": 1}, "queue-config"),
    ("/warehouse/{wh}/task-queue/soft_deletion/config", {"queue-config": {}, "max-seconds-since-last-heartbeat": "1"},
     "max-seconds-since-last-heartbeat"),
    ("/warehouse/{wh}/task/list", {"status": "RUNNING"}, "status"),
    ("/warehouse/{wh}/task/list", {"page-size": "ten"}, "page-size"),
    ("/warehouse/{wh}/task/control", {"task-ids": "x", "action": {"action-type": "cancel"}}, "task-ids"),
    ("/warehouse/{wh}/task/control", {"task-ids": [], "action": {"action-type": "zap"}}, "action-type"),
    ("/warehouse/{wh}/task/control", {"task-ids": [], "action": {"action-type": "run-at"}}, "scheduled-for"),
    ("/project/task-queue/task_log_cleanup/config", {"queue-config": []}, "queue-config"),
    ("/project/task/list", {"created-after": 5}, "created-after"),
    ("/project/task/control", {"task-ids": [1], "action": {"action-type": "stop"}}, "task-ids"),
    ("/user", {"update-if-exists": "yes"}, "update-if-exists"),
    ("/user", {"id": 5}, "id"),
    ("/search/user", {"search": 5}, "search"),
    ("/role", {"name": 5}, "name"),
    ("/role", {"description": "no name"}, "name"),
    ("/search/role", {"search": []}, "search"),
    ("/role/{id}", {"name": 7}, "name"),
    ("/role/{id}/members", {"members": 7}, "members"),
    ("/endpoint-statistics", {"warehouse": "all"}, "warehouse"),
    ("/endpoint-statistics", {"warehouse": {"type": "all"}, "status-codes": ["200"]}, "status-codes"),
]


@pytest.mark.parametrize(("path", "body", "field"), CASES, ids=[f"{c[0]}:{c[2]}" for c in CASES])
def test_malformed_body_is_a_400_naming_the_field(http, warehouse, path, body, field):
    url = MGMT + path.format(wh=warehouse["id"], id=SOME_ID)
    response = http.post(url, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == 400
    assert field in error["message"], error["message"]


PUT_CASES = [
    ("/user/oidc~someone", {"name": 5, "user-type": "human"}, "name"),
    ("/user/oidc~someone", {"name": "N"}, "user-type"),
    ("/role/{id}/source-system", {"source-id": 7}, "source-id"),
]


@pytest.mark.parametrize(("path", "body", "field"), PUT_CASES, ids=[f"{c[0]}:{c[2]}" for c in PUT_CASES])
def test_malformed_put_body_is_a_400_naming_the_field(http, path, body, field):
    response = http.put(MGMT + path.format(id=SOME_ID), json=body)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["message"]


@pytest.mark.parametrize("plugin_server", ["sqlite"], indirect=True)
def test_schedule_body_is_validated_on_a_user_schedulable_queue(plugin_server, tmp_path_factory):
    """Only plugin queues are user-schedulable (tests/management/plugins/lk_test_queues.py)."""
    from tests.management.helpers import new_file_warehouse

    server = plugin_server
    wid = new_file_warehouse(server.url, tmp_path_factory)["id"]
    url = f"{server.url}{MGMT}/warehouse/{wid}/task-queue/test_slow/schedule"
    for body, field in [
        ({"payload": {}}, "entity"),
        ({"entity": "warehouse"}, "entity"),
        ({"entity": {"type": "warehouse", "warehouse-id": wid}, "scheduled-for": "tomorrow"}, "scheduled-for"),
        ({"entity": {"type": "warehouse", "warehouse-id": wid}, "payload": [1]}, "payload"),
    ]:
        response = httpx.post(url, json=body, timeout=30)
        assert response.status_code == 400, (body, response.text)
        assert field in response.json()["error"]["message"], (body, response.text)


@pytest.mark.parametrize("path", ["/project", "/warehouse", "/warehouse/{wh}/rename", "/endpoint-statistics"])
def test_body_that_is_not_json_is_a_400(http, warehouse, path):
    response = http.post(MGMT + path.format(wh=warehouse["id"]), content=b"{not json",
                         headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "JSON" in response.json()["error"]["message"]
