"""The maintenance policy through the management API: warehouse policy (the table_maintenance queue
config), per-table overrides, and validation that names the offending field. No Spark runs here."""

from __future__ import annotations

import pytest

from tests.maintenance.helpers import MGMT, QUEUE, SCHEMA, set_warehouse_policy


@pytest.fixture
def table_id(catalog) -> str:
    catalog.create_namespace("ns")
    return str(catalog.create_table("ns.events", SCHEMA).metadata.table_uuid)


def error_of(response) -> dict:
    return response.json()["error"]


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"expire-snapshots": {"retain-last": 0}}, "expire-snapshots.retain-last"),
        ({"expire-snapshots": {"retain-lst": 3}}, "retain-lst"),
        ({"expire-snapshots": {"older-than": "yesterday"}}, "expire-snapshots.older-than"),
        ({"remove-orphan-files": {"older-than": "PT1H"}}, "remove-orphan-files.older-than"),
        ({"rewrite-data-files": {"min-input-files": "5"}}, "rewrite-data-files.min-input-files"),
        ({"rewrite-data-files": {"target-file-size-bytes": -1}}, "rewrite-data-files.target-file-size-bytes"),
        ({"interval": "PT5S"}, "interval"),
        ({"enabled": "yes"}, "enabled"),
        ({"vacuum": {}}, "vacuum"),
    ],
)
def test_invalid_policies_are_rejected_naming_the_field(http, warehouse, table_id, policy, field):
    on_warehouse = set_warehouse_policy(http, warehouse["id"], policy)
    assert on_warehouse.status_code == 400, on_warehouse.text
    assert field in error_of(on_warehouse)["message"]
    on_table = http.post(f"{MGMT}/warehouse/{warehouse['id']}/table/{table_id}/maintenance", json=policy)
    assert on_table.status_code == 400, on_table.text
    error = error_of(on_table)
    assert field in error["message"] and error["code"] == 400
    # nothing was stored
    assert http.get(f"{MGMT}/warehouse/{warehouse['id']}/table/{table_id}/maintenance").json()["policy"] == {}


def test_table_override_is_merged_over_the_warehouse_policy(http, warehouse, table_id):
    wid = warehouse["id"]
    url = f"{MGMT}/warehouse/{wid}/table/{table_id}/maintenance"
    defaults = http.get(url).json()
    assert defaults["policy"] == {} and defaults["updated-at"] is None
    assert defaults["effective-policy"] == {
        "enabled": False,
        "interval": "P1D",
        "rewrite-data-files": {"enabled": True, "target-file-size-bytes": None, "min-input-files": 5},
        "rewrite-manifests": {"enabled": True},
        "expire-snapshots": {"enabled": True, "older-than": "P5D", "retain-last": 1},
        "remove-orphan-files": {"enabled": True, "older-than": "P3D"},
    }

    # the warehouse policy (queue config) keeps maintenance disabled but changes retention
    stored = set_warehouse_policy(http, wid, {"expire-snapshots": {"retain-last": 10, "older-than": "P7D"}})
    assert stored.status_code == 204, stored.text
    config = http.get(f"{MGMT}/warehouse/{wid}/task-queue/{QUEUE}/config").json()
    assert config["queue-config"]["expire-snapshots"] == {"retain-last": 10, "older-than": "P7D"}

    override = {"expire-snapshots": {"retain-last": 3}, "rewrite-manifests": {"enabled": False}}
    response = http.post(url, json=override)
    assert response.status_code == 200, response.text
    shown = http.get(url).json()
    assert shown["policy"] == override and shown["updated-at"] is not None
    effective = shown["effective-policy"]
    assert effective["expire-snapshots"] == {"enabled": True, "older-than": "P7D", "retain-last": 3}
    assert effective["rewrite-manifests"] == {"enabled": False}
    assert effective["enabled"] is False

    assert http.delete(url).status_code == 204
    assert http.get(url).json()["effective-policy"]["expire-snapshots"]["retain-last"] == 10


def test_policy_endpoints_know_only_existing_tables(http, warehouse):
    wid = warehouse["id"]
    missing = "01234567-89ab-7def-8123-456789abcdef"
    for response in (
        http.get(f"{MGMT}/warehouse/{wid}/table/{missing}/maintenance"),
        http.post(f"{MGMT}/warehouse/{wid}/table/{missing}/maintenance", json={}),
        http.post(f"{MGMT}/warehouse/{wid}/table/not-a-uuid/maintenance/run"),
    ):
        assert response.status_code == 404, response.text
        assert error_of(response)["type"] == "TableNotFound"


def test_run_request_is_validated(http, warehouse):
    url = f"{MGMT}/warehouse/{warehouse['id']}/maintenance/run"
    wrong_type = http.post(url, json={"table-ids": "all"})
    assert wrong_type.status_code == 400 and "table-ids" in error_of(wrong_type)["message"]
    unknown = http.post(url, json={"tables": []})
    assert unknown.status_code == 400 and "tables" in error_of(unknown)["message"]
    # an empty warehouse: nothing to run
    nothing = http.post(url)
    assert nothing.status_code == 202 and nothing.json() == {"runs": []}


def test_unknown_warehouse_is_404(http):
    missing = "01234567-89ab-7def-8123-456789abcdef"
    response = http.post(f"{MGMT}/warehouse/{missing}/maintenance/run")
    assert response.status_code == 404
