"""The console's buttons over plain HTTP (no browser): each form is posted as the page renders it
(its hidden fields and CSRF token, plus what a user types) and the outcome is checked in the page
the console answers with and in the API. Projects, the warehouse lifecycle, users and roles, a
task's Run now, the table page's partitioning, sort order and properties, the storage forms."""

from __future__ import annotations

import html
import re
import time

import httpx
import pytest

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False},
                                                       {"id": 2, "name": "day", "type": "date", "required": False}]}
MGMT = "/management/v1"


@pytest.fixture
def api(server):
    with httpx.Client(base_url=server.url + MGMT, timeout=30) as client:
        yield client


def submit(console: httpx.Client, page: httpx.Response, action: str, typed: dict[str, str] | None = None,
           where: dict[str, str] | None = None) -> httpx.Response:
    """Post the form of ``page`` whose action is ``action`` (the first whose hidden fields match
    ``where``) with ``typed`` filled in; the page the console redirects to."""
    for form_action, body in re.findall(r'<form method="post" action="([^"]+)"[^>]*>(.*?)</form>', page.text, re.S):
        if html.unescape(form_action) != action:
            continue
        hidden = {name: html.unescape(value)
                  for name, value in re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', body)}
        if all(hidden.get(k) == v for k, v in (where or {}).items()):
            return console.post(action, data={**hidden, **(typed or {})}, follow_redirects=True)
    raise AssertionError(f"no form posting to {action} ({where}) on {page.url}")


def flash(page: httpx.Response, kind: str) -> str:
    found = re.search(rf'class="flash {kind}"[^>]*>(.*?)</', page.text, re.S)
    return html.unescape(found.group(1)).strip() if found else ""


def file_warehouse(api: httpx.Client, name: str, root: str, project_id: str | None = None, **extra) -> str:
    headers = {"x-project-id": project_id} if project_id else {}
    created = api.post("/warehouse", headers=headers, json={
        "warehouse-name": name, "storage-profile": {"type": "file", "root": root}, **extra})
    created.raise_for_status()
    return created.json()["warehouse-id"]


def catalog_client(server, warehouse: str, project_id: str | None = None) -> httpx.Client:
    params = {"warehouse": f"{project_id}/{warehouse}" if project_id else warehouse}
    prefix = httpx.get(server.url + "/catalog/v1/config", params=params).json()["defaults"]["prefix"]
    return httpx.Client(base_url=f"{server.catalog_url}/v1/{prefix}", timeout=30)


def test_a_project_is_created_used_renamed_and_deleted(server, console, api, tmp_path):
    page = submit(console, console.get("/ui/projects"), "/ui/projects", {"project-name": "analytics"})
    assert flash(page, "success") == "Project 'analytics' created."
    project_id = next(p["project-id"] for p in api.get("/project-list").json()["projects"]
                      if p["project-name"] == "analytics")

    # "Use": every later console call carries the project; its warehouse list is its own
    page = submit(console, page, "/ui/projects/select", where={"project-id": project_id})
    assert str(page.url).endswith("/ui/warehouses") and ">demo</a>" not in page.text
    file_warehouse(api, "analytics_wh", str(tmp_path / "a"), project_id)
    page = console.get("/ui/warehouses")
    assert ">analytics_wh</a>" in page.text

    page = submit(console, console.get("/ui/projects"), f"/ui/projects/{project_id}/rename", {"new-name": "bi"})
    assert flash(page, "success") == "Project renamed to 'bi'."
    assert api.get(f"/project/{project_id}").json()["project-name"] == "bi"

    # the API refuses to delete a project that still has a warehouse: its message is shown
    page = submit(console, page, f"/ui/projects/{project_id}/delete")
    assert flash(page, "error") == f"Project {project_id} still has warehouses; delete them first " \
                                   "(ProjectNotEmpty, HTTP 409)"
    warehouse_id = api.get("/warehouse", headers={"x-project-id": project_id}).json()["warehouses"][0]["warehouse-id"]
    api.delete(f"/warehouse/{warehouse_id}", headers={"x-project-id": project_id}).raise_for_status()
    page = submit(console, console.get("/ui/projects"), f"/ui/projects/{project_id}/delete")
    assert flash(page, "success") == "Project deleted."
    assert "bi" not in [p["project-name"] for p in api.get("/project-list").json()["projects"]]
    assert ">demo</a>" in console.get("/ui/warehouses").text  # back on the default project


def test_a_warehouse_is_renamed_deactivated_protected_and_deleted(console, api, tmp_path):
    warehouse_id = file_warehouse(api, "lifecycle", str(tmp_path / "lifecycle"))
    url = f"/ui/warehouses/{warehouse_id}"
    page = submit(console, console.get(url), f"{url}/rename", {"new-name": "renamed"})
    assert flash(page, "success") == "Warehouse renamed to 'renamed'."
    assert "<h1>Warehouse renamed" in page.text

    page = submit(console, page, f"{url}/status")
    assert flash(page, "success") == "Warehouse deactivated."
    assert api.get(f"/warehouse/{warehouse_id}").json()["status"] == "inactive"
    # the catalog answers 404 for an inactive warehouse; its page still offers to activate it
    assert page.status_code == 200 and 'id="inactive"' in page.text and 'id="connect"' not in page.text
    page = submit(console, page, f"{url}/status")
    assert flash(page, "success") == "Warehouse activated."
    assert api.get(f"/warehouse/{warehouse_id}").json()["status"] == "active"

    page = submit(console, page, f"{url}/protection")
    assert flash(page, "success") == "Warehouse 'renamed' is protected."
    assert '<span class="badge protected">protected</span>' in page.text
    page = submit(console, page, f"{url}/delete")
    assert "is protected" in flash(page, "error") and "HTTP 409" in flash(page, "error")
    assert api.get(f"/warehouse/{warehouse_id}").status_code == 200

    page = submit(console, page, f"{url}/protection")
    assert flash(page, "success") == "Warehouse 'renamed' is no longer protected."
    page = submit(console, page, f"{url}/delete")
    assert flash(page, "success") == "Warehouse deleted." and str(page.url).endswith("/ui/warehouses")
    assert api.get(f"/warehouse/{warehouse_id}").status_code == 404


def test_users_and_roles_are_listed_created_edited_and_deleted(console, api):
    api.post("/user", json={"id": "oidc~carol", "name": "Carol", "user-type": "human"}).raise_for_status()
    page = console.get("/ui/identities")
    assert "<td>Carol</td>" in page.text

    page = submit(console, page, "/ui/roles", {"name": "analysts", "description": "reads sales"})
    assert flash(page, "success") == "Role 'analysts' created."
    role_id = next(r["id"] for r in api.get("/role").json()["roles"] if r["name"] == "analysts")
    assert f'/ui/roles/{role_id}">analysts</a></td><td>reads sales</td>' in page.text
    page = submit(console, page, "/ui/roles", {"name": "analysts"})
    assert "HTTP 409" in flash(page, "error")  # the API's conflict, shown as is
    submit(console, page, "/ui/roles", {"name": "auditors"})
    auditors = next(r["id"] for r in api.get("/role").json()["roles"] if r["name"] == "auditors")

    # the role's page: edit it, add a user and a role as members, remove one
    role_url = f"/ui/roles/{role_id}"
    page = submit(console, console.get(role_url), role_url, {"name": "analysts", "description": "reads all"})
    assert flash(page, "success") == "Role 'analysts' saved."
    assert api.get(f"/role/{role_id}").json()["description"] == "reads all"
    page = submit(console, page, f"{role_url}/members", {"member-type": "user", "member-id": "oidc~carol"},
                  where={"op": "add"})
    assert flash(page, "success") == "Added user oidc~carol."
    page = submit(console, page, f"{role_url}/members", {"member-type": "role", "member-id": auditors},
                  where={"op": "add"})
    assert flash(page, "success") == f"Added role {auditors}."
    page = submit(console, page, f"{role_url}/members", {"member-type": "user", "member-id": "oidc~nobody"},
                  where={"op": "add"})
    assert "oidc~nobody" in flash(page, "error") and "HTTP 404" in flash(page, "error")
    members = page.text.split('id="members"')[1].split("</table>")[0]
    assert "<td>Carol</td>" in members and f'/ui/roles/{auditors}">auditors</a>' in members
    page = submit(console, page, f"{role_url}/members", where={"op": "remove", "member-id": "oidc~carol"})
    assert flash(page, "success") == "Removed user oidc~carol."
    listed = api.get(f"/role/{role_id}/members").json()["members"]
    assert [(m["type"], m["id"]) for m in listed] == [("role", auditors)]

    page = submit(console, console.get("/ui/identities"), f"/ui/roles/{role_id}/delete")
    assert flash(page, "success") == "Role deleted." and ">analysts</a>" not in page.text
    page = submit(console, page, "/ui/users/oidc~carol/delete")
    assert flash(page, "success") == "User deleted." and "<td>Carol</td>" not in page.text
    assert api.get("/user/oidc~carol").status_code == 404


def test_run_now_expires_a_soft_dropped_table_at_once(server, console, api, tmp_path):
    warehouse_id = file_warehouse(api, "expiring", str(tmp_path / "expiring"),
                                  **{"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    with catalog_client(server, "expiring") as rest:
        rest.post("/namespaces", json={"namespace": ["tmp"]}).raise_for_status()
        rest.post("/namespaces/tmp/tables", json={"name": "stale", "schema": SCHEMA}).raise_for_status()
        rest.delete("/namespaces/tmp/tables/stale").raise_for_status()
    assert len(api.get(f"/warehouse/{warehouse_id}/deleted-tabulars").json()["tabulars"]) == 1

    page = console.get(f"/ui/warehouses/{warehouse_id}/tasks")
    task_id = re.search(r'name="task-id" value="([^"]+)"', page.text).group(1)
    page = submit(console, page, f"/ui/warehouses/{warehouse_id}/tasks/control", where={"action-type": "run-now"})
    assert flash(page, "success") == "Task scheduled to run now."
    deadline = time.monotonic() + 60
    while api.get(f"/warehouse/{warehouse_id}/task/by-id/{task_id}").json()["status"] != "SUCCESS":
        assert time.monotonic() < deadline, "the expiration did not run after Run now"
        time.sleep(0.5)
    assert api.get(f"/warehouse/{warehouse_id}/deleted-tabulars").json()["tabulars"] == []
    assert "SUCCESS" in console.get(f"/ui/warehouses/{warehouse_id}/tasks").text


def test_a_queue_configuration_is_shown_and_changed_on_the_tasks_page(console, api, tmp_path):
    warehouse_id = file_warehouse(api, "queued", str(tmp_path / "queued"))
    tasks_url = f"/ui/warehouses/{warehouse_id}/tasks"
    assert 'id="queue-config"' not in console.get(tasks_url).text  # shown for a chosen queue only
    page = console.get(tasks_url, params={"queue": "tabular_purge"})
    config_form = page.text.split('id="queue-config"')[1].split("</section>")[0]
    assert 'name="max-seconds-since-last-heartbeat" value=""' in config_form

    action = f"/ui/warehouses/{warehouse_id}/tasks/queue-config"
    page = submit(console, page, action, {"queue-config": "{}", "max-seconds-since-last-heartbeat": "120"})
    assert flash(page, "success") == "Configuration of queue 'tabular_purge' saved."
    assert 'name="max-seconds-since-last-heartbeat" value="120"' in page.text
    stored = api.get(f"/warehouse/{warehouse_id}/task-queue/tabular_purge/config").json()
    assert stored["max-seconds-since-last-heartbeat"] == 120

    page = submit(console, page, action, {"queue-config": "{not json"})
    assert flash(page, "error").startswith("The queue configuration is not valid JSON")
    page = submit(console, page, action, {"queue-config": "{}", "max-seconds-since-last-heartbeat": "0"})
    assert "max-seconds-since-last-heartbeat" in flash(page, "error") and "HTTP 400" in flash(page, "error")
    # a project-level queue has no warehouse configuration: the API says so in the card
    page = console.get(tasks_url, params={"queue": "task_log_cleanup"})
    assert "QueueNotFound" in page.text.split('id="queue-config"')[1].split("</section>")[0]


def test_the_table_page_shows_partitioning_sort_order_and_properties(server, console, api, tmp_path):
    warehouse_id = file_warehouse(api, "laid_out", str(tmp_path / "laid_out"))
    with catalog_client(server, "laid_out") as rest:
        rest.post("/namespaces", json={"namespace": ["sales"]}).raise_for_status()
        rest.post("/namespaces/sales/tables", json={
            "name": "events", "schema": SCHEMA, "properties": {"owner": "sales-team"},
            "partition-spec": {"spec-id": 0, "fields": [
                {"source-id": 2, "field-id": 1000, "name": "day_month", "transform": "month"},
                {"source-id": 1, "field-id": 1001, "name": "id_bucket", "transform": "bucket[16]"}]},
            "write-order": {"order-id": 1, "fields": [
                {"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}]},
        }).raise_for_status()

    page = console.get(f"/ui/warehouses/{warehouse_id}/table?ns=sales&name=events")
    spec = page.text.split('id="partition-spec"')[1].split("</table>")[0]
    assert "<td>day_month</td><td>day</td><td><code>month</code></td>" in spec
    assert "<td>id_bucket</td><td>id</td><td><code>bucket[16]</code></td>" in spec
    order = page.text.split('id="sort-order"')[1].split("</table>")[0]
    assert "<td>id</td><td><code>identity</code></td><td>desc</td><td>nulls-last</td>" in order
    assert "<td><code>owner</code></td><td><code>sales-team</code></td>" in page.text


def test_the_new_warehouse_page_has_a_form_for_every_installed_storage_plugin(console):
    page = console.get("/ui/warehouses/new")
    offered = set(re.findall(r'<option value="([a-z0-9-]+)"[^>]*>\1</option>',
                             page.text.split('id="storage-type"')[1].split("</select>")[0]))
    plugins = {"s3": "lakekeeper_storage_s3", "adls": "lakekeeper_storage_adls", "gcs": "lakekeeper_storage_gcs"}
    expected = {"file"} | {kind for kind, module in plugins.items() if _installed(module)}
    assert offered == expected
    for kind in expected - {"file"}:
        assert f'name="credential-variant.{kind}"' in page.text  # each cloud plugin's credential choices


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True
