"""Maintenance runs on Spark through the server's table_maintenance queue.

Each test launches one Spark job: the server runs ``python -m lakekeeper_host.engines.spark_maintenance``
as a subprocess on ``local[*]`` (the default master), which reaches the catalog over REST. A Spark
job costs the same on either backend, so each test runs on one: the issue's acceptance run (50 small
files, 30 snapshots, every procedure, scheduled by the planner) on SQLite, and a run through
``lakekeeper maintain`` on PostgreSQL, which proves the same outcome there on a smaller table
(compacted, expired down to retain-last, the same rows, the figures from the task log). The queue's
bookkeeping without Spark (planning, attempts, retries) runs on both in test_failures.py.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.maintenance.helpers import (
    MGMT,
    data_file_count,
    finished_attempts,
    plant_old_orphan,
    set_warehouse_policy,
    small_files_table,
    sorted_rows,
    table_tasks,
    task_details,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_scheduled_maintenance_compacts_expires_and_logs_the_figures(http, warehouse, catalog):
    """The acceptance run: a table of 50 small files and 30 snapshots keeps at most retain-last
    snapshots, has fewer data files and the same rows, and the task log has the figures.
    (SQLite; on PostgreSQL the same outcome is proven by the next test.)"""
    wid = warehouse["id"]
    table = small_files_table(catalog, "ns.events", snapshots=30, files=50)
    table_id = str(table.metadata.table_uuid)
    rows_before = sorted_rows(table)
    orphan = plant_old_orphan(table)

    policy = {
        "enabled": True,
        "interval": "P1D",
        "rewrite-data-files": {"min-input-files": 2},
        "expire-snapshots": {"older-than": "PT0S", "retain-last": 2},
        "remove-orphan-files": {"older-than": "P1D"},
    }
    assert set_warehouse_policy(http, wid, policy).status_code == 204
    try:
        # the planner schedules the table, the worker runs the Spark job, the task is rescheduled
        task_id = wait_for(lambda: [t["task-id"] for t in table_tasks(http, wid, table_id)], what="a table task")[0]
        details = wait_for(
            lambda: (d := task_details(http, wid, task_id))["attempts"] and d, what="the maintenance run to finish"
        )
    finally:  # no further periodic runs of this warehouse
        set_warehouse_policy(http, wid, {**policy, "enabled": False})

    (run,) = finished_attempts(details)
    assert run["status"] == "SUCCESS", run["message"]
    figures = run["execution-details"]
    table = catalog.load_table("ns.events")
    # at most retain-last snapshots, fewer files, the same rows
    assert len(table.metadata.snapshots) <= 2
    assert data_file_count(table) < 50
    assert sorted_rows(table) == rows_before
    assert not orphan.exists()
    # the figures in the task log match what happened to the table
    assert figures["snapshots-before"] == 30 and figures["data-files-before"] == 50
    assert figures["data-files-rewritten"] == 50 and figures["data-files-added"] == data_file_count(table)
    assert figures["snapshots-after"] == len(table.metadata.snapshots)
    assert figures["snapshots-expired"] == 30 + 2 - figures["snapshots-after"]  # + compaction + manifest rewrite
    assert figures["data-files-deleted"] == 50
    assert figures["orphan-files-removed"] == 1
    assert figures["bytes-reclaimed"] > 0 and figures["bytes-after"] < figures["bytes-before"]
    assert "expired" in run["message"] and "reclaimed" in run["message"]
    # the table task stays, scheduled for the next interval
    assert details["status"] == "SCHEDULED"
    assert details["scheduled-for"] > time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() + 23 * 3600))
    # disabling the policy (above) cancelled that periodic run, and planning stopped: nothing is left active
    cancelled = wait_for(lambda: (d := task_details(http, wid, task_id))["status"] == "CANCELLED" and d,
                         timeout=60, what="the periodic run to be cancelled")  # fmt: skip
    assert cancelled["message"] == "Maintenance disabled by policy"
    active = http.post(f"{MGMT}/warehouse/{wid}/task/list", json={"status": ["SCHEDULED", "RUNNING"]}).json()
    assert active["tasks"] == []


@pytest.mark.parametrize("lakekeeper_server", ["postgres"], indirect=True)
def test_cli_maintains_a_table_through_the_server_with_its_override(http, server, warehouse, catalog):
    """Maintenance is disabled for the warehouse; ``lakekeeper maintain`` runs it anyway, now, with
    the table's override (keep 3 snapshots; compaction and expiry only), and prints the figures
    from the task log. (PostgreSQL: the acceptance run above is on SQLite.)"""
    wid = warehouse["id"]
    table = small_files_table(catalog, "sales.orders", snapshots=7, files=12)
    table_id = str(table.metadata.table_uuid)
    rows_before = sorted_rows(table)
    override = {"expire-snapshots": {"older-than": "PT0S", "retain-last": 3}, "rewrite-manifests": {"enabled": False},
                "remove-orphan-files": {"enabled": False}}  # fmt: skip
    assert http.post(f"{MGMT}/warehouse/{wid}/table/{table_id}/maintenance", json=override).status_code == 200

    result = subprocess.run(
        [sys.executable, "-m", "lakekeeper_host", "maintain", "--server", server.url,
         "--warehouse", warehouse["name"], "--table", "sales.orders", "--timeout", "300"],
        capture_output=True, text=True, timeout=360,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sales.orders: Rewrote 12 data files into 2")
    printed = dict(line.strip().split(": ", 1) for line in lines[1:])
    table = catalog.load_table("sales.orders")
    assert len(table.metadata.snapshots) == 3 == int(printed["snapshots-after"])
    assert int(printed["snapshots-expired"]) == 7 + 1 - 3
    assert printed["steps"] == "['rewrite-data-files', 'expire-snapshots']"  # the rest disabled by the override
    assert data_file_count(table) == int(printed["data-files-after"]) < 12
    assert sorted_rows(table) == rows_before
    # a manual run of a table whose policy is disabled is not rescheduled
    (task,) = table_tasks(http, wid, table_id)
    assert task["status"] == "SUCCESS"
