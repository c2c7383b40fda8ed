"""The server's ``table_maintenance`` queue pointed at an external Spark cluster.

The cluster is a Spark standalone master and one worker started by the test (``spark-class`` from
the pyspark package, loopback ports): the server is configured as an operator would do it
(``LAKEKEEPER__TABLE_MAINTENANCE__SPARK_MASTER`` and ``__SPARK_CONF``), its job process is the
driver, and the worker runs the one executor (1 core, 512 MiB) that does the work.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.maintenance.helpers import (
    MGMT,
    data_file_count,
    new_warehouse,
    run_now,
    small_files_table,
    sorted_rows,
    task_details,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.parametrize("backend", ["sqlite"])  # one Spark job; the queue itself runs on both backends elsewhere
def test_queue_runs_maintenance_on_a_spark_standalone_cluster(make_server, spark_cluster, tmp_path):
    executor = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "1"}
    server = make_server({
        "LAKEKEEPER__TABLE_MAINTENANCE__SPARK_MASTER": spark_cluster.master_url,
        "LAKEKEEPER__TABLE_MAINTENANCE__SPARK_CONF": json.dumps(executor),
    })  # fmt: skip
    warehouse_id, catalog = new_warehouse(server, tmp_path)
    table = small_files_table(catalog, "ns.events", snapshots=4, files=6)
    table_id = str(table.metadata.table_uuid)
    rows = sorted_rows(table)
    # compaction and expiry only: the two procedures that run Spark jobs on the table's data files
    override = {"rewrite-data-files": {"min-input-files": 2},
                "expire-snapshots": {"older-than": "PT0S", "retain-last": 1},
                "rewrite-manifests": {"enabled": False}, "remove-orphan-files": {"enabled": False}}  # fmt: skip

    with httpx.Client(base_url=server.url, timeout=30) as client:
        policy = client.post(f"{MGMT}/warehouse/{warehouse_id}/table/{table_id}/maintenance", json=override)
        assert policy.status_code == 200, policy.text
        task_id = run_now(client, warehouse_id, table_id)
        details = wait_for(lambda: (d := task_details(client, warehouse_id, task_id))["status"]
                           in ("SUCCESS", "FAILED") and d, timeout=300, what="the maintenance run")  # fmt: skip

    assert details["status"] == "SUCCESS", details["message"]
    figures = details["execution-details"]
    assert figures["spark-master"] == spark_cluster.master_url
    assert figures["steps"] == ["rewrite-data-files", "expire-snapshots"]
    table = catalog.load_table("ns.events")
    assert figures["data-files-rewritten"] == 6 and figures["data-files-added"] == data_file_count(table) < 6
    assert figures["snapshots-before"] == 4 and figures["snapshots-after"] == len(table.metadata.snapshots) == 1
    assert sorted_rows(table) == rows
    # the master gave the application an executor on the worker, and the executor ran the tasks
    assert "Asked to launch executor app-" in spark_cluster.worker_log.read_text(errors="replace")
    executor_logs = list((spark_cluster.work_dir / "work").glob("app-*/*/stderr"))
    assert len(executor_logs) == 1
    assert "Finished task" in executor_logs[0].read_text(errors="replace")
