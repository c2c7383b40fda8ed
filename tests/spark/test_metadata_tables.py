"""Spark's Iceberg metadata tables over a table whose history was committed through our catalog.

Each metadata table is checked against what was written and against the catalog's own view
of the table (PyIceberg loading the same metadata), so a lost or reordered commit shows up.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.spark


def test_metadata_tables(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    t = f"{c}.db.logs"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {t} (id INT, level STRING) USING iceberg PARTITIONED BY (level) "
        "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'copy-on-write')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'info'), (2, 'warn')")  # two files (two partitions)
    spark.sql(f"INSERT INTO {t} VALUES (3, 'info')")  # a third file
    spark.sql(f"DELETE FROM {t} WHERE id = 2")  # copy-on-write: the 'warn' file is removed
    table = catalog.load_table(("db", "logs"))
    location = table.location()

    # snapshots: three commits, each the child of the one before
    snapshots = spark.sql(f"SELECT * FROM {t}.snapshots ORDER BY committed_at").collect()
    assert [s.operation for s in snapshots] == ["append", "append", "delete"]
    assert [s.parent_id for s in snapshots] == [None, snapshots[0].snapshot_id, snapshots[1].snapshot_id]
    assert [s.summary["added-records"] for s in snapshots[:2]] == ["2", "1"]
    assert snapshots[2].summary["deleted-records"] == "1" and snapshots[2].summary["total-records"] == "2"
    assert [s.snapshot_id for s in snapshots] == [s.snapshot_id for s in table.snapshots()]

    # history: the same chain, every snapshot an ancestor of the current one
    history = spark.sql(f"SELECT * FROM {t}.history ORDER BY made_current_at").collect()
    assert [(h.snapshot_id, h.parent_id) for h in history] == [(s.snapshot_id, s.parent_id) for s in snapshots]
    assert all(h.is_current_ancestor for h in history)

    # files: the live data files with their partitions and counts
    files = spark.sql(f"SELECT * FROM {t}.files").collect()
    assert sorted((f.partition.level, f.record_count) for f in files) == [("info", 1), ("info", 1)]
    assert all(f.content == 0 and f.file_format == "PARQUET" for f in files)
    assert all(urlparse(f.file_path).path.startswith(urlparse(location).path + "/data/") for f in files)
    assert {f.file_path for f in files} == {task.file.file_path for task in table.scan().plan_files()}

    # all_data_files: every data file any snapshot references, including the deleted 'warn' one
    all_files = spark.sql(f"SELECT DISTINCT file_path, partition.level AS level FROM {t}.all_data_files").collect()
    assert sorted(f.level for f in all_files) == ["info", "info", "warn"]
    assert {f.file_path for f in files} < {f.file_path for f in all_files}

    # manifests of the current snapshot: the live files are all counted once
    manifests = spark.sql(f"SELECT * FROM {t}.manifests").collect()
    assert all(m.partition_spec_id == 0 for m in manifests)
    live = sum(m.added_data_files_count + m.existing_data_files_count for m in manifests)
    assert live == len(files) == 2
    assert sum(m.deleted_data_files_count for m in manifests) == 1

    # metadata_log_entries: one entry per metadata file the catalog wrote, the last one current
    log = spark.sql(f"SELECT * FROM {t}.metadata_log_entries ORDER BY timestamp").collect()
    assert len(log) == 4  # create + three commits
    assert log[-1].file == table.metadata_location
    assert [e.file for e in log[:-1]] == [e.metadata_file for e in table.metadata.metadata_log]
    assert [e.latest_snapshot_id for e in log] == [None, *(s.snapshot_id for s in snapshots)]
    assert [e.latest_sequence_number for e in log][1:] == [1, 2, 3]

    # the catalog returns the same snapshot Spark just read
    assert rows(f"SELECT snapshot_id FROM {t}.snapshots WHERE snapshot_id = {table.metadata.current_snapshot_id}") == [
        (table.metadata.current_snapshot_id,)
    ]
    assert rows(f"SELECT * FROM {t}") == [(1, "info"), (3, "info")]
