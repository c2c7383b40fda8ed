"""Maintenance deletes only inside the table (issue 30): ``expire_snapshots`` deletes the files of the
snapshots it expires, wherever the manifests say they are, and on ``file`` storage the Spark job runs
with the server's rights. A client who adds a file outside the table location to their table (an
``add_files`` of any path) and then replaces it must not get it deleted by a maintenance run.
(SQLite; the job is a client of the catalog, the backend does not change what Spark deletes.)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakekeeper_host.engines.spark_maintenance import MaintenanceError, maintain_table, parse_policy

pytestmark = [pytest.mark.spark, pytest.mark.slow]

POLICY = parse_policy({"expire-snapshots": {"older-than": "PT0S", "retain-last": 1},
                       "rewrite-data-files": {"enabled": False}, "rewrite-manifests": {"enabled": False},
                       "remove-orphan-files": {"enabled": False}})  # fmt: skip


@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_expiring_snapshots_never_deletes_files_outside_the_table(spark, spark_catalog, catalog, tmp_path):
    victim = tmp_path / "outside-every-table" / "precious.parquet"
    victim.parent.mkdir()
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    pq.write_table(rows, victim)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", rows.schema)
    table.add_files([f"file://{victim}"])  # the table now references a file it does not own
    table.overwrite(pa.table({"id": pa.array([3], pa.int64())}))  # ... and then no longer does
    snapshots = len(catalog.load_table("ns.t").metadata.snapshots)

    try:
        maintain_table(spark, ("ns", "t"), POLICY, catalog_name=spark_catalog)
        refusal = None
    except MaintenanceError as exc:
        refusal = str(exc)
    assert victim.exists(), "maintenance deleted a file outside the table location"
    assert refusal is not None and "outside the table location" in refusal and str(victim) in refusal, refusal
    assert len(catalog.load_table("ns.t").metadata.snapshots) == snapshots  # nothing was expired


@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_a_table_of_its_own_files_is_still_expired(spark, spark_catalog, catalog):
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    first_files = [Path(f.removeprefix("file://")) for f in table.inspect.files()["file_path"].to_pylist()]
    table.overwrite(pa.table({"id": pa.array([2], pa.int64())}))
    figures = maintain_table(spark, ("ns", "t"), POLICY, catalog_name=spark_catalog)
    assert figures["snapshots-after"] == 1 and figures["data-files-deleted"] >= 1
    assert not any(path.exists() for path in first_files)
