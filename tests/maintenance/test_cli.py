"""``lakekeeper maintain``: what a direct run maintains, and one-line errors.

(Through the server, the command is exercised in test_maintenance_run.py; a direct run on Spark in
plugins/storage-s3/tests/test_maintenance_s3.py, over a whole S3 warehouse with a nested namespace.)"""

from __future__ import annotations

import subprocess
import sys

from lakekeeper_host.engines.spark_maintenance import CatalogAccess, list_tables
from lakekeeper_testing.services import free_port
from tests.maintenance.helpers import SCHEMA


def maintain(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lakekeeper_host", "maintain", *args],
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def test_a_direct_run_without_tables_takes_every_table_of_the_warehouse_at_any_depth(server, warehouse, catalog):
    """``maintain --catalog-uri`` without ``--table``: the tables the job lists through the catalog
    (no Spark needed to see which), at every depth."""
    for namespace in ("ns", "ns.deep", "ns.deep.deeper", "empty", "other"):
        catalog.create_namespace(namespace)
    for identifier in ("ns.flat", "ns.deep.nested", "ns.deep.deeper.deepest", "other.t"):
        catalog.create_table(identifier, SCHEMA)

    listed = list_tables(CatalogAccess(uri=server.catalog_url, warehouse=warehouse["name"]))

    assert listed == [("ns", "deep", "deeper", "deepest"), ("ns", "deep", "nested"), ("ns", "flat"), ("other", "t")]


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
