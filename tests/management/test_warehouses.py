"""Warehouses: listing by status, rename, (de)activation, delete rules, storage, policies, validation."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from tests.management.helpers import new_file_warehouse

MGMT = "/management/v1"


def names(http: httpx.Client, *statuses: str) -> set[str]:
    params = [("warehouseStatus", s) for s in statuses]
    response = http.get(f"{MGMT}/warehouse", params=params)
    assert response.status_code == 200, response.text
    return {w["name"] for w in response.json()["warehouses"]}


def test_get_returns_lakekeeper_shape(http, warehouse):
    body = http.get(f"{MGMT}/warehouse/{warehouse['id']}").json()
    assert body["id"] == body["warehouse-id"] == warehouse["id"]
    assert body["name"] == warehouse["name"]
    assert body["storage-profile"]["type"] == "file"
    assert body["delete-profile"] == {"type": "hard"}
    assert body["status"] == "active"
    assert body["protected"] is False
    assert body["allowed-format-versions"] == [1, 2, 3] and body["default-format-version"] == 2
    missing = http.get(f"{MGMT}/warehouse/{uuid.uuid4()}")
    assert missing.status_code == 404


def test_rename_and_name_conflicts(http, server, warehouse, tmp_path_factory):
    other = new_file_warehouse(server.url, tmp_path_factory)
    new_name = f"renamed-{uuid.uuid4().hex[:6]}"
    renamed = http.post(f"{MGMT}/warehouse/{warehouse['id']}/rename", json={"new-name": new_name})
    assert renamed.status_code == 200 and renamed.json()["name"] == new_name
    clash = http.post(f"{MGMT}/warehouse/{warehouse['id']}/rename", json={"new-name": other["name"].upper()})
    assert clash.status_code == 409
    slash = http.post(f"{MGMT}/warehouse/{warehouse['id']}/rename", json={"new-name": "a/b"})
    assert slash.status_code == 400


def test_deactivated_warehouses_are_listed_only_on_request(http, warehouse):
    name = warehouse["name"]
    assert name in names(http)
    assert http.post(f"{MGMT}/warehouse/{warehouse['id']}/deactivate").status_code == 200  # as Lakekeeper
    assert name not in names(http)
    assert name in names(http, "inactive")
    assert name in names(http, "active", "inactive")
    assert http.get(f"{MGMT}/warehouse/{warehouse['id']}").json()["status"] == "inactive"
    assert http.post(f"{MGMT}/warehouse/{warehouse['id']}/activate").status_code == 200
    assert name in names(http)
    bad = http.get(f"{MGMT}/warehouse", params={"warehouseStatus": "sleeping"})
    assert bad.status_code == 400


def test_overlapping_locations_are_refused_in_every_project(http, warehouse):
    nested = {
        "warehouse-name": f"nested-{uuid.uuid4().hex[:6]}",
        "storage-profile": {"type": "file", "root": warehouse["root"] + "/inner"},
    }
    response = http.post(f"{MGMT}/warehouse", json=nested)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "CreateWarehouseStorageProfileOverlap"
    assert warehouse["name"] in response.json()["error"]["message"]
    # not in another project either (unlike Lakekeeper): its admin could register and purge this one's
    # tables with the server's own rights; the other project's warehouse is not named
    project_id = http.post(f"{MGMT}/project", json={"project-name": "elsewhere"}).json()["project-id"]
    for root in (warehouse["root"] + "/inner", str(Path(warehouse["root"]).parent)):
        body = {**nested, "storage-profile": {"type": "file", "root": root}}
        elsewhere = http.post(f"{MGMT}/warehouse", json=body, headers={"x-project-id": project_id})
        assert elsewhere.status_code == 400, elsewhere.text
        error = elsewhere.json()["error"]
        assert error["type"] == "CreateWarehouseStorageProfileOverlap" and warehouse["name"] not in error["message"]


def test_protected_warehouse_needs_force(http, warehouse):
    wid = warehouse["id"]
    protected = http.post(f"{MGMT}/warehouse/{wid}/protection", json={"protected": True})
    assert protected.status_code == 200 and protected.json()["protected"] is True
    assert protected.json()["updated_at"]  # Lakekeeper's ProtectionResponse spells it so (no kebab-case)
    assert http.get(f"{MGMT}/warehouse/{wid}/protection").json()["protected"] is True
    refused = http.delete(f"{MGMT}/warehouse/{wid}")
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "WarehouseProtected"
    assert http.delete(f"{MGMT}/warehouse/{wid}", params={"force": "true"}).status_code == 204
    assert http.get(f"{MGMT}/warehouse/{wid}").status_code == 404


def test_warehouse_with_namespaces_is_not_deleted_even_with_force(http, server, warehouse):
    wid = warehouse["id"]
    created = http.post(f"{server.url}/catalog/v1/{wid}/namespaces", json={"namespace": ["still_here"]})
    assert created.status_code == 200, created.text
    for params in ({}, {"force": "true"}):
        refused = http.delete(f"{MGMT}/warehouse/{wid}", params=params)
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["type"] == "WarehouseNotEmpty"
    assert http.delete(f"{server.url}/catalog/v1/{wid}/namespaces/still_here").status_code == 204
    assert http.delete(f"{MGMT}/warehouse/{wid}").status_code == 204


def test_builtin_queues_are_not_user_schedulable(http, warehouse):
    wid = warehouse["id"]
    schedule = http.post(
        f"{MGMT}/warehouse/{wid}/task-queue/tabular_purge/schedule",
        json={"entity": {"type": "warehouse", "warehouse-id": wid}},
    )
    assert schedule.status_code == 400
    assert schedule.json()["error"]["type"] == "QueueNotUserSchedulable"
    unknown = http.post(
        f"{MGMT}/warehouse/{wid}/task-queue/no_such_queue/schedule",
        json={"entity": {"type": "warehouse", "warehouse-id": wid}},
    )
    assert unknown.status_code == 404


def test_delete_profile_and_format_version_policy(http, warehouse):
    wid = warehouse["id"]
    soft = http.post(
        f"{MGMT}/warehouse/{wid}/delete-profile", json={"delete-profile": {"type": "soft", "expiration-seconds": 60}}
    )
    assert soft.status_code == 200
    assert soft.json()["delete-profile"] == {"type": "soft", "expiration-seconds": 60}
    bad = http.post(f"{MGMT}/warehouse/{wid}/delete-profile", json={"delete-profile": {"type": "soft"}})
    assert bad.status_code == 400 and "expiration-seconds" in bad.json()["error"]["message"]

    policy = http.post(
        f"{MGMT}/warehouse/{wid}/format-version-policy",
        json={"allowed-format-versions": [2, 3], "default-format-version": 3},
    )
    assert policy.status_code == 200
    assert policy.json()["allowed-format-versions"] == [2, 3]
    assert policy.json()["default-format-version"] == 3
    inconsistent = http.post(
        f"{MGMT}/warehouse/{wid}/format-version-policy",
        json={"allowed-format-versions": [1], "default-format-version": 3},
    )
    assert inconsistent.status_code == 400
    unknown = http.post(f"{MGMT}/warehouse/{wid}/format-version-policy", json={"allowed-format-versions": [4]})
    assert unknown.status_code == 400

    # the policy governs the catalog: the default for a new table, refusals for the rest
    prefix = f"/catalog/v1/{wid}"
    assert http.post(f"{prefix}/namespaces", json={"namespace": ["policy"]}).status_code == 200
    default = http.post(f"{prefix}/namespaces/policy/tables", json={"name": "by-default", "schema": ONE_COLUMN})
    assert default.status_code == 200, default.text
    assert default.json()["metadata"]["format-version"] == 3
    v1 = http.post(
        f"{prefix}/namespaces/policy/tables",
        json={"name": "v1", "schema": ONE_COLUMN, "properties": {"format-version": "1"}},
    )
    assert v1.status_code == 400
    assert v1.json()["error"]["type"] == "FormatVersionNotAllowed"
    assert http.head(f"{prefix}/namespaces/policy/tables/v1").status_code == 404
    v2 = http.post(
        f"{prefix}/namespaces/policy/tables",
        json={"name": "v2", "schema": ONE_COLUMN, "properties": {"format-version": "2"}},
    )
    assert v2.status_code == 200 and v2.json()["metadata"]["format-version"] == 2


def test_storage_profile_replacement_keeps_immutable_fields(http, warehouse):
    wid = warehouse["id"]
    moved = http.post(
        f"{MGMT}/warehouse/{wid}/storage", json={"storage-profile": {"type": "file", "root": warehouse["root"] + "-x"}}
    )
    assert moved.status_code == 400
    assert moved.json()["error"]["type"] == "ImmutableField"
    assert "root" in moved.json()["error"]["message"]

    report = http.post(
        f"{MGMT}/warehouse/{wid}/storage/validate-profile",
        json={"storage-profile": {"type": "file", "root": warehouse["root"] + "-x"}},
    )
    assert report.status_code == 200
    checks = {c["name"]: c for c in report.json()["checks"]}
    assert report.json()["valid"] is False
    assert checks["profile-compatible"]["status"] == "failed"

    layout = {"type": "default"}
    same = http.post(
        f"{MGMT}/warehouse/{wid}/storage",
        json={"storage-profile": {"type": "file", "root": warehouse["root"], "storage-layout": layout}},
    )
    assert same.status_code == 200, same.text
    assert same.json()["storage-profile"]["storage-layout"] == layout


def test_creation_validation_reports_every_check(http, warehouse, tmp_path):
    body = {
        "warehouse-name": f"candidate-{uuid.uuid4().hex[:6]}",
        "storage-profile": {"type": "file", "root": str(tmp_path)},
    }
    report = http.post(f"{MGMT}/warehouse-creation-validation", json=body)
    assert report.status_code == 200
    checks = {c["name"]: c["status"] for c in report.json()["checks"]}
    assert report.json()["valid"] is True
    assert checks["profile-well-formed"] == "passed"
    assert checks["warehouse-name-valid"] == "passed"
    assert checks["location-exclusive"] == "passed"
    assert checks["lakekeeper-read-write"] == "passed"
    assert checks["profile-compatible"] == "skipped"
    # nothing was created
    assert body["warehouse-name"] not in names(http)

    taken = http.post(
        f"{MGMT}/warehouse-creation-validation",
        json={"warehouse-name": warehouse["name"], "storage-profile": {"type": "file", "root": warehouse["root"]}},
    )
    assert taken.status_code == 200
    failed = {c["name"] for c in taken.json()["checks"] if c["status"] == "failed"}
    assert failed == {"warehouse-name-valid", "location-exclusive"}
    assert taken.json()["valid"] is False

    access = http.post(f"{MGMT}/warehouse/{warehouse['id']}/storage/validate-access")
    assert access.status_code == 200 and access.json()["valid"] is True


def test_unwritable_storage_fails_creation_with_the_failed_check(http, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the warehouse directory should be")
    body = {
        "warehouse-name": f"broken-{uuid.uuid4().hex[:6]}", "storage-profile": {"type": "file", "root": str(blocked)}
    }
    report = http.post(f"{MGMT}/warehouse-creation-validation", json=body).json()
    assert report["valid"] is False
    assert {c["name"]: c["status"] for c in report["checks"]}["lakekeeper-read-write"] == "failed"
    created = http.post(f"{MGMT}/warehouse", json=body)
    assert created.status_code == 400
    assert "lakekeeper-read-write" in created.json()["error"]["message"]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_skip_storage_validation_creates_without_probing(make_server, tmp_path):
    server = make_server({"LAKEKEEPER__SKIP_STORAGE_VALIDATION": "true"})
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the warehouse directory should be")
    body = {"warehouse-name": "unprobed", "storage-profile": {"type": "file", "root": str(blocked)}}
    created = httpx.post(f"{server.url}{MGMT}/warehouse", json=body, timeout=30)
    assert created.status_code == 201, created.text
    assert blocked.read_text() == "a file where the warehouse directory should be"  # nothing was written


ONE_COLUMN = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def _layout_warehouse(http, tmp_path_factory, layout: dict) -> tuple[str, str]:
    root = str(tmp_path_factory.mktemp("layout"))
    body = {
        "warehouse-name": f"layout-{uuid.uuid4().hex[:8]}",
        "storage-profile": {"type": "file", "root": root, "storage-layout": layout},
    }
    created = http.post(f"{MGMT}/warehouse", json=body)
    assert created.status_code == 201, created.text
    return created.json()["warehouse-id"], root


def _namespace_and_table(http, warehouse_id: str) -> tuple[dict, dict]:
    prefix = f"/catalog/v1/{warehouse_id}"
    namespace = http.post(f"{prefix}/namespaces", json={"namespace": ["sales"]})
    assert namespace.status_code == 200, namespace.text
    loaded = http.get(f"{prefix}/namespaces/sales").json()["properties"]
    table = http.post(f"{prefix}/namespaces/sales/tables", json={"name": "orders eu", "schema": ONE_COLUMN})
    assert table.status_code == 200, table.text
    return loaded, table.json()["metadata"]


def test_tabular_only_layout_names_table_directories_by_template(http, tmp_path_factory):
    warehouse_id, root = _layout_warehouse(
        http, tmp_path_factory, {"type": "tabular-only", "tabular": "{name}-{uuid}"}
    )
    namespace, table = _namespace_and_table(http, warehouse_id)
    assert namespace["location"].rstrip("/") == f"file://{root}"  # flat: namespaces get no directory
    # the name is percent-encoded into the segment; file locations are kept as plain paths
    assert table["location"] == f"file://{root}/orders eu-{table['table-uuid']}"


def test_full_hierarchy_layout_nests_tables_under_their_namespace(http, tmp_path_factory):
    warehouse_id, root = _layout_warehouse(
        http, tmp_path_factory, {"type": "full-hierarchy", "namespace": "{name}", "tabular": "{uuid}"}
    )
    namespace, table = _namespace_and_table(http, warehouse_id)
    assert namespace["location"] == f"file://{root}/sales/"
    assert table["location"] == f"file://{root}/sales/{table['table-uuid']}"


@pytest.mark.parametrize(
    ("layout", "named"),
    [
        ({"type": "bogus"}, "'type' must be one of default, tabular-only, full-hierarchy"),
        ({"type": "tabular-only", "tabular": "{name}"}, "storage-layout.tabular: the template must contain {uuid}"),
        ({"type": "full-hierarchy", "namespace": "fixed"}, "storage-layout.namespace: the template must contain"),
        ({"type": "tabular-only", "tabular": "a/{uuid}"}, "storage-layout.tabular: a non-empty path segment"),
        ({"type": "default", "tabular": "{uuid}"}, "unknown field 'tabular' for type 'default'"),
    ],
)
def test_unusable_storage_layouts_are_400_naming_the_field(http, tmp_path, layout, named):
    body = {
        "warehouse-name": f"layout-{uuid.uuid4().hex[:8]}",
        "storage-profile": {"type": "file", "root": str(tmp_path), "storage-layout": layout},
    }
    refused = http.post(f"{MGMT}/warehouse", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["type"] == "InvalidStorageLayout"
    assert named in refused.json()["error"]["message"]
    assert refused.json()["error"]["message"].startswith("Invalid storage-profile.storage-layout")
    assert body["warehouse-name"] not in names(http)
