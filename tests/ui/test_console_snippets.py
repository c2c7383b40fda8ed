"""Every snippet of the console's "connect compute" panel runs as copied, on this machine, offline:
PyIceberg, PySpark (in the suite's one Spark session) and DuckDB SQL (in a DuckDB with an empty
extension folder, after the one command the snippet says to run first), on SQLite and PostgreSQL."""

from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
import sys
import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.server import create_file_warehouse

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.duckdb]


@pytest.fixture(scope="module")
def snippets(backend_server, tmp_path_factory) -> dict:
    """A warehouse with ``sales.orders`` (3 rows) and the snippets its console page shows."""
    name = f"snip_{uuid.uuid4().hex[:6]}"
    warehouse_id = create_file_warehouse(backend_server.url, name, str(tmp_path_factory.mktemp(name)))
    catalog = RestCatalog("setup", uri=backend_server.catalog_url, warehouse=name)
    catalog.create_namespace("sales")
    schema = pa.schema([("id", pa.int64())])
    catalog.create_table("sales.orders", schema=schema).append(pa.table({"id": [1, 2, 3]}, schema=schema))
    page = httpx.get(f"{backend_server.url}/ui/warehouses/{warehouse_id}", timeout=60).text
    found = {client: html.unescape(code) for client, code in
             re.findall(r'<pre class="snippet" id="snippet-(\w+)">(.*?)</pre>', page, re.S)}
    assert set(found) == {"pyiceberg", "spark", "duckdb"}
    return {"warehouse": name, **found}


def test_the_pyiceberg_snippet_reads_the_table(snippets):
    pasted: dict = {}
    exec(snippets["pyiceberg"], pasted)  # noqa: S102 - the console's own snippet, the point of the test
    assert pasted["catalog"].load_table("sales.orders").scan().to_arrow().num_rows == 3


def test_the_spark_snippet_runs_offline(snippets, spark):
    code = snippets["spark"]
    assert code.startswith("# ") and "scripts/build-spark-jars.sh" in code.splitlines()[1]  # said first
    # the suite's one JVM is reused by the snippet's getOrCreate; forget catalogs of earlier servers
    spark._jsparkSession.sessionState().catalogManager().reset()
    default_catalog = spark.conf.get("spark.sql.defaultCatalog")
    pasted: dict = {}
    try:
        exec(code, pasted)  # noqa: S102
        assert pasted["spark"].table("lakekeeper.sales.orders").count() == 3
    finally:  # the snippet's getOrCreate made its catalog the default of the run's one session
        spark.conf.set("spark.sql.defaultCatalog", default_catalog)
        spark._jsparkSession.sessionState().catalogManager().reset()


def test_the_duckdb_snippet_installs_and_loads_iceberg_offline(snippets, tmp_path):
    sql = snippets["duckdb"]
    assert "INSTALL iceberg; LOAD iceberg;" in sql
    setup = re.search(r"first run: (python -m lakekeeper_host\.engines\.duckdb_util [-\w ]+)", sql).group(1)
    home = {**os.environ, "HOME": str(tmp_path)}  # a DuckDB that has never installed an extension
    argv = shlex.split(setup)
    installed = subprocess.run([sys.executable, *argv[1:]], env=home, capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    script = ("import duckdb, sys\n"
              "con = duckdb.connect()\n"
              "con.execute(sys.argv[1])\n"
              "print(con.sql('SELECT count(*) FROM lakekeeper.sales.orders').fetchone()[0])\n")
    pasted = subprocess.run([sys.executable, "-c", script, sql], env=home, capture_output=True, text=True, timeout=180)
    assert pasted.returncode == 0, pasted.stderr
    assert pasted.stdout.strip() == "3"
