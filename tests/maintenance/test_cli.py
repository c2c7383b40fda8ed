"""``lakekeeper maintain``: direct Spark runs on a standalone cluster, and one-line errors.

(Through the server, the command is exercised in test_maintenance_run.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_host.testing.server import create_file_warehouse, free_port
from tests.maintenance.helpers import data_file_count, small_files_table, sorted_rows


def maintain(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lakekeeper_host", "maintain", *args],
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


@pytest.mark.spark
@pytest.mark.slow
def test_maintain_runs_on_a_spark_standalone_cluster(sqlite_server, spark_cluster, tmp_path):
    """Runs against a Spark standalone master + worker started by the test (``spark-class`` from the
    pyspark package, loopback ports); the CLI process is the driver, the worker runs the executor.
    Every table of the warehouse is maintained, nested namespaces included."""
    name = f"wh-{uuid.uuid4().hex[:8]}"
    create_file_warehouse(sqlite_server.url, name, str(tmp_path / name))
    catalog = RestCatalog("test", uri=sqlite_server.catalog_url, warehouse=name)
    catalog.create_namespace("ns")
    flat = small_files_table(catalog, "ns.flat", snapshots=10, files=16)
    nested = small_files_table(catalog, "ns.deep.nested", snapshots=6, files=10)
    rows = {"ns.flat": sorted_rows(flat), "ns.deep.nested": sorted_rows(nested)}

    result = maintain(
        "--catalog-uri", sqlite_server.catalog_url, "--warehouse", name, "--master", spark_cluster.master_url,
        "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
        "--policy", json.dumps({"expire-snapshots": {"older-than": "PT0S", "retain-last": 1},
                                "rewrite-data-files": {"min-input-files": 2}}), "--json",
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = {outcome["table"]: outcome for outcome in json.loads(result.stdout)}
    assert sorted(outcomes) == ["ns.deep.nested", "ns.flat"]
    for table_name, files_before in (("ns.flat", 16), ("ns.deep.nested", 10)):
        figures = outcomes[table_name]["figures"]
        table = catalog.load_table(table_name)
        assert len(table.metadata.snapshots) == 1 == figures["snapshots-after"]
        assert data_file_count(table) == figures["data-files-after"] < files_before
        assert figures["data-files-rewritten"] == files_before
        assert sorted_rows(table) == rows[table_name]
    # the executors ran on the cluster's worker, not in the driver
    assert "Asked to launch executor app-" in spark_cluster.worker_log.read_text(errors="replace")


def test_unknown_warehouse_is_one_line_and_exit_code_1(server):
    result = maintain("--server", server.url, "--warehouse", "no-such-warehouse")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("lakekeeper: error: warehouse 'no-such-warehouse' not found")


def test_unknown_table_is_one_line_and_exit_code_1(server, warehouse):
    result = maintain("--server", server.url, "--warehouse", warehouse["name"], "--table", "ns.missing")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "404" in result.stderr


def test_unreachable_server_or_catalog_is_one_line(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    through_server = maintain("--server", dead, "--warehouse", "demo")
    assert through_server.returncode == 1
    assert through_server.stderr.strip().startswith(f"lakekeeper: error: server at {dead} unreachable")
    direct = maintain("--catalog-uri", dead + "/catalog", "--warehouse", "demo")
    assert direct.returncode == 1
    assert direct.stderr.strip().startswith(f"lakekeeper: error: catalog unreachable at {dead}/catalog")
    assert len(direct.stderr.strip().splitlines()) == 1


def test_policy_options_are_refused_through_the_server(server):
    result = maintain("--server", server.url, "--warehouse", "x", "--policy", "{}")
    assert result.returncode == 1
    assert "--policy, --conf and --master apply with --catalog-uri" in result.stderr


def test_invalid_direct_policy_names_the_field():
    result = maintain("--catalog-uri", "http://127.0.0.1:1/catalog", "--warehouse", "w",
                      "--policy", '{"expire-snapshots": {"retain-last": 0}}')  # fmt: skip
    assert result.returncode == 1
    assert "expire-snapshots.retain-last" in result.stderr and len(result.stderr.strip().splitlines()) == 1
