"""Helpers of the table-maintenance tests: a table of many small files, task polling."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_testing.server import create_file_warehouse

MGMT = "/management/v1"
QUEUE = "table_maintenance"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))


def wait_for(predicate: Callable[[], Any], timeout: float = 240, interval: float = 0.5, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def small_files_table(catalog, identifier: str, *, snapshots: int = 30, files: int = 50, properties=None):
    """A table partitioned by ``category`` whose every append is a snapshot of one or two small files.

    The first ``files - snapshots`` appends write both partitions (two files), the rest one.
    """
    namespace = identifier.rsplit(".", 1)[0]
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(identifier, SCHEMA, partition_spec=SPEC, properties=properties or {})
    two_file_appends = files - snapshots
    for index in range(snapshots):
        categories = ["a", "b"] if index < two_file_appends else ["a"]
        rows = [
            {"id": index * 10 + j, "category": categories[j % len(categories)], "payload": f"row {index}/{j}"}
            for j in range(4)
        ]
        table.append(pa.Table.from_pylist(rows, schema=SCHEMA.as_arrow()))
    table = catalog.load_table(identifier)
    assert len(table.metadata.snapshots) == snapshots and len(table.inspect.files()) == files
    return table


def sorted_rows(table) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["id"])


def data_file_count(table) -> int:
    return len(table.inspect.files())


def plant_old_orphan(table, days_old: float = 2) -> Path:
    """A stray file in the table's data folder, older than remove-orphan-files' minimum age."""
    data_dir = Path(table.location().removeprefix("file://")) / "data"
    orphan = data_dir / "stray-00000-orphan.parquet"
    orphan.write_bytes(b"not referenced by any snapshot" * 100)
    old = time.time() - days_old * 86400
    os.utime(orphan, (old, old))
    return orphan


def table_tasks(http, warehouse_id: str, table_id: str) -> list[dict[str, Any]]:
    body = {"queue-name": [QUEUE], "entities": [{"type": "table", "table-id": table_id}]}
    response = http.post(f"{MGMT}/warehouse/{warehouse_id}/task/list", json=body)
    assert response.status_code == 200, response.text
    return response.json()["tasks"]


def task_details(http, warehouse_id: str, task_id: str) -> dict[str, Any]:
    response = http.get(f"{MGMT}/warehouse/{warehouse_id}/task/by-id/{task_id}", params={"numAttempts": 50})
    assert response.status_code == 200, response.text
    return response.json()


def finished_attempts(details: dict[str, Any]) -> list[dict[str, Any]]:
    """Every logged attempt, oldest first (a finished task's last attempt is the task itself)."""
    final = details["status"] in ("SUCCESS", "FAILED", "CANCELLED")
    logs = ([details] if final else []) + details["attempts"]
    return sorted(logs, key=lambda attempt: attempt["attempt"])


def set_warehouse_policy(http, warehouse_id: str, policy: dict[str, Any]):
    return http.post(f"{MGMT}/warehouse/{warehouse_id}/task-queue/{QUEUE}/config", json={"queue-config": policy})


def run_now(client: httpx.Client, warehouse_id: str, table_id: str) -> str:
    response = client.post(f"{MGMT}/warehouse/{warehouse_id}/table/{table_id}/maintenance/run")
    assert response.status_code == 202, response.text
    return response.json()["task-id"]


def new_warehouse(server, tmp_path) -> tuple[str, RestCatalog]:
    warehouse_id = create_file_warehouse(server.url, "maintained", str(tmp_path / "warehouse"))
    return warehouse_id, RestCatalog("test", uri=server.catalog_url, warehouse="maintained")
