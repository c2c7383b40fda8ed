"""Table maintenance on S3 warehouses, through the server's ``table_maintenance`` queue on SeaweedFS.

The queue's Spark job reaches S3 through Hadoop's s3a with the credentials the catalog vends for
the one table it maintains (Spark here has no S3FileIO). Without vended credentials (remote
signing only) the run fails with one line saying why, before any Spark starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
MGMT = "/management/v1"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))


def s3_catalog(server, warehouse: str, delegation: str) -> RestCatalog:
    return RestCatalog("s3-maintenance", uri=server.catalog_url, warehouse=warehouse,
                       **{"header.X-Iceberg-Access-Delegation": delegation})  # fmt: skip


def new_warehouse(server, make_warehouse, s3_profile, s3_credential, **profile) -> tuple[str, str]:
    response = make_warehouse(server, s3_profile(**profile), s3_credential)
    assert response.status_code == 201, response.text
    return response.json()["name"], response.json()["warehouse-id"]


def small_files_table(catalog: RestCatalog, identifier: str, *, appends: int, two_file_appends: int):
    """Every append a snapshot of small files: the first ``two_file_appends`` write both partitions."""
    catalog.create_namespace_if_not_exists(identifier.rsplit(".", 1)[0])
    table = catalog.create_table(identifier, SCHEMA, partition_spec=SPEC)
    for index in range(appends):
        categories = ["a", "b"] if index < two_file_appends else ["a"]
        rows = [{"id": index * 10 + j, "category": categories[j % len(categories)], "payload": f"row {index}/{j}"}
                for j in range(4)]  # fmt: skip
        table.append(pa.Table.from_pylist(rows, schema=SCHEMA.as_arrow()))
    return catalog.load_table(identifier)


def sorted_rows(table) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["id"])


def run_until_finished(server, warehouse_id: str, table_id: str, timeout: float = 240) -> dict[str, Any]:
    """A manual maintenance run through the queue; the task details once it succeeded or failed for good."""
    with httpx.Client(base_url=server.url + MGMT, timeout=30) as client:
        response = client.post(f"/warehouse/{warehouse_id}/table/{table_id}/maintenance/run")
        assert response.status_code == 202, response.text
        task_id = response.json()["task-id"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            details = client.get(f"/warehouse/{warehouse_id}/task/by-id/{task_id}", params={"numAttempts": 50})
            assert details.status_code == 200, details.text
            if details.json()["status"] in ("SUCCESS", "FAILED", "CANCELLED"):
                return details.json()
            time.sleep(0.5)
    raise AssertionError(f"maintenance task {task_id} did not finish within {timeout}s")


def stored_objects(seaweed, location: str) -> dict[str, int]:
    """Key -> size of every object under a table location (listed as the admin)."""
    prefix = location.split("://", 1)[1].split("/", 1)[1] + "/"
    pages = seaweed.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {item["Key"]: item["Size"] for page in pages for item in page.get("Contents", [])}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)  # one Spark job; the queue is the same on both
def test_queue_maintains_an_s3_table_with_its_vended_credentials(
    lakekeeper_server, seaweed, make_warehouse, s3_profile, s3_credential
):
    name, warehouse_id = new_warehouse(lakekeeper_server, make_warehouse, s3_profile, s3_credential)
    catalog = s3_catalog(lakekeeper_server, name, "vended-credentials")
    table = small_files_table(catalog, "ns.events", appends=5, two_file_appends=3)
    table_id = str(table.metadata.table_uuid)
    rows_before = sorted_rows(table)
    files_before = {entry["file_path"] for entry in table.inspect.files().to_pylist()}
    assert len(table.metadata.snapshots) == 5 and len(files_before) == 8
    vended = table.io.properties
    bytes_before = sum(stored_objects(seaweed, table.location()).values())
    override = {"rewrite-data-files": {"min-input-files": 2},
                "expire-snapshots": {"older-than": "PT0S", "retain-last": 2}}  # fmt: skip
    url = f"{lakekeeper_server.url}{MGMT}/warehouse/{warehouse_id}/table/{table_id}/maintenance"
    response = httpx.post(url, json=override)
    assert response.status_code == 200, response.text

    details = run_until_finished(lakekeeper_server, warehouse_id, table_id)

    assert details["status"] == "SUCCESS", details["message"]
    figures = details["execution-details"]
    table = catalog.load_table("ns.events")
    files_after = {entry["file_path"] for entry in table.inspect.files().to_pylist()}
    # compacted, expired down to retain-last, the same rows
    assert len(files_after) < 8
    assert len(table.metadata.snapshots) <= 2
    assert sorted_rows(table) == rows_before
    # the files the expired snapshots referenced are gone from the bucket, the new ones are there
    objects = stored_objects(seaweed, table.location())
    assert not {path.split(f"{BUCKET}/", 1)[1] for path in files_before} & objects.keys()
    assert {path.split(f"{BUCKET}/", 1)[1] for path in files_after} <= objects.keys()
    # the task log has the figures of every step, and they match the table
    assert figures["steps"] == ["rewrite-data-files", "rewrite-manifests", "expire-snapshots", "remove-orphan-files"]
    assert figures["snapshots-before"] == 5 and figures["data-files-before"] == 8
    assert figures["data-files-rewritten"] == 8 and figures["data-files-added"] == len(files_after)
    assert figures["data-files-deleted"] == 8
    assert figures["snapshots-after"] == len(table.metadata.snapshots)
    assert figures["orphan-files-removed"] == 0  # S3 objects are younger than the 1-day minimum age
    # bytes under the table location, as s3a listed them with the table's credentials
    assert (figures["bytes-before"], figures["bytes-after"]) == (bytes_before, sum(objects.values()))
    assert figures["bytes-reclaimed"] == bytes_before - sum(objects.values())
    assert "Rewrote 8 data files" in details["message"] and "expired" in details["message"]
    # the vended secret and session token appear in neither the task log nor the server log
    logged = json.dumps(details) + lakekeeper_server.log_path.read_text(errors="replace")
    for secret in (vended["s3.secret-access-key"], vended["s3.session-token"]):
        assert secret not in logged


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_direct_run_maintains_two_s3_tables_each_with_its_own_credentials(
    lakekeeper_server, seaweed, make_warehouse, s3_profile, s3_credential
):
    """``lakekeeper maintain --catalog-uri`` over a whole warehouse, nested namespaces included: each
    table's vended credentials cover that table alone, so each gets its own Spark session (the second
    must not reuse the s3a client of the first, whose credentials SeaweedFS refuses outside the first
    table). Compaction and expiry only: they read, write and delete under each table's credentials."""
    name, _ = new_warehouse(lakekeeper_server, make_warehouse, s3_profile, s3_credential)
    catalog = s3_catalog(lakekeeper_server, name, "vended-credentials")
    catalog.create_namespace("ns")
    rows = {}
    for identifier in ("ns.first", "ns.deep.second"):
        rows[identifier] = sorted_rows(small_files_table(catalog, identifier, appends=4, two_file_appends=2))
    policy = {"expire-snapshots": {"older-than": "PT0S", "retain-last": 1},
              "rewrite-data-files": {"min-input-files": 2},
              "rewrite-manifests": {"enabled": False}, "remove-orphan-files": {"enabled": False}}  # fmt: skip

    result = subprocess.run(
        [sys.executable, "-m", "lakekeeper_host", "maintain", "--catalog-uri", lakekeeper_server.catalog_url,
         "--warehouse", name, "--policy", json.dumps(policy), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = {outcome["table"]: outcome for outcome in json.loads(result.stdout)}
    assert sorted(outcomes) == ["ns.deep.second", "ns.first"]
    for identifier, outcome in outcomes.items():
        table = catalog.load_table(identifier)
        assert outcome["error"] is None
        assert outcome["figures"]["steps"] == ["rewrite-data-files", "expire-snapshots"]
        assert outcome["figures"]["data-files-rewritten"] == 6
        assert len(table.inspect.files()) == outcome["figures"]["data-files-after"] < 6
        assert len(table.metadata.snapshots) == 1
        assert sorted_rows(table) == rows[identifier]


def test_s3_table_without_vended_credentials_fails_in_one_line(
    lakekeeper_server, seaweed, make_warehouse, s3_profile, s3_credential
):
    """STS off: the catalog offers remote signing only, which Spark's s3a cannot use. Every attempt
    fails before Spark starts, with one line that says why, and the table is left as it was."""
    name, warehouse_id = new_warehouse(
        lakekeeper_server, make_warehouse, s3_profile, s3_credential, **{"sts-enabled": False}
    )
    catalog = s3_catalog(lakekeeper_server, name, "remote-signing")
    identifier = f"ns_{uuid.uuid4().hex[:8]}.signed"
    table = small_files_table(catalog, identifier, appends=3, two_file_appends=0)
    table_id = str(table.metadata.table_uuid)

    details = run_until_finished(lakekeeper_server, warehouse_id, table_id, timeout=120)

    assert details["status"] == "FAILED"
    messages = [attempt["message"] for attempt in [details, *details["attempts"]]]
    for message in messages:
        assert "\n" not in message and "Exception in thread" not in message and "at org.apache" not in message
        assert message.startswith(f"MaintenanceJobFailed: cannot maintain {identifier}: the catalog vended no S3 "
                                  f"credentials for {table.location()} (it offers remote signing, which s3a cannot "
                                  "use)")  # fmt: skip
        assert "enable STS" in message
    assert len(catalog.load_table(identifier).metadata.snapshots) == 3
